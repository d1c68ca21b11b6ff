"""parse_output_code over every recorded fixture, older wrapper formats, and corrupt input."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from pathlib import Path

import pytest

from harvest.errors import ParseError
from harvest.model import Graph, TensorMeta
from harvest.parse import parse_output_code, parse_tensor_meta

FIXTURES = sorted(Path(__file__).parent.glob("fixtures/*/*/graph_*.py"))
CUDA = Path(__file__).parent / "fixtures/torch-2.11.0+cu130_triton-3.6.0"
CPU = Path(__file__).parent / "fixtures/torch-2.13.0+cpu_triton-3.9.0"

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
# (example, graph) -> extern ops in call order (the same on both devices)
EXPECTED_EXTERNS = {
    ("small_model", "graph_000"): ["addmm", "addmm", "bmm", "bmm"],
    ("small_model", "graph_001"): {
        "cuda": ["bmm", "bmm", "bmm", "bmm", "mm", "mm", "mm", "mm"],
        "cpu": ["bmm", "bmm", "bmm", "bmm", "mm", "mm", "mm", "mm"],
    },
}
PREFIX_KIND = {"triton_poi": "pointwise", "triton_red": "reduction", "triton_per": "persistent_reduction"}


def _key(path: Path) -> tuple[str, str, str]:
    device = "cuda" if "+cu" in path.parent.parent.name else "cpu"
    return device, path.parent.name, path.stem


@functools.cache
def _parse(path: Path) -> Graph:
    return parse_output_code(path.read_text(encoding="utf-8"), name=path.stem)


def _fixture_id(path: Path) -> str:
    return "/".join(_key(path))


def test_every_fixture_has_an_expectation() -> None:
    assert sorted(_key(p) for p in FIXTURES) == sorted(EXPECTED_KERNELS)


@pytest.fixture(params=FIXTURES, ids=_fixture_id)
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
    assert sorted(x.order for x in (*graph.launches, *graph.externs)) == list(range(len(graph.launches) + len(graph.externs)))
    assert {launch.kernel for launch in graph.launches} == {k.name for k in graph.kernels}
    assert {launch.function for launch in graph.launches} == {"Runner.call"}
    example = _key(path)[1:]
    expected = EXPECTED_EXTERNS.get(example, [])
    expected = expected[_key(path)[0]] if isinstance(expected, dict) else expected
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
    assert (placeholder.op, placeholder.target, placeholder.meta) == ("placeholder", "arg0_1", graph.buffers["arg0_1"].meta)
    assert (pow_1.name, pow_1.target, pow_1.args, pow_1.kwargs, pow_1.num_users) == (
        "pow_1", "aten.pow.Tensor_Scalar", "%arg0_1, 2", "", 1
    )  # fmt: skip
    assert pow_2.args == "%pow_1, 2" and pow_2.meta.shape == (size, size)
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
    assert graph.buffers["buf11"].meta == graph.buffers["buf8"].meta and graph.buffers["buf11"].origin == "empty"
    assert graph.launches_of("triton_per_fused__softmax_amax_mul_sub_2")[0].args[0].buffer == "buf11"
    assert graph.outputs[:3] == ("buf13", "primals_1", "primals_3")
    assert graph.outputs[7] == "buf4"  # reinterpret_tensor(buf4, ...) is returned as its base


def test_layer_norm_launch_cpu_forward() -> None:
    graph = _parse(CPU / "small_model/graph_000.py")
    (launch,) = graph.launches_of("triton_per_fused_native_layer_norm_0")
    assert [a.buffer or a.value for a in launch.args] == ["buf1", "buf3", "primals_3", "primals_1", "primals_2", "buf4", 32, 32]
    assert [a.param for a in launch.args][:2] == ["in_out_ptr0", "in_out_ptr1"]
    assert graph.buffers["buf1"].meta == TensorMeta((2, 16, 1), (16, 1, 32), "float32", "cpu")  # buf1 = buf0  # reuse
    assert graph.buffers["buf14"].meta.shape == (2, 16, 16)  # buf12 = buf8; buf14 = buf12


@pytest.mark.parametrize("root", [CUDA, CPU], ids=["cuda", "cpu"])
def test_small_model_forward_externs(root: Path) -> None:
    graph = _parse(root / "small_model/graph_000.py")
    addmm, addmm_1, bmm, bmm_1 = graph.externs
    assert [e.out for e in graph.externs] == (["buf5", "buf7", "buf8", "buf12"] if root == CUDA else ["buf5", "buf7", "buf8", "buf15"])
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
    assert var_mean.args == "%primals_3, [2]" and var_mean.kwargs == "correction: 0, keepdim: True"
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
