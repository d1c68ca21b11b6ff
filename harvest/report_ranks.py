"""The "Ranks" section of a torchrun job's reports: what each rank compiled, and what differs between them.

    summary = rank_summary(manifest)        # pure: manifest dict -> RankSummary (None for a one-process run)
    text = rank_markdown(summary)           # report.md's section; report.html shows the same rows

Built from the manifest alone (graph and kernel entries list their ranks: harvest.capture.ranks and
harvest.module.shared). Graphs are matched between ranks by compile id and AOT id, kernels within one graph's
variants by their readable name.
"""

from __future__ import annotations

from dataclasses import dataclass

from harvest.capture.ranks import ranks_text
from harvest.ops import is_collective, op_short_name
from harvest.text_output import md_cell, plural


@dataclass(frozen=True)
class RankRow:
    rank: int
    graphs: int
    kernels: int
    own_modules: int  # modules only this rank's compile stands behind
    recompiles: int
    collectives: tuple[str, ...]  # extern calls that are collectives (functional c10d ops in the graph)


@dataclass(frozen=True)
class RankSummary:
    rows: tuple[RankRow, ...]
    differences: tuple[str, ...]  # one line each, plain text; () when every rank compiled the same


def rank_summary(manifest: dict) -> RankSummary | None:
    ranks = [int(r) for r in manifest.get("ranks") or []]
    if not ranks:
        return None
    graphs = [g for g in manifest.get("graphs", []) if isinstance(g, dict)]
    rows = []
    for rank in ranks:
        mine = [g for g in graphs if rank in g.get("ranks", [])]
        rows.append(RankRow(
            rank=rank, graphs=len(mine), kernels=sum(len(g.get("kernels", [])) for g in mine),
            own_modules=len({k["module"] for g in mine for k in g.get("kernels", []) if k.get("module") and k.get("ranks") == [rank]}),
            recompiles=sum(1 for g in mine if str(g.get("compile_id", "")).split("/")[-1] not in ("0", "")),
            collectives=tuple(sorted({op_short_name(e["op"]) for g in mine for e in g.get("externs", []) if is_collective(e.get("op", ""))})),
        ))
    return RankSummary(tuple(rows), tuple(differences(graphs, ranks)))


def differences(graphs: list[dict], ranks: list[int]) -> list[str]:
    groups: dict[tuple[str, str], list[dict]] = {}
    for graph in graphs:
        groups.setdefault((str(graph.get("compile_id", "")), str(graph.get("aot_id", ""))), []).append(graph)
    lines = []
    for (compile_id, aot_id), variants in groups.items():
        covered = sorted(r for g in variants for r in g.get("ranks", []))
        label = f"compile {compile_id or '?'} ({aot_id or 'unknown'})"
        if len(variants) == 1 and covered == ranks:
            continue
        missing = [r for r in ranks if r not in covered]
        if len(variants) == 1:
            lines.append(f"{label}: {variants[0]['name']} compiled on {ranks_text(covered)} only, not on {ranks_text(missing)} "
                         "(a recompile, a graph break or a code path of those ranks)")
            continue
        parts = [f"{ranks_text(g.get('ranks', []))}: {g['name']}" for g in variants]
        line = f"{label}: compiled differently ({'; '.join(parts)})"
        if missing:
            line += f"; not compiled on {ranks_text(missing)}"
        lines.append(line + kernel_differences(variants))
    return lines


def kernel_differences(variants: list[dict]) -> str:
    """The kernels written once for every variant, those of some variants only, and configs or grids that differ."""
    by_name: dict[str, list[tuple[dict, dict]]] = {}
    for graph in variants:
        for kernel in graph.get("kernels", []):
            by_name.setdefault(kernel.get("display_name") or kernel["name"], []).append((graph, kernel))
    shared = [name for name, held in by_name.items() if len(held) == len(variants) and len({k.get("module") for _, k in held}) == 1]
    parts = []
    if shared:
        parts.append(f"the same on every rank, written once: {', '.join(shared)}")
    for graph in variants:
        only = [name for name, held in by_name.items() if len(held) < len(variants) and any(g is graph for g, _ in held)]
        if only:
            parts.append(f"only on {ranks_text(graph.get('ranks', []))}: {', '.join(only)}")
    collectives = {ranks_text(g.get("ranks", [])): ", ".join(op_short_name(e["op"]) for e in g.get("externs", [])
                                                          if is_collective(e.get("op", ""))) or "none"
                   for g in variants}
    if len(set(collectives.values())) > 1:
        parts.append("collectives: " + "; ".join(f"{who} {what}" for who, what in collectives.items()))
    apart = [name for name, held in by_name.items() if name not in shared and len(held) == len(variants)]
    if apart:
        parts.append(f"on every rank, but compiled differently (one module per rank): {', '.join(apart)}")
    for name, held in by_name.items():
        if name in shared or len(held) < 2:
            continue
        configs = {ranks_text(g.get("ranks", [])): config_text(k) for g, k in held}
        if len(set(configs.values())) > 1:
            parts.append(f"{name}: " + ", ".join(f"{who} {what}" for who, what in configs.items()))
    return "; " + "; ".join(parts) if parts else ""


def config_text(kernel: dict) -> str:
    """A kernel's config and recorded grid, as the difference line shows them."""
    autotune = kernel.get("autotune") or {}
    kwargs = " ".join(f"{k}={v}" for k, v in sorted((autotune.get("kwargs") or {}).items()))
    grid = (kernel.get("recorded") or {}).get("grid")
    return f"{kwargs or 'no config'}" + (f", grid {tuple(grid)}" if grid else "")


def rank_markdown(summary: RankSummary | None) -> str:
    if summary is None:
        return ""
    lines = [
        "## Ranks",
        "",
        f"A torchrun job of {plural(len(summary.rows), 'rank')}; each rank's own capture is in raw/rank<r>/ "
        "(`harvest diff OUT/raw/rank0 OUT/raw/rank1` compares two of them). A graph every rank compiled identically "
        "is written once; the others per rank (g<i>_<role>_rank<r>).",
        "",
        "| Rank | Graphs | Triton kernels | Modules of its own | Recompiles | Collectives in its graphs |",
        "|--:|--:|--:|--:|--:|---|",
    ]
    for row in summary.rows:
        lines.append(f"| {row.rank} | {row.graphs} | {row.kernels} | {row.own_modules} | {row.recompiles} | "
                     f"{md_cell(', '.join(row.collectives)) or 'none'} |")
    lines.append("")
    if summary.differences:
        lines.append("What differs between ranks:")
        lines.append("")
        lines.extend(f"- {md_cell(line)}" for line in summary.differences)
    else:
        lines.append("Every rank compiled the same graphs, kernels and configs.")
    return "\n".join(lines) + "\n"
