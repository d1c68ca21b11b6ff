"""The results of `harvest ptx` for one kernel and how they are shown: the markdown tables and the files written next
to the module. Pure."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harvest.ptx.module import Arch
from harvest.ptx.text import MIX_ROWS, Resources, diff_counts, ptx_header, sass_instruction_count, unified_diff
from harvest.text_output import plural

# --------------------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class CompiledSide:
    """One side (Triton or twin) of the comparison: its PTX and what was measured of it."""

    label: str  # "Triton" or "twin"
    source: str  # what it was compiled from (module or .cu path, as shown)
    how: str  # the compiler and command, as shown
    ptx: str
    normalized: str
    mix: Counter[str]
    resources: dict[str, Resources] = field(default_factory=dict)  # entry -> ptxas -v; empty when ptxas failed
    ptxas_note: str = ""  # why resources are missing, or which ptxas
    sass: str = ""
    sass_note: str = ""

    @property
    def header(self) -> dict[str, str]:
        return ptx_header(self.ptx)

    def summary(self) -> dict[str, Any]:
        """The few figures the manifest keeps and report.md shows."""
        loads = [(w, self.mix[f"ld.global {w}"]) for w in ("v1", "v2", "v4", "v8") if self.mix[f"ld.global {w}"]]
        stores = [(w, self.mix[f"st.global {w}"]) for w in ("v1", "v2", "v4", "v8") if self.mix[f"st.global {w}"]]
        out: dict[str, Any] = {
            "instructions": self.mix["instructions"],
            "ld_global": ", ".join(f"{n}x {w}" for w, n in loads) or "none",
            "st_global": ", ".join(f"{n}x {w}" for w, n in stores) or "none",
        }
        if self.resources:
            out["registers"] = max(r.registers for r in self.resources.values())
            out["spill_bytes"] = sum(r.spill_stores + r.spill_loads for r in self.resources.values())
        if self.sass:
            out["sass_instructions"] = sass_instruction_count(self.sass)
        return out


@dataclass(frozen=True)
class KernelPtx:
    """Everything `harvest ptx` produced for one kernel module."""

    module: str  # the module's path, relative to the extraction when known
    kernel: str
    arch: Arch
    triton: CompiledSide
    twin: CompiledSide | None
    twin_note: str  # "" with a twin, else why there is none ("no twin: ...")
    launch: tuple[str, ...]  # the specialization, one phrase per parameter, and the options
    toolchain: dict[str, str | None] = field(default_factory=dict)  # {"triton": "3.9.0", "nvcc": "13.0" or None}
    files: dict[str, str] = field(default_factory=dict)  # relative path -> text (filled by plan_files)

    def diff(self) -> str:
        if self.twin is None:
            return ""
        stem = Path(self.module).stem
        return unified_diff(self.triton.normalized, self.twin.normalized, f"{stem}.triton.norm.ptx", f"{stem}.twin.norm.ptx")

    def manifest_entry(self, md_path: str) -> dict[str, Any]:
        entry: dict[str, Any] = {"arch": self.arch.name, "toolchain": self.toolchain, "tables": md_path, "triton": self.triton.summary()}
        if self.twin is not None:
            entry["twin"] = self.twin.summary()
            only_triton, only_twin = diff_counts(self.diff())
            entry["diff"] = {"only_triton": only_triton, "only_twin": only_twin}
            entry["differs_most"] = what_differs(self.triton, self.twin)
        else:
            entry["twin"] = None
            entry["twin_note"] = self.twin_note
        return entry


# What differs between the two sides, in families of instruction-mix rows, each with how much a difference of one
# instruction weighs: what the access widths, loops, shared memory and barriers say about speed, more than counts of
# arithmetic do (the weights only order the families; the counts are shown as they are).
DIFFERENCE_FAMILIES = (
    ("global loads", ("ld.global v1", "ld.global v2", "ld.global v4", "ld.global v8"), 2.5),
    ("global stores", ("st.global v1", "st.global v2", "st.global v4", "st.global v8"), 2.5),
    ("barriers", ("bar.sync / barrier",), 3.0),
    ("shared memory", ("ld.shared", "st.shared"), 1.5),
    ("branches (a loop not unrolled, a guard)", ("bra",), 1.0),
    ("shuffles", ("shfl.sync", "redux.sync"), 1.0),
    ("divisions", ("div float", "int div/rem"), 2.0),
    ("local memory (spills, arrays)", ("ld/st.local",), 3.0),
    ("index arithmetic", ("int add/sub/mul/mad",), 0.25),
    ("predication", ("setp", "predicated (@p)"), 0.15),
)


def what_differs(triton: CompiledSide, twin: CompiledSide, most: int = 4) -> list[str]:
    """The families of instructions in which the two PTX texts differ most, most first: `global loads: Triton 16x v4,
    twin 48x v1`. Registers come last when they differ by a quarter or more."""
    scored = []
    for name, rows, weight in DIFFERENCE_FAMILIES:
        a, b = [triton.mix[r] for r in rows], [twin.mix[r] for r in rows]
        score = weight * sum(abs(x - y) for x, y in zip(a, b))
        if score == 0:
            continue

        def counts(values: list[int], rows: tuple[str, ...] = rows) -> str:
            if len(rows) == 1:
                return str(values[0])
            named = [f"{n}x {r.split()[-1] if r.startswith(('ld.global', 'st.global')) else r}" for r, n in zip(rows, values) if n]
            return ", ".join(named) or "none"

        scored.append((score, f"{name}: Triton {counts(a)}, twin {counts(b)}"))
    found = [text for _, text in sorted(scored, key=lambda item: -item[0])[:most]]
    if triton.resources and twin.resources:
        mine, theirs = (max(r.registers for r in side.resources.values()) for side in (twin, triton))
        if abs(mine - theirs) * 4 >= max(mine, theirs):
            found.append(f"registers: Triton {theirs}, twin {mine}")
    return found


SUMMARY_COLUMNS = ("kernel", "Triton", "Triton ld.global", "twin", "twin ld.global", "diff -Triton +twin")


def summary_title(arch: Arch) -> str:
    return f"PTX for {arch.name} (instructions / registers / spilled bytes; ld.global by width)"


def summary_rows(results: list[KernelPtx]) -> list[list[str]]:
    """`harvest ptx`'s summary, a row per kernel under SUMMARY_COLUMNS: each side's figures, then the diff's line
    counts, or why there is no twin."""
    rows = []
    for result in results:
        cells = [result.module]
        for side in (result.triton, result.twin):
            summary = side.summary() if side else None
            if summary:
                cells += [f"{summary['instructions']} / {summary.get('registers', '?')} / {summary.get('spill_bytes', '?')} B", summary["ld_global"]]
            else:
                cells += ["-", "-"]
        if result.twin is not None:
            only_triton, only_twin = diff_counts(result.diff())
            cells.append(f"-{only_triton} +{only_twin}")
        else:
            cells.append(result.twin_note)
        rows.append(cells)
    return rows


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|")


def render_tables(result: KernelPtx) -> str:
    """`<kernel>.ptx.md`: how each side was compiled, the instruction mix side by side, registers and spills."""
    sides = [result.triton] + ([result.twin] if result.twin else [])
    stem = Path(result.module).stem
    lines = [f"# PTX of `{result.kernel}` for {result.arch.name}: Triton" + (" vs CUDA twin" if result.twin else ""), ""]
    for side in sides:
        header = side.header
        lines.append(f"- {side.label}: `{side.source}`, {side.how}; PTX `.version {header['version']}`, `.target {header['target']}`")
    if result.twin is None:
        lines.append(f"- {result.twin_note}")
    lines.append(f"- launch: {', '.join(result.launch)}")
    lines += ["", "## Instruction mix", "", "Static counts in the PTX text (an instruction inside a loop counts once); kinds neither side uses are left out.", ""]
    lines.append("| | " + " | ".join(s.label for s in sides) + " |")
    lines.append("|---|" + "--:|" * len(sides))
    for row in MIX_ROWS:
        if row == "instructions" or any(s.mix[row] for s in sides):
            lines.append(f"| {_cell(row)} | " + " | ".join(str(s.mix[row]) for s in sides) + " |")
    if result.twin is not None:
        lines += ["", "## What differs most", "", "Families of instructions, the largest differences first (static counts as above):", ""]
        lines += [f"- {text}" for text in what_differs(result.triton, result.twin)] or ["- nothing in the families compared"]
    lines += ["", "## Registers and spills", ""]
    lines.append("| Entry | registers | spill stores | spill loads | stack frame | shared memory | SASS instructions |")
    lines.append("|---|--:|--:|--:|--:|--:|--:|")
    for side in sides:
        if not side.resources:
            lines.append(f"| {side.label} | {_cell(side.ptxas_note or 'no ptxas')} | | | | | |")
        sass_count = sass_instruction_count(side.sass) if side.sass else "n/a"
        for entry, r in side.resources.items():
            lines.append(
                f"| {side.label} `{entry}` | {r.registers} | {r.spill_stores} B | {r.spill_loads} B | {r.stack} B | {r.shared} B | {sass_count} |"
            )
    notes = [f"{s.label}: {s.ptxas_note}" for s in sides if s.resources and s.ptxas_note]
    notes += [f"{s.label} SASS: {s.sass_note}" for s in sides if s.sass_note]
    if notes:
        lines += [""] + [f"- {note}" for note in notes]
    lines += ["", "## Files", ""]
    for path in sorted(result.files):
        if not path.endswith(".ptx.md"):
            lines.append(f"- [{Path(path).name}]({Path(path).name})")
    if result.twin is not None:
        only_triton, only_twin = diff_counts(result.diff())
        lines.append(f"- {stem}.ptx.diff: {plural(only_triton, 'line')} only in Triton's normalised PTX, {only_twin} only in the twin's")
    return "\n".join(lines) + "\n"


def plan_files(result: KernelPtx) -> dict[str, str]:
    """Relative path (under the kernel's graph directory) -> text of every file written for a kernel."""
    stem = Path(result.module).stem
    files = {
        f"ptx/{stem}.triton.ptx": result.triton.ptx,
        f"ptx/{stem}.triton.norm.ptx": result.triton.normalized,
    }
    if result.triton.sass:
        files[f"ptx/{stem}.triton.sass"] = result.triton.sass
    if result.twin is not None:
        files[f"ptx/{stem}.twin.ptx"] = result.twin.ptx
        files[f"ptx/{stem}.twin.norm.ptx"] = result.twin.normalized
        files[f"ptx/{stem}.ptx.diff"] = result.diff()
        if result.twin.sass:
            files[f"ptx/{stem}.twin.sass"] = result.twin.sass
    result.files.clear()
    result.files.update(files)
    files[f"ptx/{stem}.ptx.md"] = render_tables(result)
    result.files[f"ptx/{stem}.ptx.md"] = files[f"ptx/{stem}.ptx.md"]
    return files
