"""FX and ATen op names, in one place: the two spellings of a target, an op's short name, and the sets of ops that
only move or re-index data (each stage's set is built from the same parts, so they cannot drift apart)."""

from __future__ import annotations

# Ops that return a view of their input's storage, re-indexed.
VIEW_OPS = frozenset({"view", "reshape", "_unsafe_view", "permute", "expand", "squeeze", "unsqueeze", "t", "transpose", "alias"})
# Views that also cut the storage down.
SLICE_OPS = frozenset({"slice", "select", "as_strided"})
# What diff does not count as "fused with": fusing these is free.
FREE_TO_FUSE = VIEW_OPS | SLICE_OPS | {"clone", "getitem"}
# What the reference passes a binding through: the node holds its input's values (a cast keeps them too).
SAME_VALUES = VIEW_OPS | {"clone", "convert_element_type"}
# What never names a kernel: moving, copying, splitting and making constant tensors.
NOT_NAMING = VIEW_OPS | SLICE_OPS | frozenset(
    {"clone", "copy", "copy_", "detach", "lift_fresh", "unbind", "split", "split_with_sizes", "getitem", "full",
     "scalar_tensor", "empty", "zeros", "ones"}
)  # fmt: skip

# FX targets that are bookkeeping, not ATen ops (listed as FX nodes, not counted as ops).
_NOT_OPS = frozenset({"operator.getitem", "getitem"})
_OP_NAMESPACES = frozenset({"aten", "prims", "quantized", "_quantized", "inductor", "higher_order", "triton", "_c10d_functional", "c10d", "_c10d_functional_autograd"})


def aten_target(target: str) -> str:
    """The short spelling, as the manifest and report show it: `torch.ops.aten.pow.Tensor_Scalar` ->
    `aten.pow.Tensor_Scalar`; `extern_kernels.mm` stays as it is."""
    target = target.strip()
    for prefix in ("torch.ops.", "torch._ops.ops."):
        if target.startswith(prefix):
            return target[len(prefix) :]
    return target


COLLECTIVE_NAMESPACES = ("_c10d_functional.", "c10d.", "_c10d_functional_autograd.")


def is_collective(target: str) -> bool:
    """A torch.distributed collective (all_reduce_, all_gather_into_tensor, wait_tensor...) as the graph calls it."""
    return aten_target(target).startswith(COLLECTIVE_NAMESPACES)


def torch_ops_target(target: str) -> str:
    """The long spelling, the one eager code calls: `aten.pow.Tensor_Scalar` -> `torch.ops.aten.pow.Tensor_Scalar`;
    `getitem` -> `operator.getitem`."""
    target = target.strip()
    if target.startswith(("aten.", "prims.")):
        return "torch.ops." + target
    if target in ("getitem", "_operator.getitem"):
        return "operator.getitem"
    if target in ("_c10d_functional.wait_tensor.default", "torch.ops._c10d_functional.wait_tensor.default"):
        # It waits for a collective and returns that collective's tensor; in a kernel's reference the collective's
        # result is already there (an input of the kernel), so its value is the tensor itself.
        return "torch.ops.aten.alias.default"
    return target


def op_short_name(target: str) -> str:
    """The op a reader knows: `aten.pow.Tensor_Scalar` -> `pow`, `extern_kernels.addmm` -> `addmm`."""
    parts = aten_target(target).split(".")
    if len(parts) >= 2 and parts[0] in _OP_NAMESPACES:
        return parts[1]
    return parts[-1]


def is_op_target(target: str) -> bool:
    """True for targets counted as ops (ATen/prims/...), False for bookkeeping such as operator.getitem."""
    target = aten_target(target)
    return bool(target) and target not in _NOT_OPS

# Ops whose value is their first argument updated in place: the buffer made for them first holds that argument
# (one kernel copies it in), then another kernel scatters into it.
UPDATES_FIRST_ARG = {"index_put", "index_put_", "scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce",
                      "scatter_reduce_", "index_add", "index_add_", "index_copy", "index_copy_", "index_fill",
                      "index_fill_", "masked_scatter", "masked_scatter_", "_unsafe_index_put", "select_scatter",
                      "slice_scatter", "diagonal_scatter", "as_strided_scatter",
                      "_unsafe_masked_index_put_accumulate", "index_reduce", "index_reduce_"}
