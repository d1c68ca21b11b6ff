"""parse_output_code over every recorded fixture, older wrapper formats, and corrupt input."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from pathlib import Path

import pytest
from conftest import CPU_FIXTURES, CUDA_FIXTURES, FIXTURES, ROOT
from hypothesis import given
from hypothesis import strategies as st

from harvest.errors import ParseError
from harvest.model import FxExpr, FxList, FxRef, Graph, LaunchArg, LaunchView, TensorMeta
from harvest.module.arguments import Layout, tensor_layout
from harvest.parse import parse_output_code, parse_tensor_meta

CAPTURES = sorted(FIXTURES.glob("*/*/graph_*.py"))  # every captured wrapper module
CUDA = CUDA_FIXTURES
CPU = CPU_FIXTURES

SMALL_FORWARD = [
    "triton_per_fused_native_layer_norm_0",
    "triton_poi_fused_gelu_view_1",
    "triton_per_fused__softmax_amax_mul_sub_2",
    "triton_poi_fused_add_3",
]
# (device, example, graph) -> kernel names in definition order
EXPECTED_KERNELS = {
    ("cuda", "square_compile", "graph_000"): ["triton_poi_fused_pow_0"],
    ("cuda", "square_square", "graph_000"): ["triton_poi_fused_pow_0"],
    ("cuda", "pytorch_square", "graph_000"): ["triton_poi_fused_pow_0"],
    ("cuda", "pytorch_square", "graph_001"): ["triton_poi_fused_mul_0"],
    ("cuda", "pytorch_square", "graph_002"): ["triton_poi_fused_pow_0"],
    ("cuda", "dynamic_shapes", "graph_000"): [
        "triton_red_fused__softmax_add_amax_ge_mul_neg_relu_scalar_tensor_sub_where_0"
    ],
    ("cuda", "small_model", "graph_000"): SMALL_FORWARD,
    ("cuda", "small_model", "graph_001"): [
        "triton_per_fused__softmax_backward_data_mul_0",
        "triton_poi_fused_add_1",
        "triton_red_fused_add_sum_view_2",
        "triton_per_fused_add_sum_view_3",
        "triton_poi_fused_gelu_gelu_backward_view_4",
        "triton_red_fused_gelu_gelu_backward_sum_view_5",
        "triton_per_fused_gelu_gelu_backward_sum_view_6",
        "triton_red_fused_add_native_layer_norm_native_layer_norm_backward_transpose_view_7",
        "triton_red_fused_native_layer_norm_native_layer_norm_backward_view_8",
    ],
    ("cpu", "square_compile", "graph_000"): ["triton_poi_fused_pow_0"],
    ("cpu", "square_square", "graph_000"): ["triton_poi_fused_pow_0"],
    ("cpu", "pytorch_square", "graph_000"): ["triton_poi_fused_pow_0"],
    ("cpu", "pytorch_square", "graph_001"): ["triton_poi_fused_mul_0"],
    ("cpu", "pytorch_square", "graph_002"): ["triton_poi_fused_pow_0"],
    ("cpu", "dynamic_shapes", "graph_000"): [
        "triton_red_fused__softmax_abs_add_all_amax_eq_ge_mul_ne_neg_relu_scalar_tensor_sub_where_0"
    ],
    ("cpu", "small_model", "graph_000"): [
        "triton_per_fused_native_layer_norm_0",
        "triton_poi_fused_gelu_view_1",
        "triton_per_fused__softmax_abs_all_amax_eq_mul_ne_sub_2",
        "triton_poi_fused_add_3",
    ],
    ("cpu", "small_model", "graph_001"): [
        "triton_per_fused__softmax_backward_data_mul_0",
        "triton_poi_fused_add_1",
        "triton_per_fused_add_sum_view_2",
        "triton_poi_fused_gelu_gelu_backward_view_3",
        "triton_per_fused_gelu_gelu_backward_sum_view_4",
        "triton_per_fused_add_native_layer_norm_native_layer_norm_backward_transpose_view_5",
        "triton_per_fused_native_layer_norm_native_layer_norm_backward_view_6",
    ],
}
# (example, graph) -> extern ops in call order (the same on both devices); graphs not listed have none
EXPECTED_EXTERNS = {
    ("small_model", "graph_000"): ["addmm", "addmm", "bmm", "bmm"],
    ("small_model", "graph_001"): ["bmm", "bmm", "bmm", "bmm", "mm", "mm", "mm", "mm"],
}
PREFIX_KIND = {"triton_poi": "pointwise", "triton_red": "reduction", "triton_per": "persistent_reduction"}


@functools.cache
def _device(example_dir: Path) -> str:
    """cuda or cpu, from the capture's own record (a CUDA build of torch without a GPU captures on the CPU path)."""
    for line in (example_dir / "events.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event["event"] == "env":
            return "cuda" if event["mode"] == "cuda" else "cpu"
    raise AssertionError(f"no env event in {example_dir}")


def _key(path: Path) -> tuple[str, str, str]:
    return _device(path.parent), path.parent.name, path.stem


@functools.cache
def _parse(path: Path) -> Graph:
    return parse_output_code(path.read_text(encoding="utf-8"), name=path.stem)


def _fixture_id(path: Path) -> str:
    return "/".join((path.parent.parent.name, path.parent.name, path.stem))


def test_every_fixture_has_an_expectation() -> None:
    assert {_key(p) for p in CAPTURES} == set(EXPECTED_KERNELS)
    assert {p.parent.parent.name for p in CAPTURES} >= {
        "torch-2.11.0+cu130_triton-3.6.0", "torch-2.13.0+cpu_triton-3.9.0", "torch-2.14.1+cu130_triton-3.8.0"
    }


@pytest.fixture(params=CAPTURES, ids=_fixture_id)
def fixture(request: pytest.FixtureRequest) -> tuple[Path, Graph]:
    return request.param, _parse(request.param)


# -- invariants over every fixture -----------------------------------------------------------------------------------


def test_kernels(fixture: tuple[Path, Graph]) -> None:
    path, graph = fixture
    device = _key(path)[0]
    assert [k.name for k in graph.kernels] == EXPECTED_KERNELS[_key(path)]
    for kernel in graph.kernels:
        assert kernel.kind == PREFIX_KIND[kernel.name[:10]] == kernel.heuristic
        assert kernel.standalone_reason is None
        assert kernel.device_str == device
        assert f"def {kernel.name}(" in kernel.source
        compile(kernel.source, kernel.name, "exec")
        assert kernel.params[-1] == "XBLOCK" or kernel.params[-1] == "R0_BLOCK"
        assert kernel.signature["xnumel"] == "i32"
        assert set(kernel.size_hints) <= {"x", "y", "r0_"} and "x" in kernel.size_hints
        assert kernel.inductor_meta["kernel_name"] == kernel.name
        assert kernel.inductor_meta["autotune_hints"] == []
        assert kernel.triton_meta["device"]["type"] == device
        assert kernel.triton_meta["signature"] == kernel.signature and kernel.triton_meta["constants"] == {}
        assert all(re.fullmatch(r"\(\d+,\)", key) for config in kernel.configs for key in config)
        assert kernel.heuristic_args["filename"] == "__file__"


def test_graph_is_json(fixture: tuple[Path, Graph]) -> None:
    _, graph = fixture
    text = json.dumps(dataclasses.asdict(graph))
    for kernel, loaded in zip(graph.kernels, json.loads(text)["kernels"]):
        assert loaded["configs"] == list(kernel.configs) and loaded["inductor_meta"] == kernel.inductor_meta
        assert loaded["triton_meta"]["configs"] == loaded["configs"]


def test_aot_id_matches_events(fixture: tuple[Path, Graph]) -> None:
    path, graph = fixture
    events = [json.loads(line) for line in (path.parent / "events.jsonl").read_text().splitlines() if line.strip()]
    index = int(path.stem.split("_")[1])
    (event,) = [e for e in events if e.get("event") == "graph" and e.get("index") == index]
    assert graph.aot_id == event["aot_id"]


def test_call_is_read_completely(fixture: tuple[Path, Graph]) -> None:
    path, graph = fixture
    assert graph.unparsed == ()
    orders = sorted(x.order for x in (*graph.launches, *graph.externs))
    assert orders == list(range(len(graph.launches) + len(graph.externs)))
    assert {launch.kernel for launch in graph.launches} == {k.name for k in graph.kernels}
    assert {launch.function for launch in graph.launches} == {"Runner.call"}
    expected = EXPECTED_EXTERNS.get(_key(path)[1:], [])
    assert [e.op for e in graph.externs] == [f"extern_kernels.{op}" for op in expected]
    for extern in graph.externs:
        assert extern.out in graph.buffers and extern.args


def test_launches_bind_every_parameter(fixture: tuple[Path, Graph]) -> None:
    _, graph = fixture
    for launch in graph.launches:
        kernel = graph.kernel(launch.kernel)
        runtime = [p for p, t in kernel.signature.items() if t != "constexpr"]
        assert [a.param for a in launch.args] == runtime
        assert launch.grid == ""
        for arg in launch.args:
            param_type = kernel.signature[arg.param]
            if param_type.startswith("*"):
                assert arg.buffer in graph.buffers, arg
                assert graph.buffers[arg.buffer].meta.dtype == "float32"
            elif arg.value is not None:
                assert arg.expr == str(arg.value) and arg.value > 0
            elif param_type == "fp64":
                assert re.fullmatch(r"(\w+)\.item\(\)", arg.expr).group(1) in graph.buffers
            else:
                assert param_type in ("i32", "i64") and arg.expr in graph.symbols, arg


def test_buffers(fixture: tuple[Path, Graph]) -> None:
    path, graph = fixture
    device = _key(path)[0]
    for index, name in enumerate(graph.inputs):
        if name in graph.buffers:
            assert graph.buffers[name].origin == "input" and graph.buffers[name].input_index == index
        else:
            assert isinstance(graph.scalar_values[name], int)
    for buffer in graph.buffers.values():
        assert buffer.meta.dtype in ("float32", "float64")
        assert len(buffer.meta.shape) == len(buffer.meta.stride)
        if buffer.origin != "input":
            assert buffer.meta.device == device
        if buffer.origin == "view":
            assert buffer.base in graph.buffers and buffer.offset == 0
    assert graph.outputs and all(name in graph.buffers for name in graph.outputs)


def test_comments(fixture: tuple[Path, Graph]) -> None:
    path, graph = fixture
    device = _key(path)[0]
    for kernel in graph.kernels:
        comment = kernel.comment
        assert comment.aten_ops and all(op.startswith("aten.") for op in comment.aten_ops)
        assert comment.source_nodes
        assert {node for node, _ in comment.node_to_aten} <= set(comment.source_nodes)
        ops = [node for node in comment.fragment if node.op == "call_function"]
        assert ops and all(re.fullmatch(r"(aten|prims)\.\w+\.\w+|operator\.getitem", node.target) for node in ops)
        placeholders = [node for node in comment.fragment if node.op == "placeholder"]
        assert placeholders and all(node.meta is not None and node.name == node.target for node in placeholders)
        assert any(node.meta.device == device for node in placeholders)
        mapped = {name for _, names in comment.node_to_aten for name in names}
        assert mapped <= {node.name for node in ops}
        assert comment.fragment_return


# -- specific graphs -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("root", "size", "numel"), [(CUDA, 10000, 100_000_000), (CPU, 1000, 1_000_000)])
def test_square_square(root: Path, size: int, numel: int) -> None:
    graph = _parse(root / "square_square/graph_000.py")
    device = "cuda" if root == CUDA else "cpu"
    assert graph.inputs == ("arg0_1",) and graph.outputs == ("buf0",)
    assert graph.buffers["arg0_1"].meta == TensorMeta((size, size), (size, 1), "float32", device)
    assert graph.buffers["buf0"].origin == "empty"
    (launch,) = graph.launches
    assert [(a.param, a.buffer, a.value) for a in launch.args] == [
        ("in_ptr0", "arg0_1", None),
        ("out_ptr0", "buf0", None),
        ("xnumel", None, numel),
    ]
    comment = graph.kernels[0].comment
    assert comment.source_nodes == ("square", "square_1") and comment.aten_ops == ("aten.pow",)
    assert comment.node_to_aten == (("square", ("pow_1",)), ("square_1", ("pow_2",)))
    placeholder, pow_1, pow_2 = comment.fragment
    assert (placeholder.op, placeholder.target) == ("placeholder", "arg0_1")
    assert placeholder.meta == graph.buffers["arg0_1"].meta
    assert (pow_1.name, pow_1.target, pow_1.args, pow_1.kwargs, pow_1.num_users) == (
        "pow_1", "aten.pow.Tensor_Scalar", (FxRef("arg0_1"), FxExpr(("2",))), (), 1
    )  # fmt: skip
    assert pow_2.args == (FxRef("pow_1"), FxExpr(("2",))) and pow_2.meta.shape == (size, size)
    assert pow_2.refs == ("pow_1",) and not pow_2.args_error
    assert comment.fragment_return == ("pow_2",)


def test_layer_norm_launch_cuda_forward() -> None:
    graph = _parse(CUDA / "small_model/graph_000.py")
    assert graph.aot_id == "0_forward" and len(graph.inputs) == 7
    kernel = graph.kernel("triton_per_fused_native_layer_norm_0")
    assert kernel.size_hints == {"x": 2048, "r0_": 512}
    assert kernel.heuristic_args["reduction_hint"] == "ReductionHint.INNER"
    assert kernel.triton_meta["device"]["cc"] == 90 and kernel.triton_meta["device"]["multi_processor_count"] == 132
    assert kernel.triton_meta["enable_fp_fusion"] is True
    (launch,) = graph.launches_of(kernel.name)
    assert launch.order == 0
    assert [(a.param, a.buffer or a.value) for a in launch.args] == [
        ("in_out_ptr0", "buf3"),
        ("in_ptr0", "primals_3"),
        ("in_ptr1", "primals_1"),
        ("in_ptr2", "primals_2"),
        ("out_ptr0", "buf0"),
        ("out_ptr1", "buf4"),
        ("xnumel", 2048),
        ("r0_numel", 512),
    ]
    buf3, buf1 = graph.buffers["buf3"], graph.buffers["buf1"]
    assert (buf3.origin, buf3.base, buf3.offset) == ("view", "buf1", 0)
    assert buf3.meta == TensorMeta((8, 256, 1), (256, 1, 1), "float32", "cuda")
    assert buf1.meta == TensorMeta((8, 256, 1), (256, 1, 2048), "float32", "cuda")
    assert graph.buffers["primals_3"].meta == TensorMeta((8, 256, 512), (131072, 512, 1), "float32", "cuda")
    # buf11 = buf8; del buf8  # reuse
    assert graph.buffers["buf11"].meta == graph.buffers["buf8"].meta
    assert (graph.buffers["buf11"].origin, graph.buffers["buf11"].base) == ("view", "buf8")  # data flow follows the reuse
    assert graph.launches_of("triton_per_fused__softmax_amax_mul_sub_2")[0].args[0].buffer == "buf11"
    assert graph.outputs[:3] == ("buf13", "primals_1", "primals_3")
    assert graph.outputs[7] == "buf4"  # reinterpret_tensor(buf4, ...) is returned as its base


def test_layer_norm_launch_cpu_forward() -> None:
    graph = _parse(CPU / "small_model/graph_000.py")
    (launch,) = graph.launches_of("triton_per_fused_native_layer_norm_0")
    assert [a.buffer or a.value for a in launch.args] == [
        "buf1", "buf3", "primals_3", "primals_1", "primals_2", "buf4", 32, 32
    ]  # fmt: skip
    assert [a.param for a in launch.args][:2] == ["in_out_ptr0", "in_out_ptr1"]
    assert graph.buffers["buf1"].meta == TensorMeta((2, 16, 1), (16, 1, 32), "float32", "cpu")  # buf1 = buf0  # reuse
    assert graph.buffers["buf14"].meta.shape == (2, 16, 16)  # buf12 = buf8; buf14 = buf12


@pytest.mark.parametrize("root", [CUDA, CPU], ids=["cuda", "cpu"])
def test_small_model_forward_externs(root: Path) -> None:
    graph = _parse(root / "small_model/graph_000.py")
    addmm, addmm_1, bmm, bmm_1 = graph.externs
    last_out = "buf12" if root == CUDA else "buf15"
    assert [e.out for e in graph.externs] == ["buf5", "buf7", "buf8", last_out]
    assert [e.order for e in graph.externs] == [1, 3, 4, 6]
    assert addmm.args[0] == "primals_5" and addmm.args[1].startswith("reinterpret_tensor(buf4, ")
    assert len(addmm.args) == 3  # alpha/beta/out are keywords
    assert len(bmm.args) == len(bmm_1.args) == 2 and bmm_1.args[0] in ("buf11", "buf14")
    assert all(e.function == "Runner.call" for e in graph.externs)


def test_backward_graph_complete_cuda() -> None:
    graph = _parse(CUDA / "small_model/graph_001.py")
    assert graph.aot_id == "0_backward" and graph.unparsed == ()
    assert len(graph.launches) == 11 and len(graph.externs) == 8
    assert len(graph.launches_of("triton_per_fused_add_sum_view_3")) == 3
    assert all(name in graph.buffers for name in graph.inputs)
    assert graph.buffers["permute_4"].meta == TensorMeta((8, 512, 256), (131072, 1, 512), "float32", "cuda")
    buf8 = graph.buffers["buf8"]  # buf8 = reinterpret_tensor(buf5, ...); del buf5  # reuse
    assert (buf8.origin, buf8.base, buf8.meta.shape) == ("view", "buf5", (512, 2048))
    last = graph.launches[-1]
    assert [a.buffer for a in last.args[:2]] == ["buf20", "buf21"] and last.order == 18
    assert graph.outputs == ("buf19", "buf21", "buf22", "buf13", "buf15", "buf8", "buf10")


@pytest.mark.parametrize("root", [CUDA, CPU], ids=["cuda", "cpu"])
def test_dynamic_shapes(root: Path) -> None:
    graph = _parse(root / "dynamic_shapes/graph_000.py")
    device = "cuda" if root == CUDA else "cpu"
    assert graph.inputs == ("arg0_1", "arg1_1", "arg2_1", "arg3_1")
    assert graph.symbols == ("s77", "s27")
    assert graph.scalar_values == {"arg0_1": 64, "arg1_1": 96, "s77": 64, "s27": 96}
    assert "arg0_1" not in graph.buffers and "arg1_1" not in graph.buffers
    assert graph.buffers["arg2_1"].meta == TensorMeta(("s77", "s27"), ("s27", 1), "float32", device)
    assert graph.buffers["arg2_1"].meta.is_symbolic
    assert graph.buffers["arg3_1"].meta == TensorMeta((), (), "float64", "cpu")
    (kernel,) = graph.kernels
    assert kernel.signature["ks0"] == "i64" and kernel.signature["in_ptr1"] == "fp64"
    assert kernel.signature["R0_BLOCK"] == "constexpr"
    (launch,) = graph.launches
    args = {a.param: a for a in launch.args}
    assert args["in_ptr1"].expr == "arg3_1.item()" and args["in_ptr1"].buffer is None
    assert args["in_ptr1"].item_of == "arg3_1"  # read when the wrapper is parsed
    assert (args["ks0"].expr, args["xnumel"].expr, args["r0_numel"].expr) == ("s27", "s77", "s27")
    assert all(args[p].value is None for p in ("ks0", "xnumel", "r0_numel"))
    arg2_1 = next(n for n in kernel.comment.fragment if n.name == "arg2_1")
    assert arg2_1.meta == TensorMeta(("s77", "s27"), ("s27", 1), "float32", device)
    assert kernel.comment.source_nodes[0] == ""  # Inductor writes "[, softmax, relu, add]"
    assert kernel.comment.node_to_aten[0][0] == "" and "amax_default" in kernel.comment.node_to_aten[0][1]


def test_fragment_nodes_without_tensor_meta() -> None:
    graph = _parse(CUDA / "small_model/graph_000.py")
    fragment = graph.kernel("triton_per_fused_native_layer_norm_0").comment.fragment
    var_mean = next(n for n in fragment if n.name == "var_mean")
    assert (var_mean.op, var_mean.target, var_mean.meta, var_mean.num_users) == (
        "call_function", "aten.var_mean.correction", None, 2
    )  # fmt: skip
    assert var_mean.args == (FxRef("primals_3"), FxList((FxExpr(("2",)),)))  # the FX text, read when parsed
    assert var_mean.kwargs == (("correction", FxExpr(("0",))), ("keepdim", FxExpr(("True",))))
    assert graph.kernel("triton_per_fused_native_layer_norm_0").comment.fragment_return == (
        "getitem_1", "buf1", "rsqrt", "add_1"
    )  # fmt: skip


@pytest.mark.parametrize(
    ("text", "meta"),
    [
        ("f32[8, 256, 1][256, 1, 2048]cuda:0", TensorMeta((8, 256, 1), (256, 1, 2048), "float32", "cuda")),
        ("f64[][]cpu", TensorMeta((), (), "float64", "cpu")),
        ("b8[s77, 1][1, s77]cpu", TensorMeta(("s77", 1), (1, "s77"), "bool", "cpu")),
        ("bf16[2*s0, 4][4, 1]cuda:1", TensorMeta(("2*s0", 4), (4, 1), "bfloat16", "cuda")),
        ("i64[Max(1, s0)][1]cuda:0", TensorMeta(("Max(1, s0)",), (1,), "int64", "cuda")),
        ("f16[3][1]", TensorMeta((3,), (1,), "float16", "")),
        ("u8[4][1]cpu", TensorMeta((4,), (1,), "uint8", "cpu")),
        ("c64[2][1]cpu", TensorMeta((2,), (1,), "complex64", "cpu")),
    ],
)
def test_parse_tensor_meta(text: str, meta: TensorMeta) -> None:
    assert parse_tensor_meta(text) == meta


def test_parse_tensor_meta_rejects_garbage() -> None:
    with pytest.raises(ValueError, match="not a tensor meta string"):
        parse_tensor_meta("Tensor")


# -- older wrapper formats (short synthetic modules, shaped like what those versions wrote) --------------------------

HEADER = '''\
from ctypes import c_void_p, c_long
import torch
from torch._inductor.async_compile import AsyncCompile
from torch._inductor.select_algorithm import extern_kernels
from torch._inductor.runtime.triton_heuristics import grid, split_scan_grid, start_graph, end_graph
from torch._C import _cuda_getCurrentRawStream as get_raw_stream

aten = torch.ops.aten
assert_size_stride = torch._C._dynamo.guards.assert_size_stride
empty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda
reinterpret_tensor = torch._C._dynamo.guards._reinterpret_tensor
async_compile = AsyncCompile()
'''

TORCH_2_4 = HEADER + """

# kernel path: /tmp/torchinductor_root/ab/cabc.py
# Source Nodes: [mul, sum_1], Original ATen: [aten.mul, aten.sum]
triton_red_fused_mul_sum_0 = async_compile.triton('triton_', '''
import triton
import triton.language as tl
from triton.compiler.compiler import AttrsDescriptor

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, instance_descriptor, DeviceProperties

@triton_heuristics.reduction(
    size_hints=[64, 1024],
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {0: '*fp32', 1: '*fp32', 2: 'i32', 3: 'i32'}, 'device': DeviceProperties(type='cuda', index=0, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, multi_processor_count=132), 'constants': {}, 'configs': [AttrsDescriptor(divisible_by_16=(0, 1, 2, 3), equal_to_1=())]},
    inductor_meta={'autotune_hints': set(), 'kernel_name': 'triton_red_fused_mul_sum_0', 'mutated_arg_names': [], 'no_x_dim': False, 'num_load': 1, 'num_reduction': 1, 'backend_hash': 'A1B2', 'are_deterministic_algorithms_enabled': False}
)
@triton.jit
def triton_(in_ptr0, out_ptr0, xnumel, rnumel, XBLOCK : tl.constexpr, RBLOCK : tl.constexpr):
    xnumel = 64
    rnumel = 1024
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    rbase = tl.arange(0, RBLOCK)[None, :]
    x0 = xindex
    _tmp2 = tl.full([XBLOCK, RBLOCK], 0, tl.float32)
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + rbase
        rmask = rindex < rnumel
        r1 = rindex
        tmp0 = tl.load(in_ptr0 + (r1 + (1024*x0)), rmask & xmask, other=0.0)
        tmp1 = tl.broadcast_to(tmp0 * tmp0, [XBLOCK, RBLOCK])
        _tmp2 = tl.where(rmask & xmask, _tmp2 + tmp1, _tmp2)
    tmp2 = tl.sum(_tmp2, 1)[:, None]
    tl.store(out_ptr0 + (x0), tmp2, xmask)
''', device_str='cuda')


async_compile.wait(globals())
del async_compile

def call(args):
    arg0_1, = args
    args.clear()
    assert_size_stride(arg0_1, (64, 1024), (1024, 1))
    with torch.cuda._DeviceGuard(0):
        torch.cuda.set_device(0)
        buf0 = empty_strided_cuda((64, ), (1, ), torch.float32)
        # Source Nodes: [mul, sum_1], Original ATen: [aten.mul, aten.sum]
        stream0 = get_raw_stream(0)
        triton_red_fused_mul_sum_0.run(arg0_1, buf0, 64, 1024, grid=grid(64), stream=stream0)
        del arg0_1
    return (buf0, )


def benchmark_compiled_module(times=10, repeat=10):
    from torch._dynamo.testing import rand_strided
    from torch._inductor.utils import print_performance
    arg0_1 = rand_strided((64, 1024), (1024, 1), device='cuda:0', dtype=torch.float32)
    fn = lambda: call([arg0_1])
    return print_performance(fn, times=times, repeat=repeat)
"""

TORCH_2_6 = "# AOT ID: ['0_inference']\n" + HEADER + """

# kernel path: /tmp/torchinductor_root/xy/cxyz.py
# Topologically Sorted Source Nodes: [square, square_1], Original ATen: [aten.pow]
# Source node to ATen node mapping:
#   square => pow_1
#   square_1 => pow_2
# Graph fragment:
#   %pow_1 : [num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%arg1_1, 2), kwargs = {})
#   %pow_2 : [num_users=1] = call_function[target=torch.ops.aten.pow.Tensor_Scalar](args = (%pow_1, 2), kwargs = {})
triton_poi_fused_pow_0 = async_compile.triton('triton_poi_fused_pow_0', '''
import triton
import triton.language as tl
from triton.compiler.compiler import AttrsDescriptor

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties

@triton_heuristics.pointwise(
    size_hints={'x': 1024},
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'i32'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, warp_size=32), 'constants': {}, 'configs': [AttrsDescriptor.from_dict({'arg_properties': {'tt.divisibility': (0, 1), 'tt.equal_to': ()}, 'cls': 'AttrsDescriptor'})]},
    inductor_meta={'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_pow_0', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'num_load': 1, 'num_reduction': 0},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_pow_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask)
    tmp1 = tmp0 * tmp0
    tl.store(out_ptr0 + (x0), tmp1 * tmp1, xmask)
''', device_str='cuda')


async_compile.wait(globals())
del async_compile

def call(args):
    arg0_1, arg1_1 = args
    args.clear()
    s0 = arg0_1
    assert_size_stride(arg1_1, (s0, 32), (32, 1))
    with torch.cuda._DeviceGuard(0):
        torch.cuda.set_device(0)
        ps0 = 32*s0
        buf0 = empty_strided_cuda((s0, 32), (32, 1), torch.float32)
        # Topologically Sorted Source Nodes: [square, square_1], Original ATen: [aten.pow]
        stream0 = get_raw_stream(0)
        triton_poi_fused_pow_0.run(arg1_1, buf0, ps0, grid=grid(ps0), stream=stream0)
        del arg1_1
    return (buf0, )


def benchmark_compiled_module(times=10, repeat=10):
    from torch._dynamo.testing import rand_strided
    from torch._inductor.utils import print_performance
    arg0_1 = 8
    arg1_1 = rand_strided((8, 32), (32, 1), device='cuda:0', dtype=torch.float32)
    fn = lambda: call([arg0_1, arg1_1])
    return print_performance(fn, times=times, repeat=repeat)
"""


def test_torch_2_4_format() -> None:
    graph = parse_output_code(TORCH_2_4, name="g0_inference", role="inference")
    assert (graph.name, graph.role, graph.aot_id, graph.unparsed) == ("g0_inference", "inference", "", ())
    (kernel,) = graph.kernels
    assert kernel.name == "triton_red_fused_mul_sum_0"  # the variable; the string said 'triton_'
    assert (kernel.kind, kernel.standalone_reason) == ("reduction", None)
    assert kernel.size_hints == {"x": 64, "r0_": 1024}
    assert kernel.signature == {
        "in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32", "rnumel": "i32",
        "XBLOCK": "constexpr", "RBLOCK": "constexpr",
    }  # fmt: skip
    assert kernel.configs == ({"divisible_by_16": [0, 1, 2, 3], "equal_to_1": []},)
    assert kernel.triton_meta["device"]["cc"] == 90
    assert kernel.comment.source_nodes == ("mul", "sum_1") and kernel.comment.aten_ops == ("aten.mul", "aten.sum")
    assert kernel.comment.fragment == ()
    (launch,) = graph.launches
    assert launch.grid == "grid(64)" and launch.function == "call"
    assert [(a.param, a.buffer or a.value) for a in launch.args] == [
        ("in_ptr0", "arg0_1"), ("out_ptr0", "buf0"), ("xnumel", 64), ("rnumel", 1024)
    ]  # fmt: skip
    assert graph.buffers["arg0_1"].meta == TensorMeta((64, 1024), (1024, 1), "float32", "cuda")
    assert graph.outputs == ("buf0",)


def test_torch_2_6_format_without_runner() -> None:
    graph = parse_output_code(TORCH_2_6)
    assert graph.aot_id == "0_inference" and graph.unparsed == ()
    (kernel,) = graph.kernels
    assert kernel.size_hints == {"x": 1024}
    assert kernel.signature == {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32", "XBLOCK": "constexpr"}
    (config,) = kernel.configs  # AttrsDescriptor.from_dict({...}) -> the dict
    assert config == {"arg_properties": {"tt.divisibility": [0, 1], "tt.equal_to": []}, "cls": "AttrsDescriptor"}
    pow_1, pow_2 = kernel.comment.fragment
    assert (pow_1.name, pow_1.target, pow_1.meta, pow_1.num_users) == ("pow_1", "aten.pow.Tensor_Scalar", None, 1)
    assert pow_2.args == (FxRef("pow_1"), FxExpr(("2",))) and kernel.comment.fragment_return == ()
    assert graph.symbols == ("s0", "ps0") and graph.scalar_values == {"arg0_1": 8, "s0": 8, "ps0": 256}  # ps0 = 32*s0
    assert graph.buffers["arg1_1"].meta == TensorMeta(("s0", 32), (32, 1), "float32", "cuda")
    assert graph.buffers["buf0"].meta.shape == ("s0", 32)
    (launch,) = graph.launches
    assert [(a.param, a.expr, a.buffer) for a in launch.args] == [
        ("in_ptr0", "arg1_1", "arg1_1"), ("out_ptr0", "buf0", "buf0"), ("xnumel", "ps0", None)
    ]  # fmt: skip
    assert launch.grid == "grid(ps0)"


def test_a_view_passed_at_a_launch_gets_its_layout_when_parsed() -> None:
    """`kernel.run(reinterpret_tensor(buf, shape, stride, offset), ...)`: the layout goes on the model, and the module
    plans its argument from it, symbols resolved from the graph's example values."""
    source = (CUDA / "square_square" / "graph_000.py").read_text()
    launch = "triton_poi_fused_pow_0.run(arg0_1, buf0, 100000000, stream=stream0)"
    assert launch in source
    viewed = source.replace(launch, "triton_poi_fused_pow_0.run(reinterpret_tensor(arg0_1, (5000, 20000), (20000, 1), 0), buf0, 100000000, stream=stream0)")
    graph = parse_output_code(viewed)
    a_arg = graph.launches[0].args[0]
    assert (a_arg.buffer, a_arg.view) == ("arg0_1", LaunchView((5000, 20000), (20000, 1), 0))
    assert graph.launches[0].args[1].view is None  # a plain buffer
    assert tensor_layout(a_arg, graph, {}) == Layout((5000, 20000), (20000, 1), 0)
    symbolic = LaunchArg("in_ptr0", "reinterpret_tensor(arg0_1, (s0, 4), (4, 1), 2*s0)", "arg0_1", view=LaunchView(("s0", 4), (4, 1), "2*s0"))
    assert tensor_layout(symbolic, graph, {"s0": 3}) == Layout((3, 4), (4, 1), 6)
    assert tensor_layout(symbolic, graph, {}) is None  # s0 unknown


def _kernel(name: str, decorator: str, params: str, body: str = "    pass\n", var: str | None = None) -> str:
    """One `name = async_compile.triton(...)` definition with the imports Inductor puts in every kernel."""
    source = f"""
import triton
import triton.language as tl
from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties

{decorator}
@triton.jit
def {name}({params}):
{body}"""
    return f"{var or name} = async_compile.triton('{name}', '''{source}''', device_str='cuda')\n\n\n"


META = "triton_meta={'signature': %s, 'device': DeviceProperties(type='cuda', index=0), 'constants': {}, 'configs': []}"

PARTITIONED = HEADER + _kernel(
    "triton_poi_fused_sin_0",
    "@triton_heuristics.pointwise(size_hints={'x': 128}, filename=__file__, "
    + META % "{'in_ptr0': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}"
    + ", inductor_meta={'kernel_name': 'triton_poi_fused_sin_0'})",
    "in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr",
) + '''
async_compile.wait(globals())
del async_compile

def partition_0(args):
    arg0_1, = args
    args.clear()
    with torch.cuda._DeviceGuard(0):
        buf0 = empty_strided_cuda((100, ), (1, ), torch.float32)
        stream0 = get_raw_stream(0)
        triton_poi_fused_sin_0.run(arg0_1, buf0, 100, stream=stream0)
        del arg0_1
    return (buf0, )


class Runner:
    def __init__(self, partitions):
        self.partitions = partitions

    def call(self, args):
        arg0_1, = args
        args.clear()
        assert_size_stride(arg0_1, (100, ), (1, ))
        partition0_args = [arg0_1]
        del arg0_1
        (buf0, ) = self.partitions[0](partition0_args)
        del partition0_args
        buf1 = torch.ops.aten.nonzero.default(buf0)
        buf2 = buf1
        print("not Inductor")
        return (buf0, buf2, )

runner = Runner(partitions=[partition_0,])
call = runner.call
'''


def test_graph_partitions_and_fallback_ops() -> None:
    graph = parse_output_code(PARTITIONED)
    (launch,) = graph.launches
    assert (launch.function, launch.order) == ("partition_0", 0)
    assert [a.buffer or a.value for a in launch.args] == ["arg0_1", "buf0", 100]
    (extern,) = graph.externs
    assert (extern.op, extern.args, extern.out, extern.order) == (
        "torch.ops.aten.nonzero.default", ("buf0",), "buf1", 1
    )  # fmt: skip
    assert graph.buffers["buf0"].meta == TensorMeta((100,), (1,), "float32", "cuda")
    assert "buf1" not in graph.buffers  # a fallback op's result: no meta in the wrapper
    assert graph.outputs == ("buf0", "buf2")
    assert graph.unparsed == ('print("not Inductor")',)


ODD_KERNELS = HEADER + "".join(
    [
        _kernel(
            "triton_tem_fused_mm_0",
            "@triton_heuristics.template(num_stages=3, num_warps=4, "
            + META % "{'arg_A': '*fp32', 'arg_B': '*fp32', 'out_ptr0': '*fp32'}"
            + ", inductor_meta={'kernel_name': 'triton_tem_fused_mm_0'})",
            "arg_A, arg_B, out_ptr0",
        ),
        _kernel(
            "add_kernel",
            "@triton_heuristics.user_autotune(configs=[], inductor_meta={}, "
            + META % "{'in_ptr0': '*fp32', 'out_ptr': '*fp32', 'n_elements': 'i32', 'BLOCK_SIZE': 'constexpr'}"
            + ", filename=__file__, custom_kernel=True)",
            'in_ptr0, out_ptr, n_elements, BLOCK_SIZE: "tl.constexpr"',
            var="add_kernel_0",
        ),
        _kernel(
            "triton_for_fused_0",
            "@triton_heuristics.foreach(num_warps=8, " + META % "{'in_ptr0': '*fp32', 'out_ptr0': '*fp32'}" + ")",
            "in_ptr0, out_ptr0",
        ),
        _kernel(
            "triton_poi_fused_1",
            "@triton_heuristics.pointwise(size_hints={'x': 16}, triton_meta=make_meta(), inductor_meta={})",
            "in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr",
        ),
        "triton_poi_fused_2 = async_compile.triton('triton_poi_fused_2', '''def broken(:''', device_str='cuda')\n",
    ]
) + '''
def call(args):
    arg0_1, arg1_1 = args
    args.clear()
    buf0 = empty_strided_cuda((64, 64), (64, 1), torch.float32)
    triton_tem_fused_mm_0.run(arg0_1, arg1_1, buf0, 4, 1, 1, stream=stream0)
    add_kernel_0.run(arg0_1, buf0, 4096, stream=stream0)
    triton_poi_fused_1.run(arg0_1, buf0, 16, stream=stream0)
    triton_poi_fused_2.run(arg0_1, buf0, stream=stream0)
    return (buf0, )
'''


def test_odd_kernels_get_a_reason_not_an_exception() -> None:
    graph = parse_output_code(ODD_KERNELS)
    kernels = {k.name: k for k in graph.kernels}
    assert [k.kind for k in graph.kernels] == ["template", "user", "foreach", "pointwise", "pointwise"]
    assert kernels["triton_tem_fused_mm_0"].standalone_reason is None  # a template becomes a module (issue 21)
    assert kernels["triton_tem_fused_mm_0"].heuristic_args == {"num_stages": 3, "num_warps": 4}
    assert kernels["add_kernel_0"].standalone_reason is None  # a user-written kernel: a module with the user's name
    assert kernels["triton_for_fused_0"].standalone_reason is None  # so does a foreach kernel
    assert kernels["triton_poi_fused_1"].standalone_reason == "could not read decorator: triton_meta is not a literal"
    assert kernels["triton_poi_fused_2"].standalone_reason.startswith("could not read kernel source")
    template, user, odd, broken = graph.launches
    assert [a.param for a in template.args] == ["arg_A", "arg_B", "out_ptr0", "<extra 3>", "<extra 4>", "<extra 5>"]
    assert [a.param for a in user.args] == ["in_ptr0", "out_ptr", "n_elements"]  # BLOCK_SIZE is constexpr
    assert [a.param for a in odd.args] == ["in_ptr0", "out_ptr0", "xnumel"]  # from the def when the meta is unreadable
    assert [a.param for a in broken.args] == ["<extra 0>", "<extra 1>"]
    assert graph.unparsed == ()


def test_graph_of_only_extern_calls_is_legal() -> None:
    source = HEADER + '''
def call(args):
    arg0_1, arg1_1 = args
    args.clear()
    assert_size_stride(arg0_1, (16, 32), (32, 1))
    assert_size_stride(arg1_1, (32, 8), (8, 1))
    buf0 = empty_strided_cuda((16, 8), (8, 1), torch.float32)
    extern_kernels.mm(arg0_1, arg1_1, out=buf0)
    return (buf0, )
'''
    graph = parse_output_code(source)
    assert graph.kernels == () and graph.launches == () and graph.unparsed == ()
    assert graph.externs[0].op == "extern_kernels.mm" and graph.externs[0].out == "buf0"
    assert graph.buffers["arg1_1"].meta == TensorMeta((32, 8), (8, 1), "", "")  # no get_args(): dtype unknown


# -- corrupt input ---------------------------------------------------------------------------------------------------


def _parse_error(source: str) -> str:
    with pytest.raises(ParseError) as info:
        parse_output_code(source)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_not_python() -> None:
    source = (CUDA / "square_compile/graph_000.py").read_text()
    lines = source.splitlines()
    index = next(i for i, line in enumerate(lines) if "args.clear()" in line)
    lines[index] = "        args.clear("
    message = _parse_error("\n".join(lines) + "\n")
    assert message == (
        f"not valid Python at line {index + 1}: '(' was never closed; pass the untouched output_code.py Inductor wrote"
    )
    assert "output_code.py" in message


def test_truncated_inside_a_kernel_string() -> None:
    source = (CPU / "small_model/graph_000.py").read_text()
    cut = source[: source.index("tmp0 = tl.load", source.index("triton_poi_fused_gelu_view_1 = async_compile"))]
    line = cut.count("\n", 0, cut.index("triton_poi_fused_gelu_view_1 = async_compile")) + 1
    assert _parse_error(cut) == (
        f"truncated: async_compile.triton(...) string for triton_poi_fused_gelu_view_1 is not closed "
        f"(opened at line {line}); the file was cut short, capture it again"
    )


def test_python_without_call() -> None:
    source = (ROOT / "harvest/errors.py").read_text()
    assert _parse_error(source).startswith("no call() function found: is this an Inductor output_code.py?")
    assert _parse_error("").startswith("no call() function found")


def test_truncated_inside_call() -> None:
    source = (CUDA / "small_model/graph_000.py").read_text()
    cut = source[: source.index("alpha=1, beta=1, out=buf5)")]
    line = cut.count("\n") + 1
    assert _parse_error(cut) == (
        f"not valid Python at line {line}: '(' was never closed; pass the untouched output_code.py Inductor wrote"
    )


SIZES = st.one_of(st.integers(0, 2**40), st.sampled_from(["s0", "s77", "2*s0", "s0*s1", "Max(1, s0)", "((s0 + 1)//2)"]))


@given(
    dtype=st.sampled_from(["f32", "bf16", "i64", "b8", "u8", "c64"]),
    shape=st.lists(SIZES, max_size=5),
    stride=st.lists(SIZES, max_size=5),
    device=st.sampled_from(["cuda:0", "cuda:3", "cpu", ""]),
)
def test_parse_tensor_meta_round_trip(dtype: str, shape: list, stride: list, device: str) -> None:
    meta = parse_tensor_meta(f"{dtype}[{', '.join(map(str, shape))}][{', '.join(map(str, stride))}]{device}")
    assert (meta.shape, meta.stride, meta.device) == (tuple(shape), tuple(stride), device.split(":")[0])
    assert meta.dtype == {"f32": "float32", "bf16": "bfloat16", "i64": "int64", "b8": "bool", "u8": "uint8"}.get(
        dtype, "complex64"
    )


def test_grouped_input_asserts_of_torch_2_14() -> None:
    """torch 2.14 asserts several inputs in one assert_size_stride_grouped call; each input still gets its layout."""
    source = (FIXTURES / "torch-2.14.1+cu130_triton-3.8.0/small_model/graph_000.py").read_text()
    assert "assert_size_stride_grouped(" in source
    graph = parse_output_code(source, name="g0_forward", role="forward")
    assert graph.buffers["primals_3"].meta == TensorMeta((2, 16, 32), (512, 32, 1), "float32", "cpu")
    assert graph.buffers["primals_1"].meta.shape == (32,)
    assert not graph.unparsed
