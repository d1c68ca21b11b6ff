"""The lines report.md and report.html both show, from manifest dicts: the page's heading, a graph's fusion bullets,
and a kernel's ops, record and reference. report.py writes them as markdown, report_html.py as HTML; neither
imports the other for them.
"""

from __future__ import annotations

from typing import Any

from harvest.text_output import plural


def heading(manifest: dict) -> dict[str, str]:
    """The target, the versions line and the command the extraction ran, as both reports head their page."""
    versions = [f"harvest {manifest.get('harvest_version', '?')}", f"torch {manifest.get('torch', '?')}",
                f"triton {manifest.get('triton', '?')}", f"mode {manifest.get('mode', '?')}", f"GPU {manifest.get('gpu') or 'none'}"]
    command = manifest.get("command") or []
    return {
        "target": manifest.get("target", "?"),
        "versions": " · ".join(versions),
        "command": " ".join(command) if isinstance(command, list) else str(command),
    }


def target_ran(manifest: dict) -> bool:
    """The extraction ran a target (not only read an artifact), so a kernel without a record was never launched."""
    return manifest.get("mode") not in (None, "artifact")


def display_names(graph: dict[str, Any]) -> dict[str, str]:
    """Inductor's kernel name -> the name the reports show (its module's readable name)."""
    return {k["name"]: k.get("display_name") or k["name"] for k in graph.get("kernels", [])}


def source_text(lines: Any) -> str:
    """User source lines as "`file:line` `code`; ...", or "unknown"."""
    if not lines or lines == "unknown":
        return "unknown"
    out = []
    for line in lines:
        loc = f"{line['file']}:{line['line']}"
        out.append(f"`{loc}` `{line['code']}`" if line.get("code") else f"`{loc}`")
    return "; ".join(out)


def op_list(counts: dict[str, int]) -> str:
    """ATen op counts as "2x mul, add", the most frequent first."""
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{n}x {op}" if n > 1 else op for op, n in items)


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
        lines.append(f"  - `{e['op']}` writes `{e.get('out')}`, from {source_text(e.get('source_lines'))}")
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
