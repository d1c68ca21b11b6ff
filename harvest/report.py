"""report.md: the fusion summary, one table row per kernel and a mermaid fusion graph per graph, from manifest.json.

    text = render_report(manifest)          # pure: manifest dict -> markdown
    manifest = read_manifest(Path("extracted/small_model"))   # DIR/manifest.json, checked to be harvest's

The report is built only from the manifest (its "fusion" fields come from harvest.fusion), so it can be re-rendered
without running the target (`harvest report DIR`: report_html.report_command). The lines report.html shows too come
from report_lines.py. Output is deterministic: no timestamps, manifest order throughout.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harvest.errors import ParseError, UsageError
from harvest.report_lines import (
    display_names,
    graph_bullets,
    heading,
    op_list,
    record_text,
    reference_text,
    source_text,
    target_ran,
)
from harvest.report_ranks import rank_markdown, rank_summary
from harvest.resources import load_template
from harvest.text_output import md_cell, plural
from harvest.tune_first import rank_kernels, tune_markdown
from harvest.writer import inside

REPORT_TEMPLATE = "report.md.j2"
_OPS_PER_LINE = 4
TUNE_TOP = 10  # kernels in report.md's "What to tune first" (report.html lists them all)


# --------------------------------------------------------------------------------------------- mermaid


def mermaid_label(text: str) -> str:
    """A quoted mermaid label: quotes and markup characters as entity codes, so no label can break the parser."""
    for char, code in (("&", "#amp;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;")):
        text = text.replace(char, code)
    return f'"{text}"'


def mermaid_id(node_id: str) -> str:
    """A node id mermaid accepts: letters, digits and underscores only."""
    safe = re.sub(r"\W", "_", node_id)
    return safe if safe[:1].isalpha() else f"n_{safe}"


def _wrap_ops(ops: list[str]) -> list[str]:
    return [", ".join(ops[i : i + _OPS_PER_LINE]) for i in range(0, len(ops), _OPS_PER_LINE)]


def mermaid_flowchart(graph: dict[str, Any]) -> str:
    """The fusion graph of one manifest graph: kernels (with their ops), extern calls, inputs and outputs."""
    flow = graph["fusion"]["flow"]
    display = display_names(graph)
    lines = ["flowchart TD"]
    for node in flow["nodes"]:
        node_id = mermaid_id(node["id"])
        where = _html(", ".join(node.get("lines", [])))
        if node["kind"] == "kernel":
            name = display.get(node["name"], node["name"])
            parts = [f"<b>{_html(name)}</b>"]
            if name != node["name"]:
                parts.append(f"<i>{_html(node['name'])}</i>")
            parts += [_html(line) for line in _wrap_ops(node["ops"])]
            parts += [f"<small>{where}</small>"] if where else []
            lines.append(f"    {node_id}[{_quoted_html('<br/>'.join(parts))}]:::kernel")
        elif node["kind"] == "extern":
            parts = [f"<b>{_html(node['name'])}</b>", "extern call"] + ([f"<small>{where}</small>"] if where else [])
            lines.append(f"    {node_id}[[{_quoted_html('<br/>'.join(parts))}]]:::extern")
        else:
            lines.append(f"    {node_id}([{mermaid_label(node['name'])}]):::io")
    for edge in flow["edges"]:
        buffers = edge["buffers"]
        label = ", ".join(buffers) if len(buffers) <= 3 else f"{len(buffers)} buffers"
        lines.append(f"    {mermaid_id(edge['src'])} -->|{mermaid_label(label)}| {mermaid_id(edge['dst'])}")
    lines += [
        "    classDef kernel fill:#e8f1fb,stroke:#2f6db5,color:#111",
        "    classDef extern fill:#fdf1e3,stroke:#c07a1c,color:#111",
        "    classDef io fill:#f2f2f2,stroke:#888,color:#111",
    ]
    return "\n".join(lines)


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _quoted_html(markup: str) -> str:
    """A quoted label that keeps our own <b>/<br/> tags: only quotes need escaping (text was HTML-escaped)."""
    return '"' + markup.replace('"', "#quot;") + '"'


# ---------------------------------------------------------------------------------------------- report


def _kernel_row(kernel: dict[str, Any], ran: bool = False) -> dict[str, str]:
    fusion = kernel.get("fusion") or {}
    counts = "/".join(str(fusion.get(key, "?")) for key in ("loads", "stores", "reductions"))
    if kernel.get("module") and not kernel.get("standalone_reason"):
        link = f"[{kernel['module']}]({kernel['module']})"
    else:
        link = f"not standalone: {kernel.get('standalone_reason') or 'no module written'}"
    ops = op_list(fusion.get("op_counts", {})) or "unknown"
    if fusion.get("launches", 1) > 1:
        ops += f" (launched {fusion['launches']}x)"
    return {
        "name": kernel["name"],
        "display_name": kernel.get("display_name") or kernel["name"],
        "kind": kernel.get("kind", ""),
        "ops": ops,
        "counts": counts.replace("/", " / "),
        "lines": source_text(fusion.get("source_lines")),
        "link": link,
        "record": record_text(kernel.get("recorded"), ran),
        "reference": reference_text(kernel.get("reference")),
    }


def _graph_context(graph: dict[str, Any], ran: bool = False) -> dict[str, Any]:
    display = display_names(graph)
    return {
        "name": graph["name"],
        "role": graph.get("role", "unknown"),
        "anchor": re.sub(r"[^a-z0-9_-]", "", graph["name"].lower()),
        "fusion": graph["fusion"],
        "bullets": graph_bullets(graph, display),
        "kernels": [_kernel_row(k, ran) for k in graph.get("kernels", [])],
        "mermaid": mermaid_flowchart(graph),
    }


def render_report(manifest: dict, capture: dict | None = None, bench: dict | None = None) -> str:
    """report.md text for a manifest (as written by harvest's manifest writer); with the run's raw/capture.json and
    bench/bench.json, its "What to tune first" section is ranked by their figures (tune_first.py)."""
    ran = target_ran(manifest)
    graphs = [_graph_context(g, ran) for g in manifest.get("graphs", []) if g.get("fusion")]
    text = load_template(REPORT_TEMPLATE, {"md": md_cell}).render(m=heading(manifest), graphs=graphs)
    text = re.sub(r"\n{3,}", "\n\n", text).rstrip("\n") + "\n"
    tune = tune_markdown(rank_kernels(manifest, capture, bench), top=TUNE_TOP)
    for section in (rank_markdown(rank_summary(manifest)), tune, twin_section(manifest), ptx_section(manifest), runs_section(manifest)):
        if section:
            text += "\n" + section
    return text


def kernel_entries(manifest: dict, key: str) -> Iterator[tuple[dict, dict]]:
    """(kernel entry, its entry under `key`) for each kernel of the manifest that holds a dict there ("twin", "ptx")."""
    for graph in manifest.get("graphs", []):
        for kernel in graph.get("kernels", []):
            if isinstance(kernel.get(key), dict):
                yield kernel, kernel[key]


def table_section(heading: str, intro: tuple[str, ...], columns: str, alignment: str, rows: list[str]) -> str:
    """A report section that is a heading, a paragraph and a markdown table; "" without rows."""
    if not rows:
        return ""
    return "\n".join([heading, "", *intro, "", columns, alignment, *rows]) + "\n"


def twin_section(manifest: dict) -> str:
    """The "CUDA twins" section: per kernel, its twin's files or why it has none; "" before `harvest twin` ran."""
    rows = []
    for kernel, twin in kernel_entries(manifest, "twin"):
        name = md_cell(kernel.get("display_name") or kernel["name"])
        if twin.get("status") == "ok":
            files = f"[{Path(str(twin.get('cuda'))).name}]({twin.get('cuda')}), [{Path(str(twin.get('module'))).name}]({twin.get('module')})"
            rows.append(f"| {name} | {md_cell(kernel.get('kind', '?'))} | twin ({md_cell(twin.get('shape', '?'))}) | {files} |")
        else:
            rows.append(f"| {name} | {md_cell(kernel.get('kind', '?'))} | {md_cell(twin.get('status', '?'))}: {md_cell(twin.get('reason', ''))} | |")
    translated = sum("| twin (" in row for row in rows)
    intro = (
        f"From `harvest twin`: {translated} of {plural(len(rows), 'kernel')} translated to CUDA C++. Each twin module builds with",
        "load_inline and checks against the run's record: `python <graph>/twin/<kernel>_twin.py --check` (GPU).",
    )
    return table_section("## CUDA twins", intro, "| Kernel | Kind | Twin | Files |", "|---|---|---|---|", rows)


def runs_section(manifest: dict) -> str:
    """The "Runs with edits" section: one line per `harvest run --with` (its manifest "runs" entry); "" when none."""
    runs = [r for r in manifest.get("runs") or [] if isinstance(r, dict)]
    if not runs:
        return ""
    lines = ["## Runs with edits", "", "From `harvest run TARGET --with DIR`: the target with edited modules in place of "
             "Inductor's kernels, every graph output compared with a run of Inductor's own.", ""]
    for run in runs:
        verdict = "results equal" if run.get("equal") else "results **differ**"
        modules = ", ".join(f"`{m}`" for m in run.get("modules", []))
        lines.append(f"- [run {run.get('number')}]({run.get('report')}): {modules}: {verdict}")
    return "\n".join(lines) + "\n"


def _ptx_side(side: dict[str, Any] | None) -> tuple[str, str]:
    """(instructions / registers / spilled bytes, global loads) of one side of a kernel's "ptx" entry."""
    if not side:
        return "—", "—"
    figures = f"{side.get('instructions', '?')} / {side.get('registers', '?')} / {side.get('spill_bytes', '?')} B"
    return figures, str(side.get("ld_global", "?"))


def ptx_section(manifest: dict) -> str:
    """The "PTX" section: one row per kernel `harvest ptx` compiled (its manifest entry's "ptx"); "" when none."""
    rows, arches = [], set()
    for kernel, ptx in kernel_entries(manifest, "ptx"):
        arches.add(ptx.get("arch", "?"))
        triton, triton_loads = _ptx_side(ptx.get("triton"))
        twin, twin_loads = _ptx_side(ptx.get("twin"))
        diff = ptx.get("diff")
        compared = f"-{diff['only_triton']} / +{diff['only_twin']} lines" if diff else md_cell(ptx.get("twin_note", "no twin"))
        tables = f"[{Path(ptx['tables']).name}]({ptx['tables']})" if ptx.get("tables") else ""
        name = md_cell(kernel.get("display_name") or kernel["name"])
        rows.append(f"| {name} | {triton} | {md_cell(triton_loads)} | {twin} | {md_cell(twin_loads)} | {compared} | {tables} |")
    intro = (
        "From `harvest ptx`: each kernel's Triton PTX compiled offline, its CUDA twin's through nvcc; static counts,",
        "registers and spills from `ptxas -v`. Instructions / registers / spilled bytes; the diff is of the normalised PTX.",
    )
    return table_section(f"## PTX ({', '.join(sorted(arches))})", intro,
                         "| Kernel | Triton | Triton ld.global | Twin | Twin ld.global | PTX diff (Triton / twin) | Tables |",
                         "|---|--:|---|--:|---|---|---|", rows)


def read_manifest(extraction_dir: Path) -> dict:
    """DIR/manifest.json as a dict, with errors that say what to do."""
    path = Path(extraction_dir) / "manifest.json"
    if not path.is_file():
        raise UsageError(f"no manifest.json in {extraction_dir}: pass a directory written by `harvest extract`")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ParseError(f"{path} is not valid JSON ({exc}); re-run `harvest extract` to rewrite it") from exc
    problem = manifest_problem(manifest)
    if problem:
        raise ParseError(f"{path} is not a manifest harvest wrote ({problem}); run `harvest extract {extraction_dir}` to rewrite it from raw/")
    return manifest


def manifest_problem(manifest: object) -> str:
    """What is wrong with a manifest edited by hand (or someone else's), or "" when its shape is harvest's.

    Checked before anything reads it: every module path stays inside the extraction, since commands write beside it.
    """
    if not isinstance(manifest, dict) or not isinstance(manifest.get("graphs"), list):
        return "no list of graphs"
    for graph in manifest["graphs"]:
        if not isinstance(graph, dict) or not isinstance(graph.get("name"), str) or not isinstance(graph.get("kernels"), list):
            return f"graph entry {str(graph)[:60]!r} has no name or kernels"
        for kernel in graph["kernels"]:
            if not isinstance(kernel, dict) or not isinstance(kernel.get("name"), str):
                return f"kernel entry {str(kernel)[:60]!r} in {graph['name']} has no name"
            module = kernel.get("module")
            if module is not None and not (isinstance(module, str) and inside(module)):
                return f"module {module!r} of kernel {kernel['name']} points outside the extraction"
    return ""
