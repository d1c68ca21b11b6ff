"""Fusion maps over the recorded fixtures (H200 CUDA and CPU captures), checked against the graph fragments."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from test_report import CPU, CUDA, fixture_graphs

from harvest.fusion import (
    count_source,
    graph_fusion,
    header_comment,
    kernel_fusion,
    parse_stack_trace,
    source_lines_for,
)
from harvest.ops import op_short_name

NAMES = ("square_compile", "square_square", "pytorch_square", "small_model", "dynamic_shapes")
CASES = [root / case for root in (CPU, CUDA) for case in NAMES]
CASE_IDS = [f"{'cpu' if p.parent == CPU else 'cuda'}-{p.name}" for p in CASES]


def _fragment_targets(source: str) -> list[str]:
    """call_function targets of every `# Graph fragment:` block, read from the raw text (not via the parser)."""
    targets: list[str] = []
    inside = False
    for line in source.splitlines():
        if line.startswith("# Graph fragment:"):
            inside = True
        elif inside and line.startswith("#   %"):
            found = re.search(r"call_function\[target=([^\]]+)\]", line)
            if found:
                targets.append(found.group(1))
        else:
            inside = False
    return targets


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_kernel_ops_are_the_fragment_nodes(case):
    for path, (graph, provenance) in zip(sorted(case.glob("graph_*.py")), fixture_graphs(case)):
        expected = [t.replace("torch.ops.", "") for t in _fragment_targets(path.read_text()) if t != "operator.getitem"]
        fusions = [kernel_fusion(graph, k, provenance) for k in graph.kernels]
        assert [op for kf in fusions for op in kf.ops] == expected
        for kernel, kf in zip(graph.kernels, fusions):
            assert kf.ops_from == "graph fragment"
            assert [n.name for n in kf.fx_nodes] == [n.name for n in kernel.comment.fragment if n.op == "call_function"]
            assert kf.launches == len(graph.launches_of(kernel.name)) >= 1


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_post_grad_nodes_agree_with_fragments(case):
    checked = 0
    for graph, provenance in fixture_graphs(case):
        mapping = provenance.get("inductor_provenance_tracking_node_mappings", {}).get("cppCodeToPost")
        for kernel in graph.kernels:
            kf = kernel_fusion(graph, kernel, provenance)
            if mapping:
                assert set(kf.post_grad_nodes) == {n.name for n in kf.fx_nodes}
                checked += 1
            else:
                assert kf.post_grad_nodes == ()
    if case.name != "small_model":  # small_model's backward has an empty mapping; its forward is checked
        assert checked > 0


@pytest.mark.parametrize("root", [CPU, CUDA], ids=["cpu", "cuda"])
def test_square_vs_square_square(root):
    [(square, prov_a)] = fixture_graphs(root / "square_compile")
    [(square2, prov_b)] = fixture_graphs(root / "square_square")
    one, two = graph_fusion(square, prov_a), graph_fusion(square2, prov_b)
    assert one.summary == "1 kernel for 1 pow op"
    assert two.summary == "1 kernel for 2 pow ops"
    assert two.ops_before == {"pow": 2} and two.kernels == 1
    assert [u.op for u in one.unfused] == ["pow"]  # the only op of its graph: nothing to fuse with
    assert two.unfused == ()


@pytest.mark.parametrize("root", [CPU, CUDA], ids=["cpu", "cuda"])
def test_small_model_forward(root):
    graph, provenance = fixture_graphs(root / "small_model")[0]
    gf = graph_fusion(graph, provenance)
    by_name = {kf.kernel: kf for kf in gf.kernel_fusions}
    layer_norm = by_name["triton_per_fused_native_layer_norm_0"]
    assert [(x.location, x.code) for x in layer_norm.source_lines] == [("examples/small_model.py:22", "h = self.ln(x)")]
    assert layer_norm.op_counts["var_mean"] == 1 and layer_norm.op_counts["rsqrt"] == 1
    assert layer_norm.kind == "persistent_reduction"
    assert layer_norm.reductions == 2 and layer_norm.reduction_calls == ("tl.sum",)
    gelu = by_name["triton_poi_fused_gelu_view_1"]
    assert [x.line for x in gelu.source_lines] == [23, 24]
    assert gelu.op_counts == {"mul": 3, "add": 1, "erf": 1, "reshape": 1} and gelu.reductions == 0
    # Externs: in call order, each with the user line of its debug handle.
    assert [(e.op, [x.line for x in e.source_lines]) for e in gf.externs] == [
        ("extern_kernels.addmm", [23]),
        ("extern_kernels.addmm", [25]),
        ("extern_kernels.bmm", [26]),
        ("extern_kernels.bmm", [28]),
    ]
    assert gf.ops_before["addmm"] == 2 and gf.ops_before["bmm"] == 2
    assert gf.ops_total == sum(len(kf.ops) for kf in gf.kernel_fusions) + 4
    assert gf.summary.startswith("4 kernels for ") and gf.summary.endswith("; 4 extern calls (2x addmm, 2x bmm)")
    expected = {("add", "alone in its kernel"), ("addmm", "extern call"), ("bmm", "extern call")}
    assert {(u.op, u.how) for u in gf.unfused} == expected


def test_small_model_flow_follows_buffer_reuse():
    """With reuse aliases recorded as `base`, the extern bmm's output reaches the softmax and residual-add kernels."""
    graph, provenance = fixture_graphs(CPU / "small_model")[0]
    aliases = {"buf12": "buf8", "buf14": "buf12", "buf16": "buf15"}  # `buf12 = buf8; del buf8  # reuse`, ...
    buffers = {name: dataclasses.replace(b, base=aliases.get(name, b.base)) for name, b in graph.buffers.items()}
    gf = graph_fusion(dataclasses.replace(graph, buffers=buffers), provenance)
    names = {n.id: n.name for n in gf.nodes}
    edges = {(names[e.src], names[e.dst], e.buffers) for e in gf.edges}
    assert ("extern_kernels.bmm", "triton_per_fused__softmax_abs_all_amax_eq_mul_ne_sub_2", ("buf14",)) in edges
    assert ("triton_per_fused__softmax_abs_all_amax_eq_mul_ne_sub_2", "extern_kernels.bmm", ("buf14",)) in edges
    assert ("extern_kernels.bmm", "triton_poi_fused_add_3", ("buf16",)) in edges
    assert ("triton_poi_fused_add_3", "graph outputs", ("buf16",)) in edges
    add = next(u for u in gf.unfused if u.where == "triton_poi_fused_add_3")
    assert add.reason == "reads buf16 from extern call extern_kernels.bmm"


@pytest.mark.parametrize("root", [CPU, CUDA], ids=["cpu", "cuda"])
def test_small_model_backward_boundaries(root):
    graph, provenance = fixture_graphs(root / "small_model")[1]
    gf = graph_fusion(graph, provenance)
    assert gf.provenance  # stack traces only: the node mapping of this graph is empty
    assert all(kf.post_grad_nodes == () and kf.source_lines for kf in gf.kernel_fusions)
    assert gf.launches == len(graph.launches) and gf.kernels == len(graph.kernels)
    reasons = [b.reason for b in gf.boundaries]
    assert any(r.startswith("different iteration spaces") for r in reasons)
    if root == CUDA:  # the H200 capture splits its big reductions in two (triton_red_... -> triton_per_...)
        assert any(r.startswith("reduction feeding a reduction") for r in reasons)
        reused = next(kf for kf in gf.kernel_fusions if kf.kernel == "triton_per_fused_add_sum_view_3")
        assert reused.launches == 3 and len(reused.debug_handles) == 3
        assert "in 11 launches" in gf.summary


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_counts_match_source_text(case):
    for graph, _ in fixture_graphs(case):
        for kernel in graph.kernels:
            counts = count_source(kernel.source)
            assert counts.loads == kernel.source.count("tl.load(")
            assert counts.stores == kernel.source.count("tl.store(")
            assert counts.stores <= kernel.inductor_meta["num_store"] + 1


def test_count_source_reads_code_not_text():
    source = '''
@triton.jit
def k(in_ptr0, in_out_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    """tl.load(in_ptr0) in a docstring is not a load"""
    # tl.store(out_ptr0, x) in a comment is not a store either
    x = tl.load(in_ptr0 + xnumel)
    y = tl.load(in_out_ptr0 + 1)
    s = tl.sum(x, 1)[:, None]
    m = triton_helpers.max2(y, 1)
    z = triton_helpers.maximum(s, m)
    tl.store(in_out_ptr0 + 1, z)
    tl.store(out_ptr0 + 0, s)
'''
    counts = count_source(source)
    assert (counts.loads, counts.stores, counts.reductions) == (2, 2, 2)
    assert counts.reduction_calls == ("tl.sum", "triton_helpers.max2")
    assert counts.loaded_params == ("in_ptr0", "in_out_ptr0")
    assert counts.stored_params == ("in_out_ptr0", "out_ptr0")
    assert count_source("def broken(:\n") is None


def test_no_provenance_means_unknown():
    [(graph, _)] = fixture_graphs(CPU / "square_square")
    gf = graph_fusion(graph, {})
    kf = gf.kernel_fusions[0]
    assert kf.source_lines == () and kf.source_text == "unknown"
    assert kf.to_json()["source_lines"] == "unknown"
    assert not gf.provenance
    assert gf.summary == "1 kernel for 2 pow ops"  # the fragments still say what fused


def test_provenance_as_text_is_read():
    [(graph, provenance)] = fixture_graphs(CPU / "square_square")
    as_json = {name: json.dumps(value) for name, value in provenance.items()}
    as_repr = {name: repr(value) for name, value in provenance.items()}
    expected = graph_fusion(graph, provenance).to_json()
    assert graph_fusion(graph, as_json).to_json() == expected == graph_fusion(graph, as_repr).to_json()


def test_parse_stack_trace_takes_innermost_frame():
    trace = (
        '  File "model.py", line 40, in forward\n    x = self.block(x)\n'
        '  File "block.py", line 12, in forward\n    return torch.relu(x)\n           ^^^^^^^^^^^^^\n'
    )
    line = parse_stack_trace(trace)
    assert (line.file, line.line, line.function, line.code) == ("block.py", 12, "forward", "return torch.relu(x)")
    assert parse_stack_trace("Gradient addition node due to multiple use of tensor around:") is None
    provenance = {"inductor_provenance_tracking_kernel_stack_traces": {"k:3": [trace], "k:1": [trace], "kk:2": ["x"]}}
    assert [x.location for x in source_lines_for("k", provenance)] == ["block.py:12"]


def test_op_short_name():
    assert op_short_name("torch.ops.aten.pow.Tensor_Scalar") == "pow"
    assert op_short_name("aten._softmax.default") == "_softmax"
    assert op_short_name("prims.convert_element_type.default") == "convert_element_type"
    assert op_short_name("extern_kernels.addmm") == "addmm"
    assert op_short_name("aten.pow") == "pow"


def test_header_comment():
    [(graph, provenance)] = fixture_graphs(CPU / "square_square")
    text = header_comment(kernel_fusion(graph, graph.kernels[0], provenance))
    assert text.splitlines() == [
        "# Fused ops: 2x pow (from the graph fragment)",
        "# FX nodes: pow_1 (aten.pow.Tensor_Scalar), pow_2 (aten.pow.Tensor_Scalar)",
        "# Source lines:",
        "#   examples/square_square.py:12 in square_square: return torch.square(torch.square(x))",
        "# Loads: 1, stores: 1, reductions: 0",
    ]


def test_fusion_json_is_plain_and_stable():
    for graph, provenance in fixture_graphs(CUDA / "small_model"):
        first = graph_fusion(graph, provenance).to_json()
        assert json.loads(json.dumps(first)) == first
        assert graph_fusion(graph, provenance).to_json() == first
