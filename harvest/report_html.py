"""report.html: the extraction as one self-contained page, for a person exploring it in a browser.

    html = render_html(manifest, ReportInputs(capture=..., bench=..., modules={path: text}, plots={label: png}))

Everything the page needs is inside it (styles, the small filter script, the fusion graphs as SVG, sweep plots as
data: URIs), and its Content-Security-Policy lets it fetch nothing: it works from a file:// URL, offline, attached
to a pull request. Highlighting is pygments'. Pure: the same inputs give the same bytes.

What it shows: the summary of graphs (with graph breaks and recompiles named), what to tune first (tune_first.py),
one filterable table of every kernel, and per graph its fusion summary, its fusion graph and, per kernel, the user's
source lines, the FX ops it fused, its renamed kernel, its PTX figures and its sweep plot.

Its last part is the edge both reports share: what they read from an extraction (read_report_inputs), both texts
(report_texts, with report.py's render_report), and writing them again (refresh_reports after twin, ptx or bench;
report_command for `harvest report DIR`).
"""

from __future__ import annotations

import base64
import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from harvest.errors import OutputError, ParseError
from harvest.fusion_svg import fusion_svg
from harvest.module.file import read_module_file
from harvest.report import read_manifest, render_report
from harvest.report_lines import display_names, graph_bullets, heading, op_list, record_text, reference_text, target_ran
from harvest.report_ranks import rank_summary
from harvest.resources import load_template
from harvest.tune_first import EXTERN, rank_kernels, tune_cells, tune_heading
from harvest.writer import inside, previous_hashes, sha256, write_file, write_generated, write_manifest

HTML_TEMPLATE = "report.html.j2"
PLOT_LIMIT = 400_000  # bytes: a larger sweep plot is linked, not inlined


@dataclass(frozen=True)
class ReportInputs:
    """What the page shows beside the manifest: raw/capture.json, bench/bench.json, the modules' texts (by their path
    in the extraction) and the sweep plots (PNG bytes by "<graph>/<kernel>")."""

    capture: dict | None = None
    bench: dict | None = None
    modules: dict[str, str] = field(default_factory=dict)
    plots: dict[str, bytes] = field(default_factory=dict)


def anchor(*parts: str) -> str:
    """An id attribute for a graph or kernel section."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", "-".join(parts))


def inline_markdown(text: str) -> str:
    """The little markdown the fusion bullets use (`code`, **bold**) as HTML, everything else escaped."""
    escaped = html.escape(text, quote=False)
    escaped = re.sub(r"`([^`]*)`", r"<code>\1</code>", escaped)
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", escaped)


def bullet_items(lines: list[str]) -> list[dict]:
    """Markdown list lines ("- a", "  - b") as items with their sub-items."""
    items: list[dict] = []
    for line in lines:
        if line.startswith("  - ") and items:
            items[-1]["sub"].append(inline_markdown(line[4:]))
        elif line.startswith("- "):
            items.append({"text": inline_markdown(line[2:]), "sub": []})
    return items


def highlighted(code: str) -> str:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    return highlight(code, PythonLexer(), HtmlFormatter(cssclass="code"))


def highlight_css() -> str:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(cssclass="code").get_style_defs(".code")


def kernel_code(kernel: dict, modules: dict[str, str]) -> str:
    """The kernel as its module holds it (the region between the markers), or the whole module when that cannot be
    read, or "" without a module."""
    text = modules.get(kernel.get("module") or "")
    if not text:
        return ""
    try:
        return read_module_file(text, kernel["module"]).region.strip("\n") + "\n"
    except ParseError:  # an edited module that no longer parses is still shown, as it stands
        return text


def compile_notes(graphs: list[dict]) -> dict[str, str]:
    """Per graph, what its compile id says: a frame after the first (a graph break, or another compiled function)
    and a recompile (an attempt after the first: guards failed, shapes changed)."""
    notes = {}
    for graph in graphs:
        match = re.search(r"(\d+)/(\d+)", str(graph.get("compile_id") or ""))
        if not match:
            notes[graph["name"]] = ""
            continue
        frame, attempt = int(match.group(1)), int(match.group(2))
        said = [f"frame {frame}"] + ([f"recompile {attempt}"] if attempt else [])
        notes[graph["name"]] = ", ".join(said)
    return notes


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"


def bench_text(row: dict | None) -> str:
    if not row:
        return ""
    parts = []
    if row.get("extracted_ms") is not None:
        parts.append(f"module {_ms(row['extracted_ms'])} ms")
    if row.get("in_graph_ms") is not None:
        parts.append(f"in graph {_ms(row['in_graph_ms'])} ms")
    if row.get("extracted_over_in_graph") is not None:
        parts.append(f"ext/graph {row['extracted_over_in_graph']:.3f}")
    if row.get("twin_ms") is not None:
        parts.append(f"twin {_ms(row['twin_ms'])} ms")
    return ", ".join(parts)


def twin_text(twin: object) -> str:
    if not isinstance(twin, dict):
        return ""
    return "twin" if twin.get("status") == "ok" else f"{twin.get('status', '?')}: {twin.get('reason', '')}"


def ptx_figures(ptx: object) -> list[str]:
    if not isinstance(ptx, dict):
        return []
    lines = []
    for side in ("triton", "twin"):
        figures = ptx.get(side)
        if isinstance(figures, dict):
            lines.append(f"{side}: {figures.get('instructions', '?')} instructions, {figures.get('registers', '?')} registers, "
                         f"{figures.get('spill_bytes', '?')} B spilled, {figures.get('ld_global', '?')} ld.global")
    diff = ptx.get("diff")
    if isinstance(diff, dict):
        lines.append(f"PTX diff: -{diff.get('only_triton', '?')} / +{diff.get('only_twin', '?')} lines")
    return lines


def kernel_context(graph: dict, kernel: dict, inputs: ReportInputs, bench_rows: dict, ran: bool) -> dict:
    fusion = kernel.get("fusion") or {}
    lines = fusion.get("source_lines") if isinstance(fusion.get("source_lines"), list) else []
    label = f"{graph['name']}/{kernel.get('display_name') or kernel['name']}"
    plot = inputs.plots.get(label)
    row = bench_rows.get((graph["name"], kernel["name"]))
    ops = op_list(fusion.get("op_counts") or {})
    context = {
        "id": anchor("k", graph["name"], kernel["name"]),
        "graph": graph["name"],
        "name": kernel.get("display_name") or kernel["name"],
        "inductor": kernel["name"],
        "kind": kernel.get("kind", ""),
        "ops": ops,
        "fx_ops": [f"{n['name']} = {n['target']}" for n in fusion.get("fx_nodes") or [] if isinstance(n, dict)],
        "lines": [f"{line.get('file')}:{line.get('line')}  {line.get('code', '')}".rstrip() for line in lines if isinstance(line, dict)],
        "module": kernel.get("module") if not kernel.get("standalone_reason") else "",
        "why_not": kernel.get("standalone_reason") or ("" if kernel.get("module") else "no module written"),
        "record": record_text(kernel.get("recorded"), ran),
        "reference": reference_text(kernel.get("reference")),
        "twin": twin_text(kernel.get("twin")),
        "bench": bench_text(row),
        "code": highlighted(code) if (code := kernel_code(kernel, inputs.modules)) else "",
        "ptx": ptx_figures(kernel.get("ptx")),
        "ptx_tables": (kernel.get("ptx") or {}).get("tables", "") if isinstance(kernel.get("ptx"), dict) else "",
        "plot": "data:image/png;base64," + base64.b64encode(plot).decode("ascii") if plot and len(plot) <= PLOT_LIMIT else "",
    }
    context["search"] = " ".join([context["graph"], context["name"], context["inductor"], context["kind"], ops, *context["lines"]]).lower()
    return context


def render_html(manifest: dict, inputs: ReportInputs | None = None) -> str:
    """The text of report.html."""
    inputs = inputs or ReportInputs()
    ran = target_ran(manifest)
    bench_rows = {(r.get("graph", ""), r.get("inductor_kernel", "")): r for r in (inputs.bench or {}).get("rows") or []}
    graphs = [g for g in manifest.get("graphs", []) if g.get("fusion")]
    notes = compile_notes(graphs)
    frames = {n.split(",")[0] for n in notes.values() if n}
    recompiles = sum("recompile" in n for n in notes.values())
    graph_contexts = []
    for graph in graphs:
        display = display_names(graph)
        kernels = [kernel_context(graph, k, inputs, bench_rows, ran) for k in graph.get("kernels", [])]
        fusion = graph["fusion"]
        graph_contexts.append({
            "id": anchor("g", graph["name"]),
            "name": graph["name"],
            "role": graph.get("role", ""),
            "compile": notes.get(graph["name"], ""),
            "fusion": fusion,
            "externs": len(fusion.get("externs") or []),
            "bullets": bullet_items(graph_bullets(graph, display)),
            "svg": fusion_svg(fusion["flow"], display, lambda name, g=graph["name"]: "#" + anchor("k", g, name)) if fusion.get("flow") else "",
            "kernels": kernels,
        })
    table = rank_kernels(manifest, inputs.capture, inputs.bench)
    columns, cells = tune_cells(table)
    ids = {(r.graph, r.inductor_name): anchor("g", r.graph) if r.kind == EXTERN else anchor("k", r.graph, r.inductor_name) for r in table.rows}
    tune = [{"cells": row, "id": ids[(r.graph, r.inductor_name)]} for row, r in zip(cells, table.rows)]
    context = {
        **heading(manifest),
        "graphs": graph_contexts,
        "frames": len(frames),
        "recompiles": recompiles,
        "kernel_count": sum(len(g["kernels"]) for g in graph_contexts),
        "kinds": sorted({k["kind"] for g in graph_contexts for k in g["kernels"] if k["kind"]}),
        "tune_heading": inline_markdown(tune_heading(table)),
        "tune_columns": columns,
        "tune_rows": tune,
        "highlight_css": highlight_css(),
        "ranks": rank_summary(manifest),
    }
    text = load_template(HTML_TEMPLATE).render(page=context)
    return re.sub(r"[ \t]+\n", "\n", text)


# -- the edge: what the reports read from an extraction, and writing them again -------------------------------------


def read_json(path: Path) -> dict | None:
    """A JSON file harvest wrote (data: parsed, never run), or None when it is missing or not JSON."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_report_inputs(extraction: Path, manifest: dict, pending: dict[str, str] | None = None,
                       capture: dict | None = None, with_bench: bool = True) -> ReportInputs:
    """What the reports show beside the manifest: the files about to be written (pending) over those on disk, the
    capture record, bench/bench.json and the sweep plots (with_bench: False at extract time, whose kernels are new)."""
    pending = pending or {}
    modules = {}
    for graph in manifest.get("graphs", []):
        for kernel in graph.get("kernels", []):
            path = kernel.get("module")
            if not isinstance(path, str) or not inside(path):
                continue
            if path in pending:
                modules[path] = pending[path]
            else:
                try:
                    modules[path] = (extraction / path).read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    pass
    plots = {}
    bench = read_json(extraction / "bench" / "bench.json") if with_bench else None
    if with_bench:
        for graph in manifest.get("graphs", []):
            for kernel in graph.get("kernels", []):
                label = f"{graph['name']}/{kernel.get('display_name') or kernel['name']}"
                plot = extraction / "bench" / f"{label}.sweep.png"
                if inside(label) and plot.is_file():
                    plots[label] = plot.read_bytes()
    if capture is None:
        capture = read_json(extraction / "raw" / "capture.json")
    return ReportInputs(capture=capture, bench=bench, modules=modules, plots=plots)


def report_texts(manifest: dict, inputs: ReportInputs) -> dict[str, str]:
    """report.md and report.html of an extraction."""
    return {"report.md": render_report(manifest, inputs.capture, inputs.bench), "report.html": render_html(manifest, inputs)}


def refresh_reports(extraction: Path, manifest: dict) -> tuple[list[Path], list[str]]:
    """Write report.md and report.html again (after twin, ptx or bench changed what they show) through the writer's
    no-clobber rule: a report edited by hand since harvest wrote it is kept. The manifest's generated_files follow
    (the caller writes the manifest). Returns the files written and a note per file kept."""
    texts = report_texts(manifest, read_report_inputs(extraction, manifest))
    generated = manifest.setdefault("generated_files", {})
    writes = write_generated(extraction, texts, force=False, keep=set(generated) | set(previous_hashes(extraction)))
    if writes.failed:
        name, why = next(iter(sorted(writes.failed.items())))
        raise OutputError(f"cannot write {extraction / name}: {why}")
    for name, text in texts.items():
        if name not in writes.kept_edited:
            generated[name] = sha256(text)
    manifest["generated_files"] = dict(sorted(generated.items()))
    notes = [f"kept your edited {extraction / name} (`harvest report {extraction}` writes it again)" for name in writes.kept_edited]
    return [extraction / name for name in writes.written], notes


def report_command(extraction_dir: Path, formats: tuple[str, ...] = ("report.md", "report.html")) -> list[Path]:
    """`harvest report DIR`: write DIR/report.md and DIR/report.html again from DIR/manifest.json and what the
    extraction holds (raw/capture.json, bench/bench.json, the modules), and note their hashes in the manifest's
    generated_files where it keeps them; the target is not run."""
    extraction_dir = Path(extraction_dir)
    manifest = read_manifest(extraction_dir)
    texts = report_texts(manifest, read_report_inputs(extraction_dir, manifest))
    written = []
    for name in formats:
        out = extraction_dir / name
        try:
            write_file(out, texts[name])
        except OSError as exc:
            raise OutputError(f"cannot write {out}: {exc.strerror or exc}") from exc
        written.append(out)
    # The manifest's record of what harvest wrote follows, so a later extract does not take these for hand edits.
    generated = manifest.get("generated_files")
    if isinstance(generated, dict) and any(generated.get(name) != sha256(texts[name]) for name in formats):
        generated.update({name: sha256(texts[name]) for name in formats})
        manifest["generated_files"] = dict(sorted(generated.items()))
        write_manifest(extraction_dir, manifest)
    return written
