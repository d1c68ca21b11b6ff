"""build_reference: hand-written fragments, and every fixture kernel checked against the real Inductor kernel.

The oracle is the kernel Inductor generated, run through the Triton interpreter on CPU: a reference output that is
listed as checked must agree with what the kernel stores.
"""

from __future__ import annotations

import re
import textwrap
import unittest.mock
from pathlib import Path

import libcst as cst
import pytest
import torch
from conftest import FIXTURES, ROOT

from harvest.imports import import_file
from harvest.model import Buffer, FxNode, Graph, Kernel, KernelComment, Launch, LaunchArg, TensorMeta
from harvest.parse import parse_output_code, parse_tensor_meta
from harvest.parse.fx_args import parse_fx_args, parse_fx_kwargs, read_fx_arguments
from harvest.reference import Reference, build_reference

CPU = FIXTURES / "torch-2.13.0+cpu_triton-3.9.0"
CUDA = FIXTURES / "torch-2.11.0+cu130_triton-3.6.0"


# ---------------------------------------------------------------------------------------------------------------
# Hand-built kernels: a fragment, a kernel body, one launch.


def _node(line: str) -> FxNode:
    """`%add : f32[4][1] = aten.add.Tensor(%x, 1.0) {alpha: 1}` -> FxNode (a compact test notation)."""
    head, call = line.split(" = ", 1)
    name, _, meta_text = head.partition(" : ")
    meta = parse_tensor_meta(f"{meta_text.strip()}cpu") if meta_text.strip() else None
    name = name.strip().lstrip("%")
    if call.strip() == "placeholder":
        return FxNode(name, "placeholder", name, meta=meta)
    target, rest = call.split("(", 1)
    args, _, kwargs = rest.rpartition(")")
    kwargs = kwargs.strip().removeprefix("{").removesuffix("}")
    values, keywords, error = read_fx_arguments(args, kwargs)
    return FxNode(name, "call_function", target.strip(), values, keywords, meta, args_error=error)


def _kernel(fragment: str, body: str, params: dict[str, str], returns: str, mutated: tuple[str, ...] = ()) -> Kernel:
    nodes = tuple(_node(line) for line in textwrap.dedent(fragment).strip().splitlines())
    header = ", ".join(params)
    source = f"import triton\nimport triton.language as tl\n\n@triton.jit\ndef k({header}):\n"
    source += textwrap.indent(textwrap.dedent(body).strip(), "    ") + "\n"
    comment = KernelComment(fragment=nodes, fragment_return=tuple(returns.split(",")))
    return Kernel("k", source, "pointwise", "cpu", signature=params, comment=comment,
                  inductor_meta={"mutated_arg_names": list(mutated)})


def _meta(shape: tuple, dtype: str = "float32") -> TensorMeta:
    stride, acc = [], 1
    for size in reversed(shape):
        stride.insert(0, acc)
        acc *= size if isinstance(size, int) else 1
    return TensorMeta(tuple(shape), tuple(stride), dtype, "cpu")


def _graph(buffers: dict[str, TensorMeta], args: list[tuple[str, str]]) -> tuple[Graph, Launch]:
    launch = Launch("k", tuple(LaunchArg(p, e, e if e in buffers else None) for p, e in args), 0)
    graph = Graph("g0", "inference", (), (launch,), {n: Buffer(n, m, "input") for n, m in buffers.items()}, (), ())
    return graph, launch


def _run(ref: Reference, **inputs):
    namespace: dict = {"torch": torch}
    exec(compile(ref.source, "<reference>", "exec"), namespace)
    return namespace["reference"](*[inputs[p] for p in ref.params])


def test_fx_arg_text_with_unquoted_keys_devices_and_specials():
    args = parse_fx_args("%view_1, [2, -1], -inf, torch.float32")
    assert [type(a).__name__ for a in args] == ["FxRef", "FxList", "FxExpr", "FxExpr"]
    assert [a.text for a in args[1].items] == ["2", "-1"]
    assert args[2].text == '-float("inf")' and args[3].text == "torch.float32"
    kwargs = parse_fx_kwargs("dtype: torch.float32, device: cuda:0, pin_memory: False, correction: 0")
    assert set(kwargs) == {"dtype", "device", "pin_memory", "correction"}
    assert type(kwargs["device"]).__name__ == "FxDevice"
    assert kwargs["correction"].text == "0"


def test_square_square_by_hand_reads_like_a_person_wrote_it():
    kernel = _kernel(
        """
        %arg0_1 : f32[8][1] = placeholder
        %pow_1 : f32[8][1] = torch.ops.aten.pow.Tensor_Scalar(%arg0_1, 2)
        %pow_2 : f32[8][1] = torch.ops.aten.pow.Tensor_Scalar(%pow_1, 2)
        """,
        """
        tmp0 = tl.load(in_ptr0 + x0)
        tmp1 = tmp0 * tmp0
        tmp2 = tmp1 * tmp1
        tl.store(out_ptr0 + x0, tmp2)
        """,
        {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32"},
        "pow_2",
    )
    graph, launch = _graph({"arg0_1": _meta((8,)), "buf0": _meta((8,))},
                           [("in_ptr0", "arg0_1"), ("out_ptr0", "buf0"), ("xnumel", "8")])
    ref = build_reference(kernel, launch, graph)
    assert ref.source == textwrap.dedent(
        """\
        def reference(in_ptr0):
            arg0_1 = in_ptr0
            pow_1 = torch.ops.aten.pow.Tensor_Scalar(arg0_1, 2)
            pow_2 = torch.ops.aten.pow.Tensor_Scalar(pow_1, 2)
            return {"out_ptr0": pow_2}
        """
    )
    assert (ref.params, ref.checked, ref.unchecked) == (("in_ptr0",), ("out_ptr0",), ())
    x = torch.randn(8)
    torch.testing.assert_close(_run(ref, in_ptr0=x)["out_ptr0"], x**4)


LAYER_NORM = """
    %x : f32[4, 8][8, 1] = placeholder
    %var_mean = torch.ops.aten.var_mean.correction(%x, [1]) {correction: 0, keepdim: True}
    %getitem_1 : f32[4, 1][1, 1] = operator.getitem(%var_mean, 1)
    %add : f32[4, 1][1, 1] = torch.ops.aten.add.Tensor(%getitem, 1e-05)
    %rsqrt : f32[4, 1][1, 1] = torch.ops.aten.rsqrt.default(%add)
    %sub : f32[4, 8][8, 1] = torch.ops.aten.sub.Tensor(%x, %getitem_1)
    %mul : f32[4, 8][8, 1] = torch.ops.aten.mul.Tensor(%sub, %rsqrt)
"""
LAYER_NORM_BODY = """
    tmp0 = tl.load(in_ptr0 + r0_1 + 8*x0)
    tmp4 = tl.sum(tmp0, 1)[:, None]
    tmp6 = tmp4 / tmp5
    tmp13 = tl.sum(tmp0 * tmp0, 1)[:, None]
    tmp16 = libdevice.rsqrt(tmp13 + tmp14)
    tmp17 = (tmp0 - tmp6) * tmp16
    tl.store(out_ptr0 + x0, tmp6)
    tl.store(out_ptr1 + x0, tmp16)
    tl.store(out_ptr2 + r0_1 + 8*x0, tmp17)
"""


def _layer_norm(returns: str) -> Reference:
    params = {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "out_ptr1": "*fp32", "out_ptr2": "*fp32"}
    kernel = _kernel(LAYER_NORM, LAYER_NORM_BODY, params, returns)
    graph, launch = _graph(
        {"x": _meta((4, 8)), "buf0": _meta((4, 1)), "buf1": _meta((4, 1)), "buf2": _meta((4, 8))},
        [("in_ptr0", "x"), ("out_ptr0", "buf0"), ("out_ptr1", "buf1"), ("out_ptr2", "buf2")],
    )
    return build_reference(kernel, launch, graph)


def returned(source: str, param: str) -> str:
    """The node a reference returns for `param`: `"out_ptr0": rsqrt`, or the expected value of a marked output
    (`{"reduce": "through", ..., "expected": mul}`: computed through a sum, compared with a wider tolerance)."""
    match = re.search(rf'"{param}": (?:\{{[^}}]*"expected": )?(\w+)', source)
    assert match, (param, source)
    return match.group(1)


def test_getitem_is_inferred_from_the_tuple_node_and_outputs_bind_by_stored_op():
    ref = _layer_norm("getitem_1,rsqrt,mul")
    assert "getitem = var_mean[0]" in ref.source
    assert any("inferred getitem = var_mean[0]" in w for w in ref.warnings)
    # out_ptr0 stores sum/n (a mean), out_ptr1 rsqrt(...): same meta, told apart by the stored op.
    assert ref.checked == ("out_ptr0", "out_ptr1", "out_ptr2")
    assert (returned(ref.source, "out_ptr0"), returned(ref.source, "out_ptr1")) == ("getitem_1", "rsqrt")
    x = torch.randn(4, 8)
    out = {p: v["expected"] if isinstance(v, dict) else v for p, v in _run(ref, in_ptr0=x).items()}
    torch.testing.assert_close(out["out_ptr2"], torch.nn.functional.layer_norm(x, (8,)))
    torch.testing.assert_close(out["out_ptr0"], x.mean(1, keepdim=True))


def test_missing_node_that_cannot_be_inferred_leaves_outputs_unchecked():
    # Two tuple nodes: `getitem` could come from either, so nothing is inferred.
    fragment = LAYER_NORM.replace("    %getitem_1 :", "    %var_mean_1 = torch.ops.aten.var_mean.correction(%x, [0])\n    %getitem_1 :")
    params = {"in_ptr0": "*fp32", "out_ptr0": "*fp32"}
    kernel = _kernel(fragment, "tmp0 = tl.load(in_ptr0 + x0)\ntl.store(out_ptr0 + x0, tmp0 + 1.0)", params, "add")
    graph, launch = _graph({"x": _meta((4, 8)), "buf0": _meta((4, 1))}, [("in_ptr0", "x"), ("out_ptr0", "buf0")])
    ref = build_reference(kernel, launch, graph)
    assert ref.checked == ()
    (param, reason), = ref.unchecked
    assert param == "out_ptr0" and reason.startswith("fragment does not define getitem (")


def test_unknown_op_is_unchecked_with_its_name_not_a_crash():
    kernel = _kernel(
        """
        %x : f32[4][1] = placeholder
        %y : f32[4][1] = torch.ops.aten.no_such_op.default(%x)
        """,
        "tmp0 = tl.load(in_ptr0 + x0)\ntl.store(out_ptr0 + x0, tmp0)",
        {"in_ptr0": "*fp32", "out_ptr0": "*fp32"},
        "y",
    )
    graph, launch = _graph({"x": _meta((4,)), "buf0": _meta((4,))}, [("in_ptr0", "x"), ("out_ptr0", "buf0")])
    ref = build_reference(kernel, launch, graph)
    assert ref.checked == ()
    (param, reason), = ref.unchecked
    assert param == "out_ptr0" and "no_such_op" in reason
    compile(ref.source, "<reference>", "exec")


def test_symbolic_size_binds_from_input_shape_or_is_unchecked():
    fragment = """
        %x : f32[s0, 4][4, 1] = placeholder
        %v : f32[4, s0][s0, 1] = torch.ops.aten.reshape.default(%x, [4, s0])
        %w : f32[4, s0][s0, 1] = torch.ops.aten.mul.Tensor(%v, 2)
    """
    body = "tmp0 = tl.load(in_ptr0 + x0)\ntl.store(out_ptr0 + x0, tmp0 * 2.0)"
    params = {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32"}
    buffers = {"x": _meta(("s0", 4)), "buf0": _meta((4, "s0"))}
    graph, launch = _graph(buffers, [("in_ptr0", "x"), ("out_ptr0", "buf0"), ("xnumel", "4*s0")])
    ref = build_reference(_kernel(fragment, body, params, "w"), launch, graph)
    assert ref.checked == ("out_ptr0",)
    assert "s0 = x.shape[0]" in ref.source
    x = torch.randn(3, 4)
    torch.testing.assert_close(_run(ref, in_ptr0=x)["out_ptr0"], x.reshape(4, 3) * 2)
    # A symbol no input shape carries cannot be bound.
    unbound = fragment.replace("[4, s0])", "[4, s1])")
    ref = build_reference(_kernel(unbound, body, params, "w"), launch, graph)
    assert ref.unchecked == (("out_ptr0", "symbolic size s1 in v cannot be bound from the kernel's inputs"),)


def test_reference_is_written_in_the_module_names_size_symbols_included():
    fragment = """
        %x : f32[12][1] = placeholder
        %v : f32[4, ks0][ks0, 1] = torch.ops.aten.reshape.default(%x, [4, ks0])
        %w : f32[4, ks0][ks0, 1] = torch.ops.aten.mul.Tensor(%v, 2)
    """
    body = "tmp0 = tl.load(in_ptr0 + x0)\ntl.store(out_ptr0 + x0, tmp0 * 2.0)"
    params = {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "ks0": "i32", "xnumel": "i32"}
    buffers = {"x": _meta((12,)), "buf0": _meta((4, "ks0"))}
    graph, launch = _graph(buffers, [("in_ptr0", "x"), ("out_ptr0", "buf0"), ("ks0", "ks0"), ("xnumel", "4*ks0")])
    final = {"in_ptr0": "a_ptr", "out_ptr0": "out_ptr", "ks0": "n_cols", "xnumel": "n_elements"}
    ref = build_reference(_kernel(fragment, body, params, "w"), launch, graph, final)
    assert ref.params == ("in_ptr0", "ks0") and ref.checked == ("out_ptr0",)  # the fields keep Inductor's names
    assert ref.source == textwrap.dedent("""\
        def reference(a_ptr, n_cols):
            x = a_ptr
            n_cols = n_cols
            v = torch.ops.aten.reshape.default(x, [4, n_cols])
            w = torch.ops.aten.mul.Tensor(v, 2)
            return {"out_ptr": w}
    """)
    namespace: dict = {"torch": torch}
    exec(compile(ref.source, "<reference>", "exec"), namespace)
    x = torch.randn(12)
    torch.testing.assert_close(namespace["reference"](x, 3)["out_ptr"], x.reshape(4, 3) * 2)


def test_dtype_conversion_and_device_kwargs():
    kernel = _kernel(
        """
        %x : f32[4][1] = placeholder
        %c : bf16[4][1] = torch.ops.prims.convert_element_type.default(%x, torch.bfloat16)
        %one : f32[][] = torch.ops.aten.scalar_tensor.default(1,) {dtype: torch.float32, device: cuda:0, pin_memory: False}
        %s : bf16[4][1] = torch.ops.aten.add.Tensor(%c, %one)
        %y : f32[4][1] = torch.ops.prims.convert_element_type.default(%s, torch.float32)
        """,
        "tmp0 = tl.load(in_ptr0 + x0)\ntl.store(out_ptr0 + x0, tmp0 + 1.0)",
        {"in_ptr0": "*fp32", "out_ptr0": "*fp32"},
        "y",
    )
    graph, launch = _graph({"x": _meta((4,)), "buf0": _meta((4,))}, [("in_ptr0", "x"), ("out_ptr0", "buf0")])
    ref = build_reference(kernel, launch, graph)
    assert ref.checked == ("out_ptr0",)
    # Inside a kernel Inductor keeps the bf16 value in fp32 (the kernel above adds in fp32): so does the reference
    assert "device = in_ptr0.device" in ref.source and "bfloat16 kept in fp32, as in the kernel" in ref.source
    assert "y = torch.ops.prims.convert_element_type.default(s, torch.float32)" in ref.source
    x = torch.randn(4)
    torch.testing.assert_close(_run(ref, in_ptr0=x)["out_ptr0"], x + 1.0, rtol=0, atol=0)


def test_broken_kernel_source_never_raises():
    kernel = Kernel("k", "def k(:\n", "pointwise", "cpu", signature={"out_ptr0": "*fp32"})
    graph, launch = _graph({"buf0": _meta((4,))}, [("out_ptr0", "buf0")])
    ref = build_reference(kernel, launch, graph)
    assert ref.checked == () and ref.unchecked[0][0] == "out_ptr0" and "SyntaxError" in ref.unchecked[0][1]


# ---------------------------------------------------------------------------------------------------------------
# Fixtures.


def _graphs(root: Path) -> list[tuple[str, Graph]]:
    return [(f"{p.parent.name}/{p.stem}", parse_output_code(p.read_text(), name=p.stem))
            for p in sorted(root.glob("*/graph_*.py"))]


def _launches(root: Path):
    return [pytest.param(graph, launch, id=f"{name}:{launch.order}:{launch.kernel}")
            for name, graph in _graphs(root) for launch in graph.launches]


def _stored(kernel: Kernel) -> set[str]:
    import ast

    stored = set()
    for node in ast.walk(ast.parse(kernel.source)):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "tl.store":
            target = node.args[0]
            while isinstance(target, ast.BinOp):
                target = target.left
            stored.add(ast.unparse(target))
    return stored


@pytest.mark.parametrize("graph,launch", _launches(CPU) + _launches(CUDA))
def test_fixture_reference_builds_and_accounts_for_every_output(graph: Graph, launch: Launch):
    kernel = graph.kernel(launch.kernel)
    ref = build_reference(kernel, launch, graph)
    compile(ref.source, "<reference>", "exec")
    assert set(ref.params) <= set(kernel.params)
    unchecked = {p for p, _ in ref.unchecked}
    assert not set(ref.checked) & unchecked
    assert set(ref.checked) | unchecked == _stored(kernel)
    assert all(reason for _, reason in ref.unchecked)
    assert "internal error" not in " ".join(r for _, r in ref.unchecked)


class _Rename(cst.CSTTransformer):
    """The test's oracle: every name and string in `names`, renamed after the fact."""

    def __init__(self, names: dict[str, str]):
        self.names = names

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        return updated_node.with_changes(value=self.names.get(updated_node.value, updated_node.value))

    def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString) -> cst.SimpleString:
        inner = updated_node.evaluated_value
        if isinstance(inner, str) and inner in self.names:
            return updated_node.with_changes(value=f'"{self.names[inner]}"')
        return updated_node


@pytest.mark.parametrize("graph,launch", _launches(CPU) + _launches(CUDA) + _launches(FIXTURES / "torch-2.14.1+cu130_triton-3.8.0"))
def test_fixture_reference_in_final_names_is_its_inductor_source_renamed(graph: Graph, launch: Launch):
    """Written in final names from the start, the reference is exactly what renaming it afterwards would give."""
    kernel = graph.kernel(launch.kernel)
    final = {p: f"{p}_final" for p in kernel.params}
    written = build_reference(kernel, launch, graph, final)
    renamed = cst.parse_module(build_reference(kernel, launch, graph).source).visit(_Rename(final)).code
    assert written.source == renamed


def _import_kernel(kernel: Kernel, directory: Path):
    from harvest.capture.inprocess import prepare_cpu_triton

    prepare_cpu_triton()
    path = directory / f"{kernel.name}.py"
    path.write_text(kernel.source)  # triton needs inspect.getsource, so the kernel lives in a real file
    # CUDA-captured kernels call set_driver_to_gpu(), which needs torch.cuda; prepare_cpu_triton() already made an
    # offline CUDA driver active for the interpreter.
    from torch._inductor.runtime import triton_helpers

    with unittest.mock.patch.object(triton_helpers, "set_driver_to_gpu", lambda: None):
        module = import_file(path, f"_harvest_test_{kernel.name}", register=True)
    return getattr(module, kernel.name)


def _size(value, scalars: dict) -> int:
    return value if isinstance(value, int) else int(eval(str(value), {}, dict(scalars)))


def _make_tensor(meta: TensorMeta, scalars: dict, generator: torch.Generator) -> torch.Tensor:
    shape = [_size(s, scalars) for s in meta.shape]
    stride = [_size(s, scalars) for s in meta.stride]
    dtype = getattr(torch, meta.dtype)
    tensor = torch.empty_strided(shape, stride, dtype=dtype)
    storage = torch.as_strided(tensor, (tensor.untyped_storage().nbytes() // tensor.element_size(),), (1,), 0)
    if dtype.is_floating_point:
        storage.copy_(torch.randn(storage.shape, generator=generator))
    elif dtype == torch.bool:
        storage.copy_(torch.randint(0, 2, storage.shape, generator=generator).bool())
    else:
        storage.copy_(torch.randint(0, 4, storage.shape, generator=generator))
    return tensor


def _widest(tuner) -> None:
    """Run the config with the largest blocks: the interpreter's time goes per program, and any config must agree."""
    def volume(config) -> int:
        total = 1
        for value in config.kwargs.values():
            total *= value if isinstance(value, int) else 1
        return total

    tuner.configs = [max(tuner.configs, key=volume)]


def _check_against_kernel(graph: Graph, launch: Launch, directory: Path, widest: bool = False) -> Reference:
    kernel = graph.kernel(launch.kernel)
    ref = build_reference(kernel, launch, graph)
    generator = torch.Generator().manual_seed(launch.order)
    scalars = dict(graph.scalar_values)
    tensors: dict[str, torch.Tensor] = {}
    inputs: dict[str, object] = {}
    for arg in launch.args:
        if kernel.signature[arg.param].startswith("*"):
            if arg.buffer not in tensors:
                tensors[arg.buffer] = _make_tensor(graph.buffers[arg.buffer].meta, scalars, generator)
            inputs[arg.param] = tensors[arg.buffer]
        else:
            namespace = {**scalars, **{n: _make_tensor(b.meta, scalars, generator) for n, b in graph.buffers.items()
                                        if b.origin == "input" and n in arg.expr}}
            inputs[arg.param] = arg.value if arg.value is not None else eval(arg.expr, {}, namespace)
    clones = {p: v.clone() if isinstance(v, torch.Tensor) else v for p, v in inputs.items()}
    tuner = _import_kernel(kernel, directory)
    if widest:
        _widest(tuner)
    tuner.run(*[clones[a.param] for a in launch.args], stream=0)
    expected = _run(ref, **inputs)
    assert set(expected) == set(ref.checked)
    for param in ref.checked:
        actual, want, atol = clones[param], expected[param], 1e-5
        if isinstance(want, dict) and want["reduce"] in ("scan", "through"):  # whole values, through a sum of terms
            atol, want = 1e-5 * want["terms"] ** 0.5 * max(want["expected"].abs().max().item(), 1.0), want["expected"]
        elif isinstance(want, dict):  # a split-reduction partial: combine the kernel's partials, as check() does
            combine = {"sum": torch.sum, "amax": torch.amax, "amin": torch.amin}[want["reduce"]]
            actual, atol, want = combine(actual, dim=want["dims"]), 1e-5 * want["terms"] ** 0.5, want["expected"]
        assert actual.shape == want.shape, param
        torch.testing.assert_close(actual, want.to(actual.dtype), rtol=1e-4, atol=atol, msg=lambda m, param=param: f"{param}: {m}")
    return ref


# What the references check, per CPU fixture graph: (checked outputs, all stored outputs).
CPU_COUNTS = {
    "square_square/graph_000": (1, 1),
    "square_compile/graph_000": (1, 1),
    "pytorch_square/graph_000": (1, 1),
    "pytorch_square/graph_001": (1, 1),
    "pytorch_square/graph_002": (1, 1),
    "dynamic_shapes/graph_000": (1, 1),
    "small_model/graph_000": (6, 6),
    "small_model/graph_001": (8, 8),
}


@pytest.mark.parametrize("name,graph", _graphs(CPU), ids=[n for n, _ in _graphs(CPU)])
def test_cpu_fixture_references_agree_with_the_inductor_kernel(name: str, graph: Graph, tmp_path: Path):
    checked = total = 0
    for launch in graph.launches:
        ref = _check_against_kernel(graph, launch, tmp_path)
        checked += len(ref.checked)
        total += len(ref.checked) + len(ref.unchecked)
    assert (checked, total) == CPU_COUNTS[name]


def test_small_model_forward_checks_layer_norm_gelu_softmax_and_residual(tmp_path: Path):
    graph = dict(_graphs(CPU))["small_model/graph_000"]
    outputs = {}
    for launch in graph.launches:
        ref = build_reference(graph.kernel(launch.kernel), launch, graph)
        for param in ref.checked:
            outputs[f"{launch.kernel}:{param}"] = returned(ref.source, param)
    assert outputs["triton_per_fused_native_layer_norm_0:out_ptr0"] == "add_1"
    assert outputs["triton_per_fused_native_layer_norm_0:in_out_ptr1"] == "rsqrt"
    assert outputs["triton_poi_fused_gelu_view_1:out_ptr0"] == "mul_4"
    assert outputs["triton_per_fused__softmax_abs_all_amax_eq_mul_ne_sub_2:in_out_ptr0"] == "div"
    assert outputs["triton_poi_fused_add_3:in_out_ptr0"] == "add_3"


# The H200 backward graph splits three reductions in two kernels: stage 1 stores partials (buf9, buf14, buf18 and
# buf20, the node's shape plus a split dim of 16), stage 2 (triton_per_fused_add_sum_view_3, launched three times,
# and ..._6) sums them. Launch order -> {output: (what it holds, split dims or None for a plain output)}.
SPLIT_REDUCTIONS = {
    7: ("triton_red_fused_add_sum_view_2", {"out_ptr0": ("sum_3", [2])}),
    8: ("triton_per_fused_add_sum_view_3", {"out_ptr0": ("sum_3", None)}),
    12: ("triton_red_fused_gelu_gelu_backward_sum_view_5", {"out_ptr0": ("sum_4", [2])}),
    14: ("triton_per_fused_gelu_gelu_backward_sum_view_6", {"out_ptr0": ("sum_4", None)}),
    16: ("triton_red_fused_native_layer_norm_native_layer_norm_backward_view_8",
         {"out_ptr0": ("sum_7", [1]), "out_ptr1": ("sum_8", [1])}),
    17: ("triton_per_fused_add_sum_view_3", {"out_ptr0": ("sum_3", None)}),  # buf18 -> buf19
    18: ("triton_per_fused_add_sum_view_3", {"out_ptr0": ("sum_3", None)}),  # buf20 -> buf21
}


def _cuda_backward() -> Graph:
    return dict(_graphs(CUDA))["small_model/graph_001"]


def test_cuda_fixture_split_reductions_are_checked_by_combining_partials():
    graph = _cuda_backward()
    launches = {launch.order: launch for launch in graph.launches}
    outputs = 0
    for order, (kernel, stores) in SPLIT_REDUCTIONS.items():
        launch = launches[order]
        assert launch.kernel == kernel
        ref = build_reference(graph.kernel(kernel), launch, graph)
        assert (ref.checked, ref.unchecked) == (tuple(stores), ()), kernel
        for param, (node, dims) in stores.items():
            if dims is None:  # stage 2: the node is the sum of the partial input over its split dim
                assert returned(ref.source, param) == node and "Split reduction, stage 2" in ref.source
                assert f"{node} = torch.ops.aten.sum.dim_IntList(" in ref.source
            else:  # stage 1: the whole sum from the fragment, with how to combine the kernel's partials
                assert f'"{param}": {{"reduce": "sum", "dims": {dims}, "terms": 2048, "expected": {node}}}' in ref.source
                assert "Split reduction, stage 1" in ref.source
            outputs += 1
    assert outputs == 8
    # The layer-norm kernel's two partials look alike (sum_7, sum_8 f32[512]): paired by store order, and said so.
    ref = build_reference(graph.kernel(SPLIT_REDUCTIONS[16][0]), launches[16], graph)
    assert any("by store order" in w for w in ref.warnings)


# Under ~60 s in the interpreter: launch 12 (gelu backward, 32768 rows) is launch 7's kernel shape at 4x the size
# and is left to the replayed module's --check.
ORACLE_SPLITS = [o for o in sorted(SPLIT_REDUCTIONS) if o != 12]


@pytest.mark.parametrize("order", ORACLE_SPLITS, ids=[f"{o}:{SPLIT_REDUCTIONS[o][0]}" for o in ORACLE_SPLITS])
def test_cuda_split_reductions_agree_with_the_kernel_in_the_interpreter(order: int, tmp_path: Path):
    graph = _cuda_backward()
    launch = next(entry for entry in graph.launches if entry.order == order)
    ref = _check_against_kernel(graph, launch, tmp_path, widest=True)
    assert ref.checked == tuple(SPLIT_REDUCTIONS[order][1])


def _split_kernel(fragment: str, stored: str, partial: tuple, reduce: str = "tl.sum") -> Reference:
    """Stage 1 of a hand-made split reduction: `out_ptr0` stores `buf1` of shape `partial`."""
    body = f"tmp0 = tl.load(in_ptr0 + x0)\ntmp1 = {reduce}(tmp0, 1)[:, None]\ntl.store(out_ptr0 + x0, tmp1)"
    kernel = _kernel(fragment, body, {"in_ptr0": "*fp32", "out_ptr0": "*fp32"}, stored)
    graph, launch = _graph({"x": _meta((64, 8)), "buf1": _meta(partial)}, [("in_ptr0", "x"), ("out_ptr0", "buf1")])
    return build_reference(kernel, launch, graph)


def test_split_reduction_partial_by_hand_max_and_ambiguous_dims():
    amax = """
        %x : f32[64, 8][8, 1] = placeholder
        %amax : f32[8][1] = torch.ops.aten.amax.default(%x, [0])
    """
    ref = _split_kernel(amax, "buf1", (8, 4), "triton_helpers.max2")
    assert ref.checked == ("out_ptr0",)
    x = torch.randn(64, 8)
    marker = _run(ref, in_ptr0=x)["out_ptr0"]
    assert (marker["reduce"], marker["dims"], marker["terms"]) == ("amax", [1], 64)
    torch.testing.assert_close(marker["expected"], x.amax(0))
    # A sum stored where the node is an amax: never paired.
    ref = _split_kernel(amax, "buf1", (8, 4))
    assert ref.checked == () and "partial" in ref.unchecked[0][1]
    # f32[8] from f32[8, 8]: either dim could be the split one by the shapes; Inductor appends the split to the
    # reduction's ranges, so it is the last.
    square = amax.replace("amax.default", "sum.dim_IntList").replace("%amax", "%sum_1")
    ref = _split_kernel(square, "buf1", (8, 8))
    assert ref.checked == ("out_ptr0",)
    marker = _run(ref, in_ptr0=x)["out_ptr0"]
    assert (marker["reduce"], marker["dims"]) == ("sum", [1])
    # A Welford partial (var_mean) is not combined.
    welford = """
        %x : f32[64, 8][8, 1] = placeholder
        %var_mean = torch.ops.aten.var_mean.correction(%x, [0]) {correction: 0}
        %getitem : f32[8][1] = operator.getitem(%var_mean, 0)
    """
    ref = _split_kernel(welford, "buf1", (8, 4), "triton_helpers.welford")
    assert ref.checked == ()


def test_a_value_computed_through_a_sum_is_compared_at_the_size_of_its_own_row():
    """`{"reduce": "through", "dims": [1], ...}`: atol grows with sqrt(terms) and with the largest value of each row
    the sum ran along, not of the whole output: a row of values near 1 beside a row near 1e5 is not given the big
    row's atol. Without dims (the output is not the sum's input shape) the whole output's largest value scales it."""
    harness = import_file(ROOT / "extracted/h200/small_model/harness.py", "_harvest_test_showcase_harness")
    expected = torch.tensor([[1e5, -1e5, 5e4], [1.0, 0.5, -0.25]])
    near = expected + torch.tensor([[0.5, -0.5, 0.25], [1e-4, -1e-4, 0.0]])  # within each row's own scale
    off = expected + torch.tensor([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]])  # 2.0 off in the small row
    through = dict(reduce="through", terms=100)
    assert harness.compare("out", near, dict(through, dims=[1], expected=expected), "reference")
    assert not harness.compare("out", off, dict(through, dims=[1], expected=expected), "reference")
    assert harness.compare("out", off, dict(through, dims=[], expected=expected), "reference")  # atol 1e-5 * 10 * 1e5
