"""harvest diff: kernels matched by content, split/merge, ops that stopped fusing, gates; one real fusion break."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch
from conftest import EXAMPLES, ROOT, harvest
from test_report import CPU, CUDA, fixture_manifest, manifest_for

from harvest.diff import diff_command, diff_manifests, to_markdown
from harvest.errors import GateError
from harvest.parse import parse_output_code


def fused(x):
    return torch.cos(torch.sin(x))


def broken(x):
    y = torch.sin(x)
    torch._dynamo.graph_break()  # the change under review: sin and cos now land in two graphs
    return torch.cos(y)


@pytest.fixture(scope="module")
def fusion_break() -> tuple[dict, dict]:
    """Manifests of the same function compiled for real, before and after a change that prevents fusion."""
    from harvest.capture.inprocess import capturing

    x = torch.randn(64)
    manifests = []
    for fn in (fused, broken):
        with capturing() as sources:
            out = torch.compile(fn)(x)
        torch.testing.assert_close(out, torch.cos(torch.sin(x)))
        graphs = [(parse_output_code(src, f"g{i}_inference", "inference"), {}) for i, src in enumerate(sources)]
        manifests.append(manifest_for(f"{fn.__name__}.py", graphs))
    return manifests[0], manifests[1]


def _write(tmp_path: Path, name: str, manifest: dict) -> str:
    out = tmp_path / name
    out.mkdir()
    (out / "manifest.json").write_text(json.dumps(manifest))
    return str(out)


def test_real_fusion_break_is_named(fusion_break):
    before, after = fusion_break
    assert [len(g["kernels"]) for g in before["graphs"]] == [1]
    assert [len(g["kernels"]) for g in after["graphs"]] == [1, 1]
    d = diff_manifests(before, after)
    assert {(c.op, c.count) for c in d.stopped_fusing} == {("sin", 1), ("cos", 1)}
    assert d.started_fusing == ()
    [split] = d.splits
    assert split.old[0].op_counts == {"sin": 1, "cos": 1}
    assert sorted(tuple(k.op_counts) for k in split.new) == [("cos",), ("sin",)]
    assert (d.old_kernels, d.new_kernels) == (1, 2)
    assert [(g.graph, g.old_kernels, g.new_kernels, g.delta) for g in d.graphs] == [
        ("g0_inference", 1, 1, 0), ("g1_inference", None, 1, 1),
    ]  # fmt: skip


def test_real_fusion_break_trips_the_gates(fusion_break, tmp_path):
    old, new = _write(tmp_path, "old", fusion_break[0]), _write(tmp_path, "new", fusion_break[1])
    text, code = diff_command(old, new, as_json=False, max_kernels=None, fail_on_unfuse=True)
    assert code == GateError.exit_code == 8
    section = text.split("### Ops that stopped fusing (2)")[1].split("###")[0]
    assert "`sin` ×1: now alone in" in section and "`cos` ×1: now alone in" in section
    assert "`--fail-on-unfuse`: FAIL (2 op instances stopped fusing)" in text
    _, code = diff_command(old, new, as_json=False, max_kernels=1, fail_on_unfuse=False)
    assert code == 8
    text, code = diff_command(old, new, as_json=False, max_kernels=2, fail_on_unfuse=False)
    assert code == 0 and "`--max-kernels 2`: pass (2 Triton kernels in NEW)" in text
    # The reverse change re-fuses them: a merge, nothing stopped fusing, the gate passes.
    text, code = diff_command(new, old, as_json=True, max_kernels=None, fail_on_unfuse=True)
    payload = json.loads(text)
    assert code == 0 and payload["exit_code"] == 0
    assert {c["op"] for c in payload["started_fusing"]} == {"sin", "cos"}
    assert len(payload["merged"]) == 1 and payload["stopped_fusing"] == []
    assert payload["kernels"] == {"old": 2, "new": 1, "delta": -1}


def test_same_manifest_has_no_changes():
    manifest = fixture_manifest(CUDA / "small_model")
    d = diff_manifests(manifest, copy.deepcopy(manifest))
    assert not d.changed and d.unchanged == d.old_kernels == d.new_kernels == 13 and d.renamed == 0
    assert "No fusion changes: all 13 kernels hold the same ops." in to_markdown(d)


def test_kernels_are_matched_by_content_not_name():
    old = fixture_manifest(CPU / "small_model")
    new = copy.deepcopy(old)
    for graph in new["graphs"]:  # Inductor renumbers kernels when anything before them changes
        graph["kernels"].reverse()
        for i, kernel in enumerate(graph["kernels"]):
            kernel["name"] = f"triton_poi_fused_renamed_{i}"
    d = diff_manifests(old, new)
    assert not d.changed
    assert d.renamed == d.unchanged == 11


def test_square_to_square_square():
    d = diff_manifests(fixture_manifest(CPU / "square_compile"), fixture_manifest(CPU / "square_square"))
    assert [k.op_counts for k in d.removed] == [{"pow": 1}]
    assert [k.op_counts for k in d.added] == [{"pow": 2}]
    assert [(c.op, c.count) for c in d.started_fusing] == [("pow", 1)]
    assert d.stopped_fusing == ()


def test_extern_counts_as_unfused():
    """An op that moves from a kernel into an extern call stopped fusing."""
    old = fixture_manifest(CPU / "square_square")
    new = copy.deepcopy(old)
    graph = new["graphs"][0]
    graph["kernels"][0]["fusion"]["ops"] = ["aten.pow.Tensor_Scalar"]
    extern = {"op": "aten.pow.Tensor_Scalar", "order": 1, "out": "buf1", "source_lines": "unknown"}
    graph["fusion"]["externs"] = [extern]
    d = diff_manifests(old, new)
    [change] = d.stopped_fusing
    assert (change.op, change.count) == ("pow", 2)  # both pows left the fused kernel: one alone, one extern
    assert "extern call `aten.pow.Tensor_Scalar` (g0_inference)" in change.now


def test_cpu_vs_cuda_small_model_counts():
    d = diff_manifests(fixture_manifest(CPU / "small_model"), fixture_manifest(CUDA / "small_model"))
    deltas = {g.graph: (g.old_kernels, g.new_kernels, g.old_launches, g.new_launches) for g in d.graphs}
    assert deltas == {"g0_forward": (4, 4, 4, 4), "g1_backward": (7, 9, 7, 11)}
    assert d.stopped_fusing == ()
    assert d.new_kernels - d.old_kernels == 2


def test_a_diff_across_torch_and_triton_versions_says_so(tmp_path):
    """extracted/h200/square_square was made on the H200 (torch 2.11, triton 3.6); the same example extracted here
    runs another torch, triton and device. The markdown says so first and the JSON names each difference."""
    showcase = ROOT / "extracted/h200/square_square"
    done = harvest("extract", str(EXAMPLES / "square_square.py"), "-o", "here", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    here = json.loads((tmp_path / "here/manifest.json").read_text())
    there = json.loads((showcase / "manifest.json").read_text())
    assert (there["torch"], there["triton"]) == ("2.11.0+cu130", "3.6.0") and here["torch"] != there["torch"]
    as_json = harvest("diff", str(showcase), "here", "--json", cwd=tmp_path)
    assert as_json.returncode == 0, as_json.stderr
    payload = json.loads(as_json.stdout)
    assert payload["versions"]["torch"] == {"old": "2.11.0+cu130", "new": here["torch"]}
    assert payload["versions"]["triton"] == {"old": "3.6.0", "new": here["triton"]}
    assert payload["versions"]["device"] == {"old": "cuda (NVIDIA H200)", "new": here["device"]}
    assert payload["versions_differ"] == ["torch", "triton"] + (["device"] if here["device"] != there["device"] else [])
    markdown = harvest("diff", str(showcase), "here", cwd=tmp_path)
    assert markdown.returncode == 0, markdown.stderr
    warning = markdown.stdout.splitlines()[2]
    assert warning.startswith(f"> **Not the same torch, Triton or device**: torch `2.11.0+cu130` → `{here['torch']}`, triton `3.6.0` → `{here['triton']}`")
    assert "not every difference below comes from the change under review" in warning
    assert "No fusion changes: the kernel holds the same ops." in markdown.stdout  # one kernel, said in the singular
    same = harvest("diff", "here", "here", "--json", cwd=tmp_path)
    assert json.loads(same.stdout)["versions_differ"] == []
    same = harvest("diff", "here", "here", "--max-kernels", "1", cwd=tmp_path)
    assert same.stdout.splitlines()[2] == f"Both runs: torch {here['torch']}, triton {here['triton']}, device {here['device']}."
    assert "`--max-kernels 1`: pass (1 Triton kernel in NEW)" in same.stdout and "Unchanged: 1 kernel (same ops;" in same.stdout
