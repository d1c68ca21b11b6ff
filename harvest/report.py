"""report.md: the fusion summary, one table row per kernel and a mermaid fusion graph per graph, from manifest.json.

    text = render_report(manifest)          # pure: manifest dict -> markdown
    path = report_command(Path("extracted/small_model"))   # `harvest report DIR`: re-render DIR/report.md

The report is built only from the manifest (its "fusion" fields come from harvest.fusion), so it can be re-rendered
without running the target. Output is deterministic: no timestamps, manifest order throughout.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from harvest.errors import OutputError, ParseError, UsageError
from harvest.resources import TemplateNotFound, available_templates, load_template  # noqa: F401 (re-exported)
from harvest.report_ranks import rank_markdown, rank_summary
from harvest.text_output import md_cell, plural
from harvest.tune_first import rank_kernels, tune_markdown
from harvest.writer import inside, write_file

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
    display = {k["name"]: k.get("display_name") or k["name"] for k in graph.get("kernels", [])}
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


def _source_text(lines: Any, with_code: bool = True) -> str:
    if not lines or lines == "unknown":
        return "unknown"
    out = []
    for line in lines:
        loc = f"{line['file']}:{line['line']}"
        out.append(f"`{loc}` `{line['code']}`" if with_code and line.get("code") else f"`{loc}`")
    return "; ".join(out)


def op_list(counts: dict[str, int]) -> str:
    """ATen op counts as "2x mul, add", the most frequent first."""
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{n}x {op}" if n > 1 else op for op, n in items)


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
        "lines": _source_text(fusion.get("source_lines")),
        "link": link,
        "record": record_text(kernel.get("recorded"), ran),
        "reference": reference_text(kernel.get("reference")),
    }


def reference_text(reference: dict[str, Any] | None) -> str:
    """Which outputs the eager reference compares (and what it was built from); each other output with its reason."""
    if not reference:
        return "none"
    outputs = reference.get("outputs", {})
    compared = [name for name, what in outputs.items() if what == "compared"]
    text = f"{len(compared)} of {plural(len(outputs), 'output')} (from the {reference.get('built_from', '?')})"
    missing = [f"{name}: {why}" for name, why in outputs.items() if why != "compared"]
    return text + ("; " + "; ".join(missing) if missing else "")


def record_text(recorded: dict[str, Any] | None, ran: bool = False) -> str:
    """What the run recorded of a kernel: its launches and whether their data is there for --check."""
    if not recorded:  # a run that failed after compiling a graph (a backward) never launched its kernels
        return "no launch recorded: the run failed before one finished" if ran else "no run (artifact)"
    launches = f"{recorded['launches']} launch" + ("es" if recorded["launches"] != 1 else "")
    if recorded.get("distinct", 1) > 1:
        launches += f" ({recorded['distinct']} distinct)"
    if recorded.get("data"):
        return f"{launches}, data saved ({_size(recorded.get('data_bytes', 0))} of tensors)"
    return f"{launches}, {recorded.get('note') or 'layouts only'}"


def _size(count: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if count < 1024:
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} GiB"


def graph_bullets(graph: dict[str, Any], display: dict[str, str]) -> list[str]:
    """The fusion summary of one graph as markdown list lines (sub-items indented)."""
    fusion = graph["fusion"]
    ops = op_list(fusion.get("ops_before", {}))
    lines = [f"- ATen ops before fusion: {fusion.get('ops_before_total', 0)}" + (f" ({ops})" if ops else "")]
    kernels = f"- Triton kernels after fusion: {fusion.get('triton_kernels', 0)}"
    if fusion.get("launches") != fusion.get("triton_kernels"):
        kernels += f" ({plural(fusion.get('launches') or 0, 'launch', 'launches')}: Inductor reuses a kernel whose code is identical)"
    lines.append(kernels)
    externs = fusion.get("externs", [])
    lines.append(f"- Extern calls: {len(externs) or 'none'}")
    for e in externs:
        lines.append(f"  - `{e['op']}` writes `{e.get('out')}`, from {_source_text(e.get('source_lines'))}")
    unfused = fusion.get("unfused", [])
    lines.append(f"- Ops that did not fuse: {len(unfused) or 'none'}")
    grouped: dict[tuple[str, str, str, str], int] = {}
    for u in unfused:  # identical entries (two addmm extern calls) become one line with a count
        key = (u["op"], u["how"], display.get(u["where"], u["where"]), u["reason"])
        grouped[key] = grouped.get(key, 0) + 1
    for (op, how, where, reason), n in grouped.items():
        lines.append(f"  - `{op}`{f' ×{n}' if n > 1 else ''}: {how} (`{where}`): {reason}")
    boundaries = fusion.get("boundaries", [])
    if boundaries:
        lines.append("- Kernel boundaries (a buffer one kernel writes and another reads):")
    for b in boundaries:
        producer, consumer = display.get(b["producer"], b["producer"]), display.get(b["consumer"], b["consumer"])
        lines.append(f"  - `{producer}` -> `{consumer}` via {', '.join(b['buffers'])}: {b['reason']}")
    if not fusion.get("provenance"):
        lines.append("- Source lines: unknown (the capture holds no provenance artifacts for this graph)")
    return lines


def _graph_context(graph: dict[str, Any], ran: bool = False) -> dict[str, Any]:
    display = {k["name"]: k.get("display_name") or k["name"] for k in graph.get("kernels", [])}
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
    versions = [f"harvest {manifest.get('harvest_version', '?')}", f"torch {manifest.get('torch', '?')}"]
    versions.append(f"triton {manifest.get('triton', '?')}")
    versions.append(f"mode {manifest.get('mode', '?')}")
    versions.append(f"GPU {manifest.get('gpu') or 'none'}")
    command = manifest.get("command") or []
    context = {
        "target": manifest.get("target", "?"),
        "versions": " · ".join(versions),
        "command": " ".join(command) if isinstance(command, list) else str(command),
    }
    ran = manifest.get("mode") not in (None, "artifact")
    graphs = [_graph_context(g, ran) for g in manifest.get("graphs", []) if g.get("fusion")]
    text = load_template(REPORT_TEMPLATE, {"md": md_cell}).render(m=context, graphs=graphs)
    text = re.sub(r"\n{3,}", "\n\n", text).rstrip("\n") + "\n"
    tune = tune_markdown(rank_kernels(manifest, capture, bench), top=TUNE_TOP)
    for section in (rank_markdown(rank_summary(manifest)), tune, twin_section(manifest), ptx_section(manifest), runs_section(manifest)):
        if section:
            text += "\n" + section
    return text


def twin_section(manifest: dict) -> str:
    """The "CUDA twins" section: per kernel, its twin's files or why it has none; "" before `harvest twin` ran."""
    rows = []
    for graph in manifest.get("graphs", []):
        for kernel in graph.get("kernels", []):
            twin = kernel.get("twin")
            if not isinstance(twin, dict):
                continue
            name = md_cell(kernel.get("display_name") or kernel["name"])
            if twin.get("status") == "ok":
                files = f"[{Path(str(twin.get('cuda'))).name}]({twin.get('cuda')}), [{Path(str(twin.get('module'))).name}]({twin.get('module')})"
                rows.append(f"| {name} | {md_cell(kernel.get('kind', '?'))} | twin ({md_cell(twin.get('shape', '?'))}) | {files} |")
            else:
                rows.append(f"| {name} | {md_cell(kernel.get('kind', '?'))} | {md_cell(twin.get('status', '?'))}: {md_cell(twin.get('reason', ''))} | |")
    if not rows:
        return ""
    translated = sum("| twin (" in row for row in rows)
    lines = [
        "## CUDA twins",
        "",
        f"From `harvest twin`: {translated} of {plural(len(rows), 'kernel')} translated to CUDA C++. Each twin module builds with",
        "load_inline and checks against the run's record: `python <graph>/twin/<kernel>_twin.py --check` (GPU).",
        "",
        "| Kernel | Kind | Twin | Files |",
        "|---|---|---|---|",
    ]
    return "\n".join(lines + rows) + "\n"


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
    for graph in manifest.get("graphs", []):
        for kernel in graph.get("kernels", []):
            ptx = kernel.get("ptx")
            if not isinstance(ptx, dict):
                continue
            arches.add(ptx.get("arch", "?"))
            triton, triton_loads = _ptx_side(ptx.get("triton"))
            twin, twin_loads = _ptx_side(ptx.get("twin"))
            diff = ptx.get("diff")
            compared = f"-{diff['only_triton']} / +{diff['only_twin']} lines" if diff else md_cell(ptx.get("twin_note", "no twin"))
            tables = f"[{Path(ptx['tables']).name}]({ptx['tables']})" if ptx.get("tables") else ""
            name = md_cell(kernel.get("display_name") or kernel["name"])
            rows.append(f"| {name} | {triton} | {md_cell(triton_loads)} | {twin} | {md_cell(twin_loads)} | {compared} | {tables} |")
    if not rows:
        return ""
    lines = [
        f"## PTX ({', '.join(sorted(arches))})",
        "",
        "From `harvest ptx`: each kernel's Triton PTX compiled offline, its CUDA twin's through nvcc; static counts,",
        "registers and spills from `ptxas -v`. Instructions / registers / spilled bytes; the diff is of the normalised PTX.",
        "",
        "| Kernel | Triton | Triton ld.global | Twin | Twin ld.global | PTX diff (Triton / twin) | Tables |",
        "|---|--:|---|--:|---|---|---|",
    ]
    return "\n".join(lines + rows) + "\n"


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


def report_command(extraction_dir: Path, formats: tuple[str, ...] = ("report.md", "report.html")) -> list[Path]:
    """`harvest report DIR`: write DIR/report.md and DIR/report.html again from DIR/manifest.json and what the
    extraction holds (raw/capture.json, bench/bench.json, the modules), and note their hashes in the manifest's
    generated_files where it keeps them; the target is not run."""
    from harvest.report_html import read_report_inputs, report_texts
    from harvest.writer import sha256, write_manifest

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
