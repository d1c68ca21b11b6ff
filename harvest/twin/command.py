"""`harvest twin PATH`: write the CUDA C++ twin of every kernel of an extraction (or of one graph or one module).

For each kernel module OUT/<graph>/<kernel>.py it writes OUT/<graph>/twin/<kernel>.cu (the kernel, plain CUDA) and
OUT/<graph>/twin/<kernel>_twin.py (its launcher and parameters; building it with load_inline, --check against the
run's record and --bench are OUT/twin_harness.py, written once per extraction), checks with `nvcc -ptx` that each
twin compiles, and records in manifest.json and report.md, per kernel, "twin" or
"no twin: <reason>". The modules are read as text; nothing from the extraction is imported or run.
"""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harvest.errors import HarvestError, UsageError
from harvest.nvcc import find_nvcc
from harvest.progress import counter
from harvest.report import read_manifest
from harvest.report_html import read_report_inputs, report_texts
from harvest.resources import load_template
from harvest.twin import NoTwin, TwinChoices, TwinSource, read_module, translate
from harvest.twin.batch import CompileUnit, compile_units
from harvest.twin.choices import DEFAULT_CHOICES
from harvest.twin.no_twin import NO_TWIN_KINDS
from harvest.writer import WriteReport, sha256, write_generated, write_manifest

TWIN_HARNESS_PATH = "twin_harness.py"  # beside the graphs: what every twin module of the extraction shares


@dataclass
class TwinOutcome:
    """What `harvest twin` did for one kernel."""

    module: str
    kernel: str
    kind: str
    status: str  # "ok", "no twin", "compile error"
    reason: str = ""
    shape: str = ""
    files: tuple[str, ...] = ()


@dataclass
class TwinRun:
    out_dir: Path
    outcomes: list[TwinOutcome] = field(default_factory=list)
    writes: WriteReport | None = None
    compiled_with: str | None = None


def find_extraction(path: Path) -> tuple[Path, str | None]:
    """(extraction dir, the module or graph dir inside it that was asked for, or None for all)."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"not found: {path}; give an extraction directory, one of its graph directories or a kernel module")
    for candidate in [path, *path.absolute().parents][:3]:  # absolute: `harvest twin k.py` from inside a graph dir
        if candidate.is_dir() and (candidate / "manifest.json").is_file():
            relative = path.resolve().relative_to(candidate.resolve()).as_posix()
            return candidate, None if relative == "." else relative
    raise UsageError(f"{path} is not inside an extraction (no manifest.json here or above): run `harvest extract` first")


def twin_module_text(source: TwinSource, graph: str, kernel_file: str, kernel_params: tuple[str, ...] = ()) -> str:
    """The twin module: what is its own (launcher, parameters, the kernel module it mirrors); the rest is the
    extraction's twin_harness.py. kernel_params: the Triton kernel's runtime parameters (those not in the
    launcher's are named as not passed)."""
    stem = kernel_file.removesuffix(".py")
    dropped = [p for p in kernel_params if p not in source.params]
    note = f"; not passed: {', '.join(dropped)} (the twin never reads {'it' if len(dropped) == 1 else 'them'})" if dropped else ""
    text = load_template("twin.py.j2").render(
        kernel_name=source.kernel_name, kernel_file=kernel_file, kernel_path=f"{graph}/{kernel_file}", shape=source.shape,
        params=repr(list(source.params)), params_note=note, declaration=source.declaration,
        launcher=source.launcher.rstrip("\n"), twin_path=f"{graph}/twin/{stem}_twin.py",
    )
    compile(text, f"{stem}_twin.py", "exec")  # generated code always compiles before it is written
    return text


def twin_harness_text() -> str:
    """OUT/twin_harness.py: the CUDA toolkit from pip, the build, the Triton module bound to its harness, check,
    bench and the command line of every twin module."""
    text = load_template("twin_harness.py.j2").render()
    compile(text, TWIN_HARNESS_PATH, "exec")
    return text


def twin_command(path: Path, *, force: bool = False, compile_check: bool = True, arch: str = "sm_90",
                 on_progress: Callable[[str], None] = lambda message: None, choices: TwinChoices = DEFAULT_CHOICES) -> TwinRun:
    """Every kernel module `path` selects translated (with `choices`, the twins as timed by default), compiled with
    `nvcc -ptx` when `compile_check` and nvcc is found, and written with the manifest's and reports' twin entries."""
    out_dir, selected = find_extraction(Path(path))
    manifest = read_manifest(out_dir)
    run = TwinRun(out_dir)
    files: dict[str, str] = {}
    entries = []
    for graph in manifest.get("graphs", []):
        for kernel in graph.get("kernels", []):
            module = kernel.get("module")
            if not module or (selected and not (module == selected or module.startswith(selected.rstrip("/") + "/"))):
                continue
            entries.append((graph, kernel, module))
    if not entries:
        raise UsageError(f"no kernel module under {path}: nothing to translate (a kernel that is not standalone has no module)")
    translated: set[str] = set()  # a torchrun job's graphs share the modules of kernels every rank compiled alike
    for _graph, kernel, module in entries:
        if module in translated:
            continue
        translated.add(module)
        stem = Path(module).stem
        outcome = TwinOutcome(module, kernel.get("display_name") or kernel["name"], kernel.get("kind", "?"), "ok")
        try:
            if kernel.get("kind") in NO_TWIN_KINDS:
                raise NoTwin(NO_TWIN_KINDS[kernel["kind"]])
            text = (out_dir / module).read_text(encoding="utf-8")
            facts = read_module(text, module)
            source = translate(facts, choices)
        except (NoTwin, OSError) as exc:
            outcome.status, outcome.reason = "no twin", str(exc)
        else:
            graph_dir = Path(module).parent.as_posix()
            cu_path, py_path = f"{graph_dir}/twin/{stem}.cu", f"{graph_dir}/twin/{stem}_twin.py"
            files[cu_path] = source.cuda
            files[py_path] = twin_module_text(source, graph_dir, Path(module).name, facts.params)
            outcome.shape, outcome.files = source.shape, (cu_path, py_path)
        run.outcomes.append(outcome)
        on_progress(f"{module}: " + (f"twin ({outcome.shape})" if outcome.status == "ok" else f"no twin: {outcome.reason}"))
    if compile_check:
        run.compiled_with = _compile_all(run.outcomes, files, arch, on_progress)
    if any(o.status == "ok" for o in run.outcomes):
        files[TWIN_HARNESS_PATH] = twin_harness_text()
    by_module = {o.module: o for o in run.outcomes}
    for _graph, kernel, module in entries:
        outcome = by_module[module]
        entry = {"status": outcome.status}
        if outcome.status == "ok":
            entry.update(shape=outcome.shape, cuda=outcome.files[0], module=outcome.files[1])
            if run.compiled_with:
                entry["nvcc"] = f"compiles for {arch}"
        else:
            entry["reason"] = outcome.reason
        kernel["twin"] = entry
    generated = dict(manifest.get("generated_files") or {})
    redone = {f"{Path(m).parent.as_posix()}/twin/{Path(m).stem}{suffix}" for _, _, m in entries for suffix in (".cu", "_twin.py")}
    if selected is None:  # every twin made again: the shared file goes with the last of them
        redone.add(TWIN_HARNESS_PATH)
    keep = set(generated) - redone  # only the twins of the kernels translated now may be replaced or removed
    files.update(report_texts(manifest, read_report_inputs(out_dir, manifest, pending=files)))
    run.writes = write_generated(out_dir, files, force=force, keep=keep)
    for relative in run.writes.removed:
        generated.pop(relative, None)
    for relative, text in files.items():
        if relative not in run.writes.kept_edited:
            generated[relative] = sha256(text)
    manifest["generated_files"] = dict(sorted(generated.items()))
    write_manifest(out_dir, manifest)
    return run


COMPILING = "compiling CUDA twins (nvcc -ptx)"


def _compile_all(outcomes: list[TwinOutcome], files: dict[str, str], arch: str, on_progress: Callable[[str], None]) -> str | None:
    """nvcc -ptx every twin (units of several twins, in parallel: harvest/twin/batch.py); a twin nvcc rejects is
    reported, never kept as if it were fine."""
    try:
        nvcc = find_nvcc()
    except HarvestError as exc:
        on_progress(f"twins not compiled: {exc}")
        return None
    todo = [o for o in outcomes if o.status == "ok"]

    def first_error(source: str, name: str) -> str | None:
        """None when nvcc compiles `source`, else its first error line, naming the file `name`."""
        with tempfile.TemporaryDirectory(prefix="harvest-twin-") as tmp:
            path = Path(tmp) / "twin.cu"
            path.write_text(source, encoding="utf-8")
            result = subprocess.run([str(nvcc), "-ptx", f"-arch={arch}", "-o", str(Path(tmp) / "twin.ptx"), str(path)],
                                    capture_output=True, text=True)
        if result.returncode == 0:
            return None
        first = next((line for line in result.stderr.splitlines() if "error" in line), result.stderr.strip()[:200])
        return first.replace(str(path), name)

    def compile_unit(unit: CompileUnit) -> list[tuple[TwinOutcome, str | None]]:
        members = [todo[i] for i in unit.members]
        if len(members) > 1 and first_error(unit.source, "the joined twins") is None:
            return [(outcome, None) for outcome in members]
        return [(outcome, first_error(files[outcome.files[0]], outcome.files[0])) for outcome in members]

    workers = max(1, min(len(todo), os.cpu_count() or 1, 8))
    units = compile_units([files[o.files[0]] for o in todo], workers)
    count = counter(on_progress)
    count(COMPILING, 0, len(todo))
    done = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        for results in pool.map(compile_unit, units):
            for outcome, error in results:
                done += 1
                count(COMPILING, done, len(todo))
                if error is not None:
                    outcome.status, outcome.reason = "compile error", f"nvcc rejected the twin (a harvest bug): {error}"
                    for path in outcome.files:
                        files.pop(path, None)
                    outcome.files = ()
                    on_progress(f"{outcome.module}: {outcome.reason}")
    return str(nvcc)


def summary(run: TwinRun) -> dict:
    """Counts per kernel kind: translated, and the reasons of those that are not."""
    counts: dict[str, dict[str, int]] = {}
    reasons: dict[str, int] = {}
    for outcome in run.outcomes:
        kind = "pointwise" if outcome.kind == "pointwise" else "reduction" if "reduction" in outcome.kind else outcome.kind
        row = counts.setdefault(kind, {"kernels": 0, "translated": 0})
        row["kernels"] += 1
        row["translated"] += outcome.status == "ok"
        if outcome.status != "ok":
            reasons[outcome.reason] = reasons.get(outcome.reason, 0) + 1
    return {"kinds": counts, "reasons": dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])))}
