"""`harvest diff OLD NEW`: what a change did to fusion, for a pull-request comment or a CI gate.

    d = diff_manifests(old_manifest, new_manifest)      # pure
    text, code = diff_command("extracted/before", "examples/model.py", False, max_kernels=12, fail_on_unfuse=True)

Kernels are matched across runs by what they compute (the multiset of ops they hold, then their user source lines),
never by Inductor's names, which shift when anything before them changes. Unmatched kernels are explained as a split
(one old kernel's ops now spread over several new ones), a merge (the reverse), or as added / removed.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harvest.errors import GateError, UsageError
from harvest.ops import FREE_TO_FUSE, op_short_name
from harvest.report import read_manifest
from harvest.text_output import plural

# ------------------------------------------------------------------------------------------------ model


@dataclass(frozen=True)
class KernelRef:
    """One Triton kernel of an extraction, as the diff sees it."""

    graph: str
    name: str  # Inductor's name
    display_name: str
    ops: tuple[str, ...]  # op targets, sorted (a multiset)
    lines: tuple[str, ...]  # "file:line", sorted
    launches: int

    @property
    def op_counts(self) -> Counter[str]:
        return Counter(op_short_name(op) for op in self.ops)

    @property
    def compute_ops(self) -> Counter[str]:
        return Counter({op: n for op, n in self.op_counts.items() if op not in FREE_TO_FUSE})

    def describe(self) -> str:
        ops = _labels(self.op_counts) or "unknown ops"
        lines = f"; {', '.join(self.lines)}" if self.lines else ""
        return f"`{self.display_name}` ({self.graph}: {ops}{lines})"

    def to_json(self) -> dict[str, Any]:
        return {
            "graph": self.graph,
            "name": self.name,
            "display_name": self.display_name,
            "ops": dict(sorted(self.op_counts.items())),
            "source_lines": list(self.lines),
            "launches": self.launches,
        }


@dataclass(frozen=True)
class Regroup:
    """Kernels whose ops were regrouped: a split (1 old -> n new) or a merge (n old -> 1 new)."""

    old: tuple[KernelRef, ...]
    new: tuple[KernelRef, ...]

    def to_json(self) -> dict[str, Any]:
        return {"old": [k.to_json() for k in self.old], "new": [k.to_json() for k in self.new]}


@dataclass(frozen=True)
class OpChange:
    """An op whose fusion changed: `count` instances stopped (or started) fusing."""

    op: str
    count: int
    now: tuple[str, ...]  # where it is now: "alone in `k` (g0)" / "extern call extern_kernels.mm (g1)"

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "count": self.count, "now": list(self.now)}


@dataclass(frozen=True)
class GraphDelta:
    """Kernel, launch and extern counts of one graph in OLD and NEW (None where the graph is absent)."""

    graph: str
    role: str
    old_kernels: int | None
    new_kernels: int | None
    old_launches: int | None
    new_launches: int | None
    old_externs: int | None
    new_externs: int | None

    @property
    def delta(self) -> int:
        return (self.new_kernels or 0) - (self.old_kernels or 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "graph": self.graph,
            "role": self.role,
            "kernels": {"old": self.old_kernels, "new": self.new_kernels, "delta": self.delta},
            "launches": {"old": self.old_launches, "new": self.new_launches},
            "externs": {"old": self.old_externs, "new": self.new_externs},
        }


COMPARED_VERSIONS = ("torch", "triton", "device")  # manifest keys of what Inductor's output depends on besides the program


@dataclass(frozen=True)
class VersionPair:
    """One of COMPARED_VERSIONS as OLD's and NEW's manifests hold it (None where a manifest does not say)."""

    what: str
    old: str | None
    new: str | None

    @property
    def differs(self) -> bool:
        return self.old is not None and self.new is not None and self.old != self.new


@dataclass(frozen=True)
class FusionDiff:
    """Everything that changed in fusion between two extractions."""

    old_label: str
    new_label: str
    graphs: tuple[GraphDelta, ...]
    added: tuple[KernelRef, ...]
    removed: tuple[KernelRef, ...]
    splits: tuple[Regroup, ...]
    merges: tuple[Regroup, ...]
    stopped_fusing: tuple[OpChange, ...]
    started_fusing: tuple[OpChange, ...]
    unchanged: int  # kernels matched with the same ops
    renamed: int  # of those, how many Inductor named differently
    old_kernels: int
    new_kernels: int
    versions: tuple[VersionPair, ...] = ()

    @property
    def versions_differ(self) -> tuple[str, ...]:
        """What differs between the two runs besides the program (torch, triton, the device): fusion may change with it."""
        return tuple(v.what for v in self.versions if v.differs)

    @property
    def changed(self) -> bool:
        moved = self.added or self.removed or self.splits or self.merges
        return bool(moved or self.stopped_fusing or self.started_fusing)

    def to_json(self) -> dict[str, Any]:
        return {
            "old": self.old_label,
            "new": self.new_label,
            "kernels": {"old": self.old_kernels, "new": self.new_kernels, "delta": self.new_kernels - self.old_kernels},
            "graphs": [g.to_json() for g in self.graphs],
            "added": [k.to_json() for k in self.added],
            "removed": [k.to_json() for k in self.removed],
            "split": [r.to_json() for r in self.splits],
            "merged": [r.to_json() for r in self.merges],
            "stopped_fusing": [c.to_json() for c in self.stopped_fusing],
            "started_fusing": [c.to_json() for c in self.started_fusing],
            "unchanged": self.unchanged,
            "renamed": self.renamed,
            "versions": {v.what: {"old": v.old, "new": v.new} for v in self.versions},
            "versions_differ": list(self.versions_differ),
        }


# ----------------------------------------------------------------------------------------------- diffing


def _labels(counts: Counter[str]) -> str:
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{n}x {op}" if n > 1 else op for op, n in items)


def _kernels(manifest: dict) -> list[KernelRef]:
    refs = []
    for graph in manifest.get("graphs", []):
        for kernel in graph.get("kernels", []):
            fusion = kernel.get("fusion") or {}
            lines = fusion.get("source_lines")
            locations = sorted({f"{x['file']}:{x['line']}" for x in lines}) if isinstance(lines, list) else []
            refs.append(
                KernelRef(
                    graph=graph["name"],
                    name=kernel["name"],
                    display_name=kernel.get("display_name") or kernel["name"],
                    ops=tuple(sorted(fusion.get("ops", []))),
                    lines=tuple(locations),
                    launches=max(int(fusion.get("launches", 1) or 1), 1),
                )
            )
    return refs


def _match(old: list[KernelRef], new: list[KernelRef], key) -> tuple[list[tuple[KernelRef, KernelRef]], list, list]:
    """Pair kernels with equal keys (same graph first), returning pairs and what is left on each side."""
    pairs: list[tuple[KernelRef, KernelRef]] = []
    left_new = list(new)
    left_old: list[KernelRef] = []
    for o in old:
        candidates = [n for n in left_new if key(n) == key(o)]
        if not candidates:
            left_old.append(o)
            continue
        pick = next((n for n in candidates if n.graph == o.graph), candidates[0])
        left_new.remove(pick)
        pairs.append((o, pick))
    return pairs, left_old, left_new


def _contained(part: Counter[str], whole: Counter[str]) -> bool:
    return all(whole[op] >= n for op, n in part.items())


def _regroup(whole: list[KernelRef], parts: list[KernelRef]) -> list[tuple[KernelRef, list[KernelRef]]]:
    """For each kernel of `whole`, the kernels of `parts` whose ops together fit inside it (two or more)."""
    found = []
    for big in whole:
        budget = Counter(big.compute_ops)
        chosen: list[KernelRef] = []
        for small in sorted(parts, key=lambda k: (-sum(k.compute_ops.values()), k.graph, k.name)):
            ops = small.compute_ops
            if ops and _contained(ops, budget):
                chosen.append(small)
                budget -= ops
        if len(chosen) >= 2:
            for small in chosen:
                parts.remove(small)
            found.append((big, chosen))
    return found


def _fusion_status(manifest: dict) -> tuple[Counter[str], dict[str, list[str]]]:
    """Per op: how many instances are fused (share a kernel with another compute op); where the others are."""
    fused: Counter[str] = Counter()
    unfused: dict[str, list[str]] = {}
    for kernel in _kernels(manifest):
        ops = kernel.compute_ops
        for op, n in ops.items():
            if sum(ops.values()) >= 2:
                fused[op] += n * kernel.launches
            else:
                where = f"alone in `{kernel.display_name}` ({kernel.graph})"
                unfused.setdefault(op, []).extend([where] * kernel.launches)
    for graph in manifest.get("graphs", []):
        for extern in (graph.get("fusion") or {}).get("externs", []):
            op = op_short_name(extern["op"])
            unfused.setdefault(op, []).append(f"extern call `{extern['op']}` ({graph['name']})")
    return fused, unfused


def _op_changes(before: dict, after: dict) -> tuple[OpChange, ...]:
    """Ops with fewer fused instances in `after` and more unfused ones: they stopped fusing."""
    fused_before, unfused_before = _fusion_status(before)
    fused_after, unfused_after = _fusion_status(after)
    changes = []
    for op in sorted(set(fused_before) | set(unfused_after)):
        lost = fused_before[op] - fused_after[op]
        gained = len(unfused_after.get(op, [])) - len(unfused_before.get(op, []))
        count = min(lost, gained)
        if count > 0:
            now = [w for w in sorted(set(unfused_after[op])) if w not in set(unfused_before.get(op, []))]
            changes.append(OpChange(op, count, tuple(now or sorted(set(unfused_after[op])))))
    return tuple(changes)


def _graph_deltas(old: dict, new: dict) -> tuple[GraphDelta, ...]:
    def counts(graph: dict | None) -> tuple[int | None, int | None, int | None]:
        if graph is None:
            return None, None, None
        fusion = graph.get("fusion") or {}
        kernels = len(graph.get("kernels", []))
        return kernels, fusion.get("launches", kernels), len(fusion.get("externs", graph.get("externs", [])))

    old_graphs = {g["name"]: g for g in old.get("graphs", [])}
    new_graphs = {g["name"]: g for g in new.get("graphs", [])}
    names = list(old_graphs) + [n for n in new_graphs if n not in old_graphs]
    deltas = []
    for name in names:
        o, n = old_graphs.get(name), new_graphs.get(name)
        (ok, ol, oe), (nk, nl, ne) = counts(o), counts(n)
        role = (n or o or {}).get("role", "unknown")
        deltas.append(GraphDelta(name, role, ok, nk, ol, nl, oe, ne))
    return tuple(deltas)


def diff_manifests(old: dict, new: dict) -> FusionDiff:
    """What changed in fusion from manifest `old` to manifest `new` (pure)."""
    old_refs, new_refs = _kernels(old), _kernels(new)
    exact, left_old, left_new = _match(old_refs, new_refs, key=lambda k: (k.ops, k.lines))
    by_ops, left_old, left_new = _match(left_old, left_new, key=lambda k: k.ops)
    matched = exact + by_ops
    splits = [Regroup((big,), tuple(parts)) for big, parts in _regroup(left_old, left_new)]
    left_old = [k for k in left_old if all(k not in r.old for r in splits)]
    merges = [Regroup(tuple(parts), (big,)) for big, parts in _regroup(left_new, left_old)]
    left_new = [k for k in left_new if all(k not in r.new for r in merges)]
    return FusionDiff(
        old_label=str(old.get("target", "OLD")),
        new_label=str(new.get("target", "NEW")),
        graphs=_graph_deltas(old, new),
        added=tuple(left_new),
        removed=tuple(left_old),
        splits=tuple(splits),
        merges=tuple(merges),
        stopped_fusing=_op_changes(old, new),
        started_fusing=_op_changes(new, old),
        unchanged=len(matched),
        renamed=sum(1 for o, n in matched if o.name != n.name),
        old_kernels=len(old_refs),
        new_kernels=len(new_refs),
        versions=tuple(VersionPair(what, _text(old.get(what)), _text(new.get(what))) for what in COMPARED_VERSIONS),
    )


def _text(value: Any) -> str | None:
    return None if value in (None, "") else str(value)


# ---------------------------------------------------------------------------------------------- markdown


def _n(value: int | None) -> str:
    return "–" if value is None else str(value)


def _signed(value: int) -> str:
    return f"+{value}" if value > 0 else str(value)


def versions_line(d: FusionDiff) -> str:
    """What the two runs ran on: one line when they agree, a warning naming each difference when they do not."""
    if not d.versions_differ:
        shown = [f"{v.what} {v.old or 'unknown'}" if v.old == v.new else f"{v.what} {v.old or 'unknown'} → {v.new or 'unknown'}" for v in d.versions]
        return f"Both runs: {', '.join(shown)}."
    changes = ", ".join(f"{v.what} `{v.old}` → `{v.new}`" for v in d.versions if v.differs)
    return (f"> **Not the same torch, Triton or device**: {changes}. Inductor's fusion can change with these alone, "
            "so not every difference below comes from the change under review.")


def to_markdown(d: FusionDiff, old_name: str = "OLD", new_name: str = "NEW", gates: list[str] | None = None) -> str:
    """The diff as a pull-request comment."""
    out = [f"## Fusion diff: `{old_name}` → `{new_name}`", "", versions_line(d), ""]
    out.append(f"**Triton kernels: {d.old_kernels} → {d.new_kernels} ({_signed(d.new_kernels - d.old_kernels)})**")
    if not d.changed:
        out.append("")
        held = "the kernel holds" if d.unchanged == 1 else f"all {d.unchanged} kernels hold"
        out.append(f"No fusion changes: {held} the same ops.")
    out += ["", "| Graph | Role | Kernels | Δ | Launches | Extern calls |", "|---|---|---|--:|---|---|"]
    for g in d.graphs:
        out.append(
            f"| {g.graph} | {g.role} | {_n(g.old_kernels)} → {_n(g.new_kernels)} | {_signed(g.delta)} "
            f"| {_n(g.old_launches)} → {_n(g.new_launches)} | {_n(g.old_externs)} → {_n(g.new_externs)} |"
        )

    def section(title: str, items: list[str]) -> None:
        if items:
            out.extend(["", f"### {title} ({len(items)})", ""])
            out.extend(f"- {item}" for item in items)

    section("Ops that stopped fusing", [f"`{c.op}` ×{c.count}: now {'; '.join(c.now)}" for c in d.stopped_fusing])
    started = [f"`{c.op}` ×{c.count}: now fused (was {'; '.join(c.now)})" for c in d.started_fusing]
    section("Ops that started fusing", started)
    section("Kernels split", [f"{r.old[0].describe()} → {', '.join(k.describe() for k in r.new)}" for r in d.splits])
    section("Kernels merged", [f"{', '.join(k.describe() for k in r.old)} → {r.new[0].describe()}" for r in d.merges])
    section("Kernels added", [k.describe() for k in d.added])
    section("Kernels removed", [k.describe() for k in d.removed])
    out += ["", f"Unchanged: {plural(d.unchanged, 'kernel')} (same ops; {d.renamed} renamed by Inductor)."]
    if gates:
        out += ["", "### Gates", ""] + [f"- {g}" for g in gates]
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------------------------- command


def load_side(spec: str, scratch: Path) -> dict:
    """A manifest from an extraction directory (or its manifest.json), else from extracting target `spec`."""
    path = Path(spec)
    if path.is_file() and path.name == "manifest.json":
        path = path.parent
    if not (path / "manifest.json").is_file():
        from harvest.api import extract  # only needed (and imported) when a side is a target

        path = Path(extract(spec, scratch).out_dir)
    return read_manifest(path)


def gate_results(d: FusionDiff, max_kernels: int | None, fail_on_unfuse: bool) -> tuple[list[str], bool]:
    """Lines describing each requested gate, and whether any tripped."""
    lines, tripped = [], False
    if max_kernels is not None:
        bad = d.new_kernels > max_kernels
        tripped |= bad
        verdict = "FAIL" if bad else "pass"
        lines.append(f"`--max-kernels {max_kernels}`: {verdict} ({plural(d.new_kernels, 'Triton kernel')} in NEW)")
    if fail_on_unfuse:
        n = sum(c.count for c in d.stopped_fusing)
        tripped |= n > 0
        lines.append(f"`--fail-on-unfuse`: {'FAIL' if n else 'pass'} ({plural(n, 'op instance')} stopped fusing)")
    return lines, tripped


def refuse_unrelated(old: str, old_manifest: dict, new: str, new_manifest: dict) -> None:
    """Two extractions with no graph in common, of targets with different names, are two programs: every kernel
    would show as added or removed and a gate would trip on nothing. Runs of one program share graph names."""
    old_graphs = [g["name"] for g in old_manifest["graphs"]]
    new_graphs = [g["name"] for g in new_manifest["graphs"]]
    old_target, new_target = (str(m.get("target", "")) for m in (old_manifest, new_manifest))
    if set(old_graphs) & set(new_graphs) or Path(old_target).name == Path(new_target).name:
        return
    raise UsageError(
        f"{old} ({old_target}: {', '.join(old_graphs) or 'no graphs'}) and {new} ({new_target}: {', '.join(new_graphs) or 'no graphs'}) "
        "share no graph: they are extractions of unrelated targets; diff two runs of one program"
    )


def diff_command(old: str, new: str, as_json: bool, max_kernels: int | None, fail_on_unfuse: bool) -> tuple[str, int]:
    """`harvest diff OLD NEW`: the text to print and the exit code (GateError.exit_code when a gate trips).

    OLD and NEW are extraction directories (holding manifest.json) or targets, which are extracted first into a
    temporary directory.
    """
    with tempfile.TemporaryDirectory(prefix="harvest-diff-") as tmp:
        old_manifest = load_side(old, Path(tmp) / "old")
        new_manifest = load_side(new, Path(tmp) / "new")
    refuse_unrelated(old, old_manifest, new, new_manifest)
    d = diff_manifests(old_manifest, new_manifest)
    gates, tripped = gate_results(d, max_kernels, fail_on_unfuse)
    code = GateError.exit_code if tripped else 0
    if as_json:
        payload = {**d.to_json(), "old": old, "new": new, "gates": gates, "exit_code": code}
        return json.dumps(payload, indent=2) + "\n", code
    return to_markdown(d, old, new, gates), code
