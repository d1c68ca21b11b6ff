"""report.md from manifests built over the recorded fixtures; the mermaid checked by mermaid's own parser."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import CPU_FIXTURES as CPU
from conftest import CUDA_FIXTURES as CUDA
from conftest import FIXTURES, ROOT  # noqa: F401

from harvest.errors import HarvestError, UsageError
from harvest.fusion import graph_fusion
from harvest.model import CapturedGraph, Graph
from harvest.parse import parse_output_code
from harvest.report import mermaid_flowchart, mermaid_id, mermaid_label, render_report
from harvest.report_html import report_command
from harvest.resources import TemplateNotFound, load_template

VALIDATE = ROOT / "scripts" / "validate_mermaid.sh"


# -- helpers shared with test_diff.py: manifests the way the extractor writes them ---------------------------------


def manifest_for(target: str, graphs: list[tuple[Graph, dict]], mode: str = "cpu-triton") -> dict:
    """A manifest with the fields report/diff read, built from parsed graphs and their provenance."""
    entries = []
    for graph, provenance in graphs:
        fusion = graph_fusion(graph, provenance)
        kernels = [
            {
                "name": kf.kernel,
                "display_name": kf.kernel.replace("triton_", "", 1),
                "kind": kf.kind,
                "module": f"{graph.name}/{kf.kernel}.py",
                "standalone_reason": None,
                "fusion": kf.to_json(),
            }
            for kf in fusion.kernel_fusions
        ]
        externs = [{"op": e.op, "args": list(e.args), "out": e.out, "order": e.order} for e in graph.externs]
        entries.append(
            {"name": graph.name, "role": graph.role, "aot_id": graph.aot_id, "kernels": kernels, "externs": externs,
             "fusion": fusion.to_json()}
        )  # fmt: skip
    return {
        "harvest_version": "0.1.0",
        "target": target,
        "command": ["harvest", "extract", target],
        "mode": mode,
        "torch": "test",
        "triton": "test",
        "gpu": "",
        "graphs": entries,
    }


def fixture_graphs(case: Path) -> list[tuple[Graph, dict]]:
    """Parsed graphs of a recorded fixture with the provenance artifacts its events.jsonl holds."""
    events = [json.loads(line) for line in (case / "events.jsonl").read_text().splitlines() if line.strip()]
    meta = {e["index"]: e for e in events if e["event"] == "graph"}
    provenance: dict[int, dict] = {}
    for e in events:
        if e["event"] == "artifact":
            provenance.setdefault(e["graph"], {})[e["name"]] = e["value"]
    out = []
    for path in sorted(case.glob("graph_*.py")):
        index = int(path.stem.split("_")[1])
        captured = CapturedGraph(index, meta[index]["aot_id"], meta[index]["compile_id"], path.read_text())
        out.append((parse_output_code(captured.source, captured.name, captured.role), provenance.get(index, {})))
    return out


def fixture_manifest(case: Path) -> dict:
    return manifest_for(f"examples/{case.name}.py", fixture_graphs(case))


# -- tests ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("root", [CPU, CUDA], ids=["cpu", "cuda"])
def test_square_square_report_says_one_kernel_for_two_pows(root):
    text = render_report(fixture_manifest(root / "square_square"))
    assert "1 kernel for 2 pow ops" in text
    assert "| poi_fused_pow_0 | `triton_poi_fused_pow_0` | pointwise | 2x pow | 1 / 1 / 0 |" in text
    assert "`examples/square_square.py:12` `return torch.square(torch.square(x))`" in text


@pytest.mark.parametrize("root", [CPU, CUDA], ids=["cpu", "cuda"])
def test_small_model_report_has_every_kernel_and_extern(root):
    manifest = fixture_manifest(root / "small_model")
    text = render_report(manifest)
    for graph in manifest["graphs"]:
        assert f"## {graph['name']}" in text
        for kernel in graph["kernels"]:
            row = [line for line in text.splitlines() if f"| `{kernel['name']}` |" in line]
            assert len(row) == 1, kernel["name"]
            assert f"[{kernel['module']}]({kernel['module']})" in row[0]
    assert text.count("```mermaid") == 2
    assert "`extern_kernels.addmm` writes" in text
    assert "`examples/small_model.py:22` `h = self.ln(x)`" in text  # layer norm kernel's user line


def test_report_is_deterministic():
    manifest = fixture_manifest(CPU / "small_model")
    assert render_report(manifest) == render_report(json.loads(json.dumps(manifest)))


def test_report_without_provenance_says_unknown():
    [(graph, _)] = fixture_graphs(CPU / "square_square")
    text = render_report(manifest_for("x.py", [(graph, {})]))
    assert "| unknown |" in text
    assert "Source lines: unknown" in text


def test_mermaid_ids_and_labels_are_safe():
    assert mermaid_id("extern_kernels.mm[0]") == "extern_kernels_mm_0_"
    assert mermaid_id("0abc") == "n_0abc"
    assert mermaid_label('say "hi" <b>') == '"say #quot;hi#quot; #lt;b#gt;"'


def test_mermaid_flowchart_edges_follow_data():
    manifest = fixture_manifest(CPU / "square_square")
    chart = mermaid_flowchart(manifest["graphs"][0])
    assert chart.splitlines()[0] == "flowchart TD"
    assert 'in(["graph inputs"]):::io' in chart
    assert 'in -->|"arg0_1"| k0' in chart
    assert 'k0 -->|"buf0"| out' in chart
    assert "2x pow" in chart and "square_square.py:12" in chart


def test_unknown_template_lists_available():
    with pytest.raises(TemplateNotFound, match="report.md.j2") as info:
        load_template("nope.md.j2")
    assert isinstance(info.value, HarvestError)


def test_report_command_rewrites_report(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps(fixture_manifest(CPU / "square_square")))
    paths = report_command(tmp_path)
    assert paths == [tmp_path / "report.md", tmp_path / "report.html"]
    assert "1 kernel for 2 pow ops" in paths[0].read_text()
    assert "1 kernel for 2 pow ops" in paths[1].read_text()  # the module is missing here: its section says nothing of it
    assert report_command(tmp_path, ("report.html",)) == [tmp_path / "report.html"]


def test_counts_of_one_are_said_in_the_singular():
    """report.md said "1 of 1 kernels translated"; one of anything is singular, as the fusion summary already was."""
    one = json.loads((ROOT / "extracted/h200/square_square/manifest.json").read_text())
    text = render_report(one)
    assert "From `harvest twin`: 1 of 1 kernel translated to CUDA C++." in text and "1 kernels" not in text
    assert "**1 kernel for 2 pow ops**" in text
    many = render_report(json.loads((ROOT / "extracted/h200/small_model/manifest.json").read_text()))
    assert "From `harvest twin`: 13 of 13 kernels translated to CUDA C++." in many
    assert "- Triton kernels after fusion: 9 (11 launches: Inductor reuses a kernel whose code is identical)" in many


def test_report_command_without_manifest(tmp_path):
    with pytest.raises(UsageError, match="no manifest.json"):
        report_command(tmp_path)


def _validate(report: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(VALIDATE), str(report), str(out)], capture_output=True, text=True, timeout=300)


@pytest.mark.requires_mmdc
@pytest.mark.parametrize("root", [CPU, CUDA], ids=["cpu", "cuda"])
def test_mermaid_parses_with_mermaid_cli(root, tmp_path):
    report = tmp_path / "report.md"
    report.write_text(render_report(fixture_manifest(root / "small_model")))
    done = _validate(report, tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in (tmp_path / "out").glob("*.png")) == ["block_01.png", "block_02.png"]


@pytest.mark.requires_mmdc
def test_mermaid_cli_rejects_a_broken_chart(tmp_path):
    report = tmp_path / "report.md"
    report.write_text("# x\n\n```mermaid\nflowchart TD\n    a[\"unclosed --> b\n```\n")
    done = _validate(report, tmp_path / "out")
    assert done.returncode != 0
    assert "FAIL" in done.stderr
