"""What parse looks for: the wrapper's statements as libcst matchers, kernel kinds, and the regular expressions for
the comment block Inductor writes above each kernel."""

from __future__ import annotations

import re

import libcst.matchers as m

from harvest.model import (
    KernelKind,
)

KERNEL_DEF = m.Assign(
    targets=[m.AssignTarget(m.Name())],
    value=m.Call(func=m.Attribute(value=m.Name("async_compile"), attr=m.Name("triton"))),
)
ARGS_UNPACK = m.Assign(targets=[m.AssignTarget(m.Tuple() | m.List())], value=m.Name("args"))
ARGS_CLEAR = m.Call(func=m.Attribute(value=m.Name("args"), attr=m.Name("clear")))
ASSERT_SIZE_STRIDE = m.Call(func=m.Name("assert_size_stride"))
# torch 2.14: one call for several inputs, assert_size_stride_grouped((a, b), (shape_a, shape_b), (stride_a, stride_b), 'input')
ASSERT_SIZE_STRIDE_GROUPED = m.Call(func=m.Name("assert_size_stride_grouped"))
HOUSEKEEPING_CALL = m.Call(
    func=m.Name("assert_alignment")
    | m.Attribute(attr=m.Name("set_device"))
    | m.Attribute(attr=m.Name("synchronize"))
    | m.Name("run_intermediate_hooks")
)
STREAM = m.Call(func=m.Name("get_raw_stream"))
ALLOCATION = m.Call(func=m.Name(value=m.MatchRegex(r"empty_strided(_\w+)?")))
REINTERPRET = m.Call(func=m.Name("reinterpret_tensor"), args=[m.Arg(m.Name()), m.ZeroOrMore()])
# `arg3_1.item()`: one value of a tensor, passed to a kernel as a scalar
ITEM_OF_NAME = m.Call(func=m.Attribute(value=m.Name(), attr=m.Name("item")), args=[])
LAUNCH = m.Call(func=m.Attribute(value=m.Name(), attr=m.Name("run")))
PARTITION_CALL = m.Call(
    func=m.Subscript(value=m.Name("partitions") | m.Attribute(value=m.Name("self"), attr=m.Name("partitions")))
    | m.Name(value=m.MatchRegex(r"partition_\d+"))
)
PARTITION_ARGS = m.Assign(targets=[m.AssignTarget(m.Name(value=m.MatchRegex(r"partition\d+_args")))])
HEURISTIC = m.Call(func=m.Attribute(value=m.Name("triton_heuristics")))
KEYWORD_RECORD = m.Name("DeviceProperties") | m.Name("AttrsDescriptor") | m.Name("instance_descriptor")
# How Inductor's wrapper defines kernels, by backend: any other `name = async_compile.<x>(` is a format harvest does not know.
KNOWN_COMPILERS = {"triton", "cpp", "cpp_pybinding", "cuda", "rocm", "halide", "mps"}
UNKNOWN_COMPILER_RE = re.compile(r"^\w+ = async_compile\.(\w+)\(", re.M)
EXTERN_ROOTS = ("extern_kernels", "aten", "prims", "inductor_ops", "_quantized", "torch.ops")

# -- kernel kinds ----------------------------------------------------------------------------------------------------

KIND_BY_HEURISTIC: dict[str, KernelKind] = {
    "pointwise": "pointwise",
    "reduction": "reduction",
    "persistent_reduction": "persistent_reduction",
    "cooperative_reduction": "cooperative_reduction",
    "template": "template",
    "foreach": "foreach",
    "split_scan": "split_scan",
    "user_autotune": "user",
}
KIND_BY_PREFIX: dict[str, KernelKind] = {
    "triton_poi": "pointwise",
    "triton_red": "reduction",
    "triton_per": "persistent_reduction",
    "triton_tem": "template",
    "triton_for": "foreach",
    "triton_spl": "split_scan",
}
SIZE_HINT_PREFIXES = "zyx"

# -- tensor meta in comments -----------------------------------------------------------------------------------------

META_RE = re.compile(r"^(?P<dtype>\w+)\[(?P<shape>[^\]]*)\]\[(?P<stride>[^\]]*)\](?P<device>.*)$")
SOURCE_NODES_RE = re.compile(r"Source Nodes: \[(?P<nodes>.*?)\], Original ATen: \[(?P<aten>.*?)\]")
FX_NODE_RE = re.compile(
    r"^%(?P<name>[\w.]+) : (?P<type>.*?)(?:\[num_users=(?P<users>\d+)\])? = "
    r"(?P<op>\w+)\[target=(?P<target>[^\]]*)\](?:\(args = \((?P<args>.*)\), kwargs = \{(?P<kwargs>.*)\}\))?$"
)
TENSOR_TYPE_RE = re.compile(r'Tensor "(?P<meta>[^"]*)"')
AOT_ID_RE = re.compile(r"^#\s*AOT ID:\s*(?P<ids>\[.*\])")
