"""`harvest.extract(target, out_dir)`: the whole pipeline, top to bottom.

    capture (run the target, or read an artifact)  ->  raw/ written first
    parse every graph  ->  per kernel: rename, reference, render  ->  manifest.json, report.md

Everything between capture and the writer is pure; this module only sequences it and reports progress.
"""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from harvest.capture.artifacts import (
    CAPTURE_JSON,
    capture_record,
    load_artifact,
    looks_like_output_code,
    raw_capture_dir,
)
from harvest.capture.runner import TAIL_LINES, RunOutcome, TargetOutput, run_target, run_wrapper_modules
from harvest.errors import (
    HarvestError,
    Interrupted,
    NoGraphsError,
    NoTritonKernelsError,
    OutputError,
    ParseError,
    TargetError,
    TimeoutError_,
    UsageError,
)
from harvest.fusion import GraphFusion, KernelFusion, graph_fusion
from harvest.manifest import KernelOutcome, extraction_json, generated_files_json, graph_json, kernel_json
from harvest.model import Capture, CapturedGraph, Graph, Kernel, Launch
from harvest.module_arguments import runtime_params
from harvest.module_plan import ModuleContext, ModulePlan, RenderError, plan_module
from harvest.parse import parse_output_code
from harvest.prewarm import start_prewarm
from harvest.progress import counter
from harvest.reference import build_reference, reference_json
from harvest.rename import RenameResult, build_context, kernel_names, rename_kernel, strip_inductor_decorators
from harvest.render import HARNESS_PATH, harness_source, render
from harvest.report_html import read_report_inputs, report_texts
from harvest.trust import remember_made_here, state_dir
from harvest.writer import (
    STAGING,
    WriteReport,
    copy_records,
    ensure_writable,
    fresh_staging,
    place_records,
    remove_stale_raw,
    write_generated,
    write_manifest,
    write_raw,
)

Progress = Callable[[str], None]  # messages; a ProgressDisplay also takes Counts (harvest/progress.py)
RENDERING = "rendering kernel modules"
COOPERATIVE = "@triton_heuristics.cooperative_reduction("  # a kernel with a grid barrier (see _interpreter_cannot_run)

TARGET_LOG = "target.log"  # raw/target.log: the target's own stdout and stderr from the run (not replayed, not hashed)
TAIL_WIDTH = 300  # characters of each line of the target's output an error shows


@dataclass
class ExtractResult:
    out_dir: Path
    manifest: dict
    modules: list[Path] = field(default_factory=list)  # standalone kernel modules written or kept
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (kernel, reason) not made standalone
    writes: WriteReport = field(default_factory=WriteReport)
    outcome: RunOutcome | None = None  # None for artifact targets
    target_log: Path | None = None  # where the run's target output is (raw/target.log); None without a run


@dataclass(frozen=True)
class GraphResult:
    """One graph's share of an extraction: its manifest entry, its modules {path: source}, the kernels left out."""

    entry: dict
    files: dict[str, str]
    skipped: tuple[tuple[str, str], ...]  # (kernel, reason), in the graph's kernel order


def default_out_dir(target: Path) -> Path:
    """extracted/<script stem>; an extraction (or its raw/) given as target is replayed in place."""
    raw = raw_capture_dir(target) if target.is_dir() else None
    if raw is not None:
        return raw.parent
    stem = target.stem if target.is_file() else target.name
    return Path("extracted") / stem


def extract(
    target: str | Path,
    out_dir: str | Path | None = None,
    *,
    args: tuple[str, ...] = (),
    timeout: float | None = None,
    force: bool = False,
    names: str = "readable",
    target_sm: int = 90,
    device: str = "auto",
    on_progress: Progress = lambda message: None,
    record: str = "data",
    record_cap_mib: float = 1024,
    record_total_cap_mib: float = 4096,
    run_artifact: bool = False,
) -> ExtractResult:
    """Capture every Inductor graph of `target` and write one standalone module per Triton kernel.

    target: a script (run in a child process under the capture hooks, with `args`), or an artifact read without a
    run: an output_code.py, a TORCH_COMPILE_DEBUG directory, a TORCH_TRACE log, or an earlier extraction (or its raw/),
    which is replayed to identical files (in place when out_dir is left out). Raises a HarvestError subclass with a
    one-line message on bad input; whatever was captured is written before that, and the directories this call
    created that hold nothing are removed.

    A run records every kernel launch (layouts, scalars, grid, config) and, with record="data", the data of each
    kernel's first launch in each graph (raw/<graph>/records/<kernel>.pt, capped per kernel and in total): the
    modules' inputs and their --check's "recorded" oracle. record="layouts" keeps layouts and values only. The
    target's own stdout and stderr go to raw/target.log (never to this process's output); a run that captured
    nothing keeps it in a temporary file named in the error, unless the error shows all of it.
    """
    if record not in ("data", "layouts"):
        raise UsageError(f"--record must be 'data' or 'layouts', not {record!r}")
    if record_cap_mib <= 0 or record_total_cap_mib <= 0:
        raise UsageError("--record-cap and --record-total-cap must be positive numbers of MiB")
    if names not in ("readable", "inductor"):
        raise UsageError(f"--names must be 'readable' or 'inductor', not {names!r}")
    if timeout is not None and timeout <= 0:
        raise UsageError(f"--timeout must be a positive number of seconds, not {timeout:g}")
    target = Path(target)
    if not target.exists():
        raise UsageError(f"target not found: {target}")
    out = Path(out_dir) if out_dir is not None else default_out_dir(target)
    created = _missing_dirs(out / "raw")
    ensure_writable(out)
    try:
        return _capture_and_write(target, out, args, timeout, force, names, target_sm, device, on_progress, record,
                                  record_cap_mib, record_total_cap_mib, run_artifact)
    except BaseException:  # a failure keeps what holds a capture; the directories this run made for nothing go
        shutil.rmtree(out / "raw" / STAGING, ignore_errors=True)
        _remove_empty(created)
        raise


def _capture_and_write(target: Path, out: Path, args: tuple[str, ...], timeout: float | None, force: bool, names: str,
                       target_sm: int, device: str, on_progress: Progress, record: str, record_cap_mib: float,
                       record_total_cap_mib: float, run_artifact: bool) -> ExtractResult:
    """Read or run the target, then write the extraction (extract's body, once its arguments are checked)."""
    _refuse_foreign_extraction(out, target, force)
    outcome: RunOutcome | None = None
    target_log: Path | None = None
    is_artifact = target.is_dir() or target.suffix == ".log" or (target.suffix == ".py" and looks_like_output_code(_read(target)))
    if run_artifact and (not is_artifact or raw_capture_dir(target) is not None):
        raise UsageError("--run-artifact is for an output_code.py, a TORCH_COMPILE_DEBUG dir or a TORCH_TRACE log; a script always runs, an extraction replays its record")
    if is_artifact:
        capture = load_artifact(target)
        _refuse_cpp_only(capture, target)
    if is_artifact and run_artifact:
        _check_artifact_device(capture, device)
        on_progress(f"running artifact {target}: each graph's own call(get_args()) under the launch recorder (--run-artifact)")
        capture, outcome, target_log = run_artifact_graphs(capture, out, device, target_sm, record, record_cap_mib, record_total_cap_mib, timeout, on_progress)
    elif is_artifact:
        on_progress(f"reading artifact {target} (no run; --run-artifact runs it to record real layouts)")
    elif target.suffix != ".py":
        raise UsageError(f"not a Python file: {target}; give a script, an output_code.py, a TORCH_COMPILE_DEBUG dir or a TORCH_TRACE log")
    else:
        _check_syntax(target)
        staging = fresh_staging(out)
        warm = _import_torch_meanwhile()
        running_log = _new_log(target)
        outcome = run_target(
            target, tuple(args), timeout=timeout, device=device, target_sm=target_sm, on_progress=on_progress,
            log_path=running_log, record_dir=staging, record=record, record_cap_mib=record_cap_mib,
            record_total_cap_mib=record_total_cap_mib, while_running=start_prewarm if names == "readable" else None,
        )
        capture = outcome.capture
        warm.join()
        on_progress(f"target ran for {outcome.seconds:.1f} s (capture and launch recording included)")
        target_log = _keep_log(running_log, out, outcome)
        place_records(out, staging, [(g.index, g.name) for g in capture.graphs])

    try:
        result = _write_extraction(target, out, capture, outcome, target_log, names, force, on_progress)
    except KeyboardInterrupt:  # Ctrl-C after the run: raw/ is written first, so the capture is never lost
        kept = f"the capture is kept in {out}/raw: `harvest extract {out}` renders it again" if (out / "raw" / "capture.json").exists() else "nothing was written"
        raise Interrupted(f"interrupted (Ctrl-C) while writing the extraction; {kept}") from None
    result.target_log = target_log
    return result


def _missing_dirs(directory: Path) -> list[Path]:
    """`directory` and those of its parents that do not exist yet, deepest first: what this run may create."""
    missing = []
    for path in (directory, *directory.absolute().parents):
        if path.exists():
            break
        missing.append(path)
    return missing


def _remove_empty(directories: list[Path]) -> None:
    """Remove each directory (deepest first) this run created and left empty; anything holding a file stays."""
    for directory in directories:
        try:
            directory.rmdir()  # only succeeds on an empty directory
        except OSError:
            pass


def _new_log(target: Path) -> Path:
    """A file for the target's output while it runs, outside the extraction (a run that captures nothing adds nothing there)."""
    handle, name = tempfile.mkstemp(prefix=f"harvest-{target.stem}-", suffix=".log")
    os.close(handle)
    return Path(name)


def _keep_log(running_log: Path, out: Path, outcome: RunOutcome) -> Path | None:
    """Where the target's output stays: raw/target.log beside the capture; with no capture, in its temporary file
    (named in the error), or nowhere when the error shows every line of it."""
    if outcome.capture.graphs:
        kept = out / "raw" / TARGET_LOG
        try:
            shutil.move(running_log, kept)
        except OSError:  # disk full: the temporary file still holds it
            return running_log
        return kept
    if _all_shown(outcome.output):
        running_log.unlink(missing_ok=True)
        return None
    return running_log


def _all_shown(output: TargetOutput) -> bool:
    """An error shows every line the target printed, whole: no need to keep its log."""
    return output.lines <= TAIL_LINES and not output.log_error and all(len(line.rstrip("\n")) <= TAIL_WIDTH for line in output.tail)


def _output_tail(outcome: RunOutcome | None, target_log: Path | None) -> str:
    """The last lines the target printed, to follow an error's first line: "" when it printed nothing (or did not run)."""
    output = outcome.output if outcome is not None else TargetOutput()
    if not output.lines:
        return ""
    count = f"{output.lines} line{'s' if output.lines > 1 else ''}"
    if len(output.tail) == output.lines:
        heading = f"{count}, kept in {target_log}" if target_log is not None else count
    else:
        heading = f"the last {len(output.tail)} of {count}; all of them in {target_log}"
    if output.log_error:
        heading += f"; the log stopped early: {output.log_error}"
    lines = [line.rstrip("\n") for line in output.tail]
    shown = [line if len(line) <= TAIL_WIDTH else line[:TAIL_WIDTH] + " ..." for line in lines]
    return f"\nthe target's output ({heading}):\n" + "\n".join(shown)


CPP_KERNEL = re.compile(r"^(\w+) = async_compile\.cpp(?:_pybinding)?\(", re.M)


def _refuse_cpp_only(capture: Capture, target: Path, ran_into: Path | None = None) -> None:
    """Graphs Inductor compiled with its C++ CPU backend hold no Triton kernel: say what they hold and how to get
    Triton kernels, instead of writing an empty extraction. `ran_into`: the -o of a run, whose raw/ keeps the capture."""
    if not capture.graphs or any("async_compile.triton(" in g.source for g in capture.graphs):
        return
    cpp = [name for g in capture.graphs for name in CPP_KERNEL.findall(g.source)]
    if not cpp:
        return
    found = f"{len(cpp)} C++ kernel{'s' if len(cpp) > 1 else ''} ({', '.join(cpp[:3])}{', ...' if len(cpp) > 3 else ''}) and no Triton kernel"
    if ran_into is None:
        raise NoTritonKernelsError(
            f"{target} holds {found}: Inductor compiled it with its C++ CPU backend; for Triton kernels, run the script "
            'through `harvest extract` (it uses Inductor\'s CPU Triton backend) or set torch._inductor.config.cpu_backend = "triton" before it compiles'
        )
    raise NoTritonKernelsError(
        f"{target} compiled {found}: it chose Inductor's C++ CPU backend (torch._inductor.config.cpu_backend); leave it "
        f'at "triton", as `harvest extract` sets it, for Triton kernels; the capture is kept in {ran_into}/raw'
    )


def _write_extraction(target: Path, out: Path, capture: Capture, outcome: RunOutcome | None, target_log: Path | None,
                      names: str, force: bool, on_progress: Progress) -> ExtractResult:
    """raw/ first (nothing captured is ever lost), then every graph's modules, report.md and manifest.json."""
    raw_sources = {graph.name: graph.source for graph in capture.graphs}
    replay = target.is_dir() and (out.resolve() == target.resolve() or out.resolve() == target.resolve().parent)
    if not replay and capture.graphs:  # replaying an extraction in place: its raw/ is the input, leave it as it is
        try:
            write_raw(out, raw_sources, capture_record(capture))  # before anything can fail: nothing captured is ever lost
            if outcome is not None and capture.mode != "artifact" and not remember_made_here(out):
                on_progress(f"could not note {out} as made here ({state_dir()} cannot be written): "
                            "`harvest bench` in its graph and `harvest run --with` will need --trust-artifact")
            source_raw = raw_capture_dir(target) if target.is_dir() else None
            if source_raw is not None:  # replaying another extraction: its recorded launch data comes along
                copy_records(source_raw, out / "raw", [g.name for g in capture.graphs])
            if outcome is None:  # no run: a target.log left in raw/ is the output of a run whose capture this replaces
                (out / "raw" / TARGET_LOG).unlink(missing_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot write the raw capture to {out / 'raw'}: {exc.strerror or exc}; free some space, or pick another -o") from exc
    _raise_for_run(outcome, capture, out, target_log)
    if outcome is not None:
        _refuse_cpp_only(capture, target, ran_into=out)
    if capture.incomplete and not capture.graphs:
        raise ParseError(f"{capture.incomplete}; no complete graph before the cut")
    if not capture.graphs and capture.mode == "artifact":
        raise NoGraphsError(f"no Inductor graph in {target}: it holds no output code Inductor wrote; give the script that calls torch.compile, or an artifact of a run that compiled")
    if not capture.graphs:
        raise NoGraphsError(
            f"no Inductor graphs captured from {target}: it never ran a torch.compile'd function "
            "(wrap a function or module with torch.compile and call it; a graph break that leaves nothing to compile gives none too)"
            + _output_tail(outcome, target_log)
        )

    result = ExtractResult(out_dir=out, manifest={}, outcome=outcome)
    plans: list[GraphPlan] = []
    for captured in capture.graphs:
        try:
            plans.append(plan_graph(captured, capture, names))
        except ParseError as exc:
            raise ParseError(f"{exc}; the capture is kept in {out}/raw/{captured.name}/output_code.py") from exc
    rendered = iter(render_all(capture, names, [(plan, job) for plan in plans for job in plan.jobs], on_progress))
    graphs = [finish_graph(plan, capture, [next(rendered) for _ in plan.jobs], on_progress) for plan in plans]
    files = {path: source for done in graphs for path, source in done.files.items()}
    if files:  # what every module shares, written once beside the graphs
        files[HARNESS_PATH] = harness_source(list(files.values()))
    result.skipped = [skip for done in graphs for skip in done.skipped]

    manifest = extraction_json(capture, names, [done.entry for done in graphs])
    files.update(report_texts(manifest, read_report_inputs(out, manifest, pending=files, capture=capture_record(capture), with_bench=False)))
    manifest["generated_files"] = generated_files_json(files)
    result.writes = write_generated(out, files, force=force)
    if result.writes.failed:  # disk full: the manifest says which files are missing and why
        manifest["not_written"] = dict(sorted(result.writes.failed.items()))
    if not replay:
        remove_stale_raw(out, set(raw_sources))
    write_manifest(out, manifest)
    result.manifest = manifest
    result.modules = [out / path for path in files if path.endswith(".py") and path != HARNESS_PATH and path not in result.writes.failed]
    if result.writes.failed:
        first, why = next(iter(manifest["not_written"].items()))
        raise OutputError(
            f"could not write {len(result.writes.failed)} of {len(files)} files to {out} ({first}: {why}); manifest.json lists them "
            f"under not_written; free some space and run `harvest extract {out}` to write them from raw/"
        )
    if _failed(outcome):
        cause = _interpreter_cannot_run(outcome, capture)  # type: ignore[arg-type]
        if cause:  # said instead of the interpreter's own error, which follows in the target's output
            raise TargetError(f"{cause}; kept the partial capture in {out}/raw, extracted to {out}{_output_tail(outcome, target_log)}")
        raise _target_error(outcome, out, len(capture.graphs), target_log)  # type: ignore[arg-type]
    if capture.incomplete:
        raise ParseError(f"{capture.incomplete}; the {len(capture.graphs)} complete graph(s) before the cut were extracted to {out}")
    return result


def _refuse_foreign_extraction(out: Path, target: Path, force: bool) -> None:
    """-o inside another extraction, or on the extraction of another target (its raw/, maybe the only copy of a
    run, would be replaced): refuse before anything runs. --force replaces another target's extraction."""
    for parent in out.resolve().parents:
        if (parent / "raw" / CAPTURE_JSON).is_file():
            raise OutputError(f"{out} is inside the extraction {parent}: pick an -o outside it")
    record = out / "raw" / CAPTURE_JSON
    if force or not record.is_file():
        return
    source_raw = raw_capture_dir(target) if target.is_dir() else None
    old, new = _recorded_target(record), _recorded_target(source_raw / CAPTURE_JSON) if source_raw else str(target)
    if old and new and Path(old).name != Path(new).name:
        raise OutputError(
            f"{out} holds the extraction of {old}; extracting {target} there would replace its raw capture: "
            "pick another -o, or add --force to replace it"
        )


def _recorded_target(capture_json: Path) -> str:
    try:
        record = json.loads(capture_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return record.get("target", "") if isinstance(record, dict) and isinstance(record.get("target"), str) else ""


def _import_torch_meanwhile() -> threading.Thread:
    """Import torch in this process while the target runs in its child: rendering needs it afterwards (the
    reference resolves ATen ops through it), and importing it here after the run added its whole import time
    (seconds for a CUDA wheel) to the extraction. Only an import: no device is touched."""

    def load() -> None:
        try:
            import torch  # noqa: F401
        except Exception:  # rendering reports a missing or broken torch itself, with its own message
            pass

    thread = threading.Thread(target=load, name="harvest-import-torch", daemon=True)
    thread.start()
    return thread


def run_artifact_graphs(capture: Capture, out: Path, device: str, target_sm: int, record: str, record_cap_mib: float,
                        record_total_cap_mib: float, timeout: float | None,
                        on_progress: Progress) -> tuple[Capture, RunOutcome, Path | None]:
    """Run an artifact's graphs in the capture child; the static capture gains the recorded launches. Returns the
    capture, the run's outcome and where the run's output is (raw/target.log)."""
    staging = fresh_staging(out)
    running_log = _new_log(Path(capture.target))
    outcome = run_wrapper_modules(
        {graph.index: graph.source for graph in capture.graphs}, timeout=timeout, device=device, target_sm=target_sm,
        on_progress=on_progress, log_path=running_log, record_dir=staging, record=record, record_cap_mib=record_cap_mib,
        record_total_cap_mib=record_total_cap_mib,
    )
    ran = outcome.capture
    graphs = tuple(replace(g, recorded=outcome.recorded.get(g.index, {})) for g in capture.graphs)
    capture = replace(capture, graphs=graphs, gpu_name=ran.gpu_name, device=f"{ran.device}; artifact run with --run-artifact")
    place_records(out, staging, [(g.index, g.name) for g in capture.graphs])
    if outcome.status != "ok":
        on_progress(f"running the artifact failed ({_exception_line(outcome.error)}); kernels it did not reach keep the static path")
    outcome = replace(outcome, capture=capture)
    return capture, outcome, _keep_log(running_log, out, outcome)


@dataclass(frozen=True)
class GraphPlan:
    """One graph, parsed, with its fusion and its kernels sorted into render jobs and kernels with a reason."""

    captured: CapturedGraph
    graph: Graph
    fusion: GraphFusion
    kernel_fusions: dict[str, KernelFusion]
    planned: tuple[KernelOutcome, ...]
    jobs: tuple[RenderJob, ...]  # one per planned kernel without a reason, in order


def plan_graph(captured: CapturedGraph, capture: Capture, names: str) -> GraphPlan:
    """Parse one captured graph, compute its fusion once, and say which kernels get a module."""
    try:
        graph = parse_output_code(captured.source, name=captured.name, role=captured.role)
    except ParseError as exc:
        raise ParseError(f"{capture.target}, graph {captured.name}: {exc}") from exc
    readable = kernel_names(graph) if names == "readable" else {k.name: k.name for k in graph.kernels}
    fusion = graph_fusion(graph, captured.provenance)
    kernel_fusions = {kf.kernel: kf for kf in fusion.kernel_fusions}  # computed once, for the graph and each kernel
    planned: list[KernelOutcome] = []
    jobs: list[RenderJob] = []
    for kernel in graph.kernels:
        launches = graph.launches_of(kernel.name)
        display_name = readable.get(kernel.name, kernel.name)
        reason = kernel.standalone_reason
        if reason is None and not launches:
            reason = "never launched in call(): no shapes to build inputs from"
        planned.append(KernelOutcome(kernel, display_name, len(launches), standalone_reason=reason))
        if reason is None:
            jobs.append((kernel, launches[0], display_name, f"{graph.name}/{display_name}.py", kernel_fusions[kernel.name]))
    return GraphPlan(captured, graph, fusion, kernel_fusions, tuple(planned), tuple(jobs))


def finish_graph(plan: GraphPlan, capture: Capture, rendered: list[Rendered],
                 on_progress: Progress) -> GraphResult:
    """A graph's manifest entry, module files and skipped kernels, from its plan and its jobs' renders (in order)."""
    made_by_job = iter(zip(plan.jobs, rendered))
    outcomes = []
    for outcome in plan.planned:
        if outcome.standalone_reason is None:
            (_, _, _, path, _), (source, reference, launch_params, reason) = next(made_by_job)
            outcome = (replace(outcome, module=path, source=source, reference=reference, launch_params=launch_params)
                       if source is not None else replace(outcome, standalone_reason=reason))
        outcomes.append(outcome)
    made = [outcome for outcome in outcomes if outcome.source is not None]
    graph, captured = plan.graph, plan.captured
    on_progress(f"{graph.name}: {len(graph.kernels)} Triton kernels, {len(made)} standalone modules, {len(graph.externs)} extern calls")
    kernels = [kernel_json(o, captured, capture, graph.name, plan.kernel_fusions[o.kernel.name]) for o in outcomes]
    return GraphResult(
        entry=graph_json(captured, graph, kernels, plan.fusion),
        files={o.module: o.source for o in made},  # type: ignore[misc]
        skipped=tuple((o.kernel.name, o.standalone_reason) for o in outcomes if o.standalone_reason is not None),
    )


def extract_graph(captured: CapturedGraph, capture: Capture, names: str, on_progress: Progress) -> GraphResult:
    """Parse one captured graph and render its kernels: its manifest entry, its module files, its skipped kernels."""
    plan = plan_graph(captured, capture, names)
    return finish_graph(plan, capture, render_all(capture, names, [(plan, job) for job in plan.jobs]), on_progress)


# One kernel to render: the kernel, its first launch, its display name, its module's path, its fusion.
RenderJob = tuple[Kernel, Launch, str, str, KernelFusion]

# What the render workers need: set before they fork, so nothing is pickled but an index and the result.
_RENDER_CONTEXT: tuple | None = None


# A rendered module: (source, its reference's summary for the manifest, launch_params, None), or (None, None, (),
# why not).
Rendered = tuple[str | None, dict | None, tuple[tuple[str, str | None], ...], str | None]


def render_all(capture: Capture, names: str, jobs: list[tuple[GraphPlan, RenderJob]], on_progress: Progress = lambda message: None) -> list[Rendered]:
    """Render kernel modules, of one graph or of all: (source, reference summary, None) or (None, None, why not), in
    job order.

    Renaming with libcst is the slow part of an extraction, and kernels are independent: on a machine with several
    cores they render in forked worker processes, one pool for every graph of the extraction (most graphs hold only
    a few kernels). The parent imports torch first (the reference needs it; never CUDA: nothing here touches a
    device), so forking is cheap and safe. The result is the same, byte for byte, as rendering one after the other.
    """
    global _RENDER_CONTEXT
    _RENDER_CONTEXT = (capture, names, jobs)
    workers = min(len(jobs), os.cpu_count() or 1, 8)
    count = counter(on_progress)
    count(RENDERING, 0, len(jobs))
    done: list[Rendered] = []
    try:
        if workers < 2 or len(jobs) < 4 or "fork" not in multiprocessing.get_all_start_methods():
            for index in range(len(jobs)):
                done.append(_render_job(index))
                count(RENDERING, len(done), len(jobs))
            return done
        # The reference resolves ATen ops through torch: import it once here, not once in every worker.
        import torch  # noqa: F401

        context = multiprocessing.get_context("fork")
        with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            for rendered in pool.map(_render_job, range(len(jobs))):
                done.append(rendered)
                count(RENDERING, len(done), len(jobs))
        return done
    finally:
        _RENDER_CONTEXT = None


def _render_job(index: int) -> Rendered:
    assert _RENDER_CONTEXT is not None
    capture, names, jobs = _RENDER_CONTEXT
    plan, (kernel, launch, display_name, path, fusion) = jobs[index]
    try:
        return *build_module(plan.captured, capture, plan.graph, kernel, launch, display_name, names, path, fusion), None
    except (RenderError, SyntaxError) as exc:
        return None, None, (), f"could not render: {exc}"
    except Exception as exc:  # a bug on one odd kernel must not cost the user every other kernel
        return None, None, (), f"internal error while rendering ({type(exc).__name__}: {exc}); please report it"


def build_module(
    captured: CapturedGraph, capture: Capture, graph: Graph, kernel: Kernel, launch: Launch, display_name: str, names: str,
    path: str, fusion: KernelFusion,
) -> tuple[str, dict, tuple[tuple[str, str | None], ...]]:
    """Rename (or not), build the reference, plan the module, render it: one kernel's standalone module source, its
    reference's summary for the manifest, and how Inductor's launch arguments map to the module's (`harvest run`)."""
    if names == "readable" and kernel.kind != "user":
        code = rename_kernel(kernel.source, build_context(kernel, launch, graph, display_name))
    else:  # Inductor's names kept, or a user's kernel as they wrote it
        plain = strip_inductor_decorators(kernel.source)
        code = RenameResult(plain, kernel.jit_name or kernel.name, mapping=(),
                            params=tuple((p, p) for p in kernel.signature), ok=True)
    reference = build_reference(kernel, launch, graph, dict(code.params), captured.kernel_graphs.get(kernel.name))
    context = ModuleContext(
        capture=capture,
        graph=graph,
        kernel=kernel,
        launch=launch,
        code=code,
        reference=reference,
        fusion=fusion,
        module_path=path,
        winner=captured.winners.get(kernel.name),
        recorded=captured.recorded.get(kernel.name),
    )
    plan = plan_module(context)
    return render(plan), reference_json(reference, dict(code.params)), launch_params(kernel, plan)


def launch_params(kernel: Kernel, plan: ModulePlan) -> tuple[tuple[str, str | None], ...]:
    """Each positional parameter of Inductor's launch, in its order, and the module's launch() parameter it is (None:
    a size the module's kernel fixes in its body)."""
    mine = {a.inductor_param: a.param for a in plan.arguments}
    return tuple((p, mine.get(p)) for p in runtime_params(kernel))


def _check_artifact_device(capture: Capture, device: str) -> None:
    """--run-artifact on CUDA code needs a GPU: say so before anything runs."""
    if not any("device_str='cuda'" in g.source for g in capture.graphs):
        return
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device != "cuda":
        raise UsageError("--run-artifact: the artifact was compiled for CUDA and there is no GPU here; leave --run-artifact out to only read it")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UsageError(f"cannot read target {path}: {exc.strerror or exc}") from exc


def _check_syntax(target: Path) -> None:
    try:
        source = target.read_bytes()  # bytes: compile() honours a `# -*- coding: -*-` line
    except OSError as exc:
        raise UsageError(f"cannot read target {target}: {exc.strerror or exc}") from exc
    if not source.strip():
        raise UsageError(f"target {target} is empty: nothing to run; give a script that calls torch.compile")
    try:
        compile(source, str(target), "exec")
    except SyntaxError as exc:
        # Null bytes or undecodable text (a SyntaxError since Python 3.11.4 / 3.12): not a Python file at all.
        if b"\0" in source or exc.lineno is None or str(exc.msg).startswith("(unicode error)"):
            reason = "null bytes" if b"\0" in source else exc.msg
            raise UsageError(f"not a Python file: {target} is binary or not valid text ({reason}); give a Python script") from exc
        raise TargetError(f"syntax error in {target} line {exc.lineno}: {exc.msg}; fix the script and run again") from exc
    except ValueError as exc:  # null bytes on Pythons before 3.11.4
        raise UsageError(f"not a Python file: {target} ({exc})") from exc


def _failed(outcome: RunOutcome | None) -> bool:
    return outcome is not None and outcome.status != "ok" and not (outcome.status == "exit" and outcome.exit_code == 0)


def _raise_for_run(outcome: RunOutcome | None, capture: Capture, out: Path, target_log: Path | None) -> None:
    """Failures with nothing to extract; a failed run that captured graphs is extracted first, then reported."""
    if outcome is not None and outcome.status == "no-cuda":
        raise UsageError("--device cuda, but torch sees no GPU here; use --device cpu (or auto) for the CPU Triton path")
    if outcome is not None and outcome.status == "no-cpu-triton":
        raise UsageError(f"{outcome.error}; extract on a GPU (--device cuda), or use torch >= 2.6 for the CPU Triton path")
    if not capture.graphs and _failed(outcome):
        raise _target_error(outcome, out, 0, target_log)  # type: ignore[arg-type]


def _target_error(outcome: RunOutcome, out: Path, graphs: int, target_log: Path | None) -> HarvestError:
    """The one-line error of a failed run, then the tail of what the target printed (its traceback when it raised);
    what was captured before the failure has been written."""
    kept = f"kept the partial capture in {out}/raw: {graphs} graph(s) captured before that, extracted to {out}" if graphs else "nothing was captured"
    tail = _output_tail(outcome, target_log)
    if outcome.status == "interrupted":
        return Interrupted(f"interrupted (Ctrl-C) while the target ran: the target was stopped; {kept}{tail}")
    if outcome.status == "timeout":
        return TimeoutError_(f"target ran past --timeout ({outcome.seconds:.0f} s) and was stopped; {kept}{tail}")
    if outcome.status == "crashed":  # no Python exception to name: what it printed last follows
        return TargetError(f"target process died (exit status {outcome.exit_code}) without a Python exception; {kept}{tail}")
    if outcome.status == "exit":
        return TargetError(f"target called sys.exit({outcome.exit_code}){': ' + outcome.error if outcome.error else ''}; {kept}{tail}")
    return TargetError(f"target raised {_exception_line(outcome.error)}; {kept}{tail}")


def _interpreter_cannot_run(outcome: RunOutcome, capture: Capture) -> str:
    """Why a run on the CPU path failed in the Triton interpreter, where harvest knows ("" where it does not): a
    cooperative reduction's grid barrier makes every program of the grid wait for the others, which the interpreter,
    running them one after another, cannot do."""
    if capture.mode != "cpu-triton" or "InterpreterError" not in (outcome.error or ""):
        return ""
    if any(COOPERATIVE in graph.source for graph in capture.graphs):
        return ("cooperative reductions (torch._inductor.config.triton.cooperative_reductions) cannot run under the "
                "Triton interpreter: their grid barrier needs every program running at once, on a GPU; extract on a "
                "GPU, or turn them off for the CPU path")
    return ""


def _exception_line(error: str) -> str:
    """`ValueError: message` of a traceback: the first unindented line after its last frame (a message may span lines)."""
    lines = error.rstrip().splitlines()
    frames = [i for i, line in enumerate(lines) if line.startswith("  File ")]
    for line in lines[frames[-1] + 1 if frames else 0 :]:
        if line and not line.startswith(" "):
            return line
    return lines[-1] if lines else "unknown error"
