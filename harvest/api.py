"""`harvest.extract(target, out_dir)`: the whole pipeline, top to bottom.

    classify the target  ->  capture (run it, or read an artifact)  ->  raw/ written first
    plan every graph  ->  render every kernel (rename, reference, module)  ->  harness.py, report, manifest.json

Each stage lives in its package (capture/, module/, writer.py); this module only sequences them and says why an
extraction stopped. A failure keeps what holds a capture: raw/ is written before anything else can fail.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harvest.capture.artifacts import CAPTURE_JSON, capture_record
from harvest.capture.capture_target import Captured, capture_target
from harvest.capture.run_errors import (
    TARGET_LOG,
    failed,
    output_tail,
    raise_for_run,
    refuse_cpp_only,
    target_error,
)
from harvest.capture.runner import RunOutcome
from harvest.capture.target import Target, classify
from harvest.errors import Interrupted, NoGraphsError, OutputError, ParseError
from harvest.manifest import extraction_json, generated_files_json
from harvest.module.pool import GraphPlan, finish_graph, plan_graph, render_all
from harvest.module.render import HARNESS_PATH, harness_source
from harvest.module.shared import share_rank_kernels
from harvest.options import ExtractOptions
from harvest.report_html import read_report_inputs, report_texts
from harvest.trust import remember_made_here, state_dir
from harvest.writer import (
    STAGING,
    WriteReport,
    copy_records,
    copy_tree,
    ensure_writable,
    remove_stale_raw,
    write_generated,
    write_manifest,
    write_raw,
)

DEFAULT_OPTIONS = ExtractOptions()  # (frozen: one instance serves every call that passes none)
Progress = Callable[[str], None]  # messages; a ProgressDisplay also takes Counts (harvest/progress.py)


@dataclass(frozen=True)
class ExtractResult:
    """What an extraction wrote: its manifest, the modules written or kept, the kernels left out and why."""

    out_dir: Path
    manifest: dict
    modules: tuple[Path, ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()  # (kernel, reason) not made standalone
    writes: WriteReport = field(default_factory=WriteReport)
    outcome: RunOutcome | None = None  # None for artifact targets
    target_log: Path | None = None  # where the run's target output is (raw/target.log); None without a run


def extract(target: str | Path, out_dir: str | Path | None = None, options: ExtractOptions = DEFAULT_OPTIONS,
            on_progress: Progress = lambda message: None) -> ExtractResult:
    """Capture every Inductor graph of `target` and write one standalone module per Triton kernel.

    target: a script (run in a child process under the capture hooks, with `options.args`), or an artifact read
    without a run: an output_code.py, a TORCH_COMPILE_DEBUG directory, a TORCH_TRACE log, or an earlier extraction
    (or its raw/), which is replayed to identical files (in place when out_dir is left out). Raises a HarvestError
    subclass with a one-line message on bad input; whatever was captured is written before that, and the
    directories this call created that hold nothing are removed.

    A run records every kernel launch (layouts, scalars, grid, config) and, with options.record "data", the data of
    each kernel's first launch in each graph (raw/<graph>/records/<kernel>.pt): the modules' inputs and their
    --check's "recorded" oracle. The target's own stdout and stderr go to raw/target.log.
    """
    classified = classify(Path(target))
    out = Path(out_dir) if out_dir is not None else classified.default_out_dir()
    created = missing_dirs(out / "raw")
    ensure_writable(out)
    try:
        refuse_foreign_extraction(out, classified, options.force)
        captured = capture_target(classified, out, options, on_progress)
        try:
            return write_extraction(classified, out, captured, options, on_progress)
        except KeyboardInterrupt:  # Ctrl-C after the run: raw/ is written first, so the capture is never lost
            kept = f"the capture is kept in {out}/raw: `harvest extract {out}` renders it again" if (out / "raw" / CAPTURE_JSON).exists() else "nothing was written"
            raise Interrupted(f"interrupted (Ctrl-C) while writing the extraction; {kept}") from None
    except BaseException:  # a failure keeps what holds a capture; the directories this run made for nothing go
        shutil.rmtree(out / "raw" / STAGING, ignore_errors=True)
        remove_empty(created)
        raise


def write_extraction(target: Target, out: Path, captured: Captured, options: ExtractOptions,
                     on_progress: Progress) -> ExtractResult:
    """raw/ first (nothing captured is ever lost), then every graph's modules, report.md and manifest.json."""
    capture, outcome, target_log = captured.capture, captured.outcome, captured.target_log
    replay = target.replays_into(out)
    if not replay and capture.graphs:  # replaying an extraction in place: its raw/ is the input, leave it as it is
        write_raw_capture(target, out, captured, on_progress)
    check_captured(target, out, captured)

    plans: list[GraphPlan] = []
    for graph in capture.graphs:
        try:
            plans.append(plan_graph(graph, capture, options.names))
        except ParseError as exc:
            raise ParseError(f"{exc}; the capture is kept in {out}/raw/{graph.name}/output_code.py") from exc
    rendered = iter(render_all(capture, options.names, [job for plan in plans for job in plan.jobs], on_progress))
    graphs = [finish_graph(plan, capture, [next(rendered) for _ in plan.jobs], on_progress) for plan in plans]
    graphs = share_rank_kernels(capture, graphs)  # a torchrun job: a kernel the same on every rank written once
    files = {path: source for done in graphs for path, source in done.files.items()}
    if files:  # what every module shares, written once beside the graphs
        files[HARNESS_PATH] = harness_source(list(files.values()))

    manifest = extraction_json(capture, options.names, [done.entry for done in graphs])
    files.update(report_texts(manifest, read_report_inputs(out, manifest, pending=files, capture=capture_record(capture), with_bench=False)))
    manifest["generated_files"] = generated_files_json(files)
    writes = write_generated(out, files, force=options.force)
    if writes.failed:  # disk full: the manifest says which files are missing and why
        manifest["not_written"] = dict(sorted(writes.failed.items()))
    if not replay:
        remove_stale_raw(out, {graph.name for graph in capture.graphs} if not capture.ranks else {f"rank{r}" for r in capture.ranks})
    write_manifest(out, manifest)
    if writes.failed:
        first, why = next(iter(manifest["not_written"].items()))
        raise OutputError(
            f"could not write {len(writes.failed)} of {len(files)} files to {out} ({first}: {why}); manifest.json lists them "
            f"under not_written; free some space and run `harvest extract {out}` to write them from raw/"
        )
    raise_after_write(out, captured)
    return ExtractResult(
        out_dir=out, manifest=manifest, outcome=outcome, target_log=target_log, writes=writes,
        modules=tuple(out / path for path in files if path.endswith(".py") and path != HARNESS_PATH),
        skipped=tuple(skip for done in graphs for skip in done.skipped),
    )


def write_raw_capture(target: Target, out: Path, captured: Captured, on_progress: Progress) -> None:
    """raw/: every graph's output_code.py and capture.json, the records of a replayed extraction; noted as made here."""
    capture = captured.capture
    try:
        if capture.ranks:  # a torchrun job: every rank's own capture in raw/rank<r>/, the merged one in raw/
            write_rank_raws(target, out, captured)
        write_raw(out, {} if capture.ranks else {graph.name: graph.source for graph in capture.graphs}, capture_record(capture))
        if captured.outcome is not None and capture.mode != "artifact" and not remember_made_here(out):
            on_progress(f"could not note {out} as made here ({state_dir()} cannot be written): "
                        "`harvest bench` in its graph and `harvest run --with` will need --trust-artifact")
        if target.raw_dir is not None and not capture.ranks:  # replaying another extraction: its recorded launch data comes along
            copy_records(target.raw_dir, out / "raw", [g.name for g in capture.graphs])
        if captured.outcome is None:  # no run: a target.log left in raw/ is the output of a run whose capture this replaces
            (out / "raw" / TARGET_LOG).unlink(missing_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot write the raw capture to {out / 'raw'}: {exc.strerror or exc}; free some space, or pick another -o") from exc


def write_rank_raws(target: Target, out: Path, captured: Captured) -> None:
    """raw/rank<r>/ of a torchrun job: from the run, each rank's capture (a raw/ of its own, which replays and diffs
    alone); from another extraction, its rank directories as they are (records included)."""
    if captured.outcome is not None and captured.outcome.rank_runs:
        for run in captured.outcome.rank_runs:
            write_raw(out / "raw" / f"rank{run.rank}", {graph.name: graph.source for graph in run.capture.graphs},
                      capture_record(run.capture), under="")
    elif target.raw_dir is not None and target.raw_dir.resolve() != (out / "raw").resolve():
        for rank in captured.capture.ranks:
            copy_tree(target.raw_dir / f"rank{rank}", out / "raw" / f"rank{rank}")


def check_captured(target: Target, out: Path, captured: Captured) -> None:
    """Stop, with the reason, when the capture holds nothing to render (raw/ is written by then)."""
    capture, outcome = captured.capture, captured.outcome
    raise_for_run(outcome, capture, out, captured.target_log)
    if outcome is not None:
        refuse_cpp_only(capture, target.path, ran_into=out)
    if capture.incomplete and not capture.graphs:
        raise ParseError(f"{capture.incomplete}; no complete graph before the cut")
    if not capture.graphs and capture.mode == "artifact":
        raise NoGraphsError(f"no Inductor graph in {target.path}: it holds no output code Inductor wrote; give the script that calls torch.compile, or an artifact of a run that compiled")
    if not capture.graphs:
        raise NoGraphsError(
            f"no Inductor graphs captured from {target.path}: it never ran a torch.compile'd function "
            "(wrap a function or module with torch.compile and call it; a graph break that leaves nothing to compile gives none too)"
            + output_tail(outcome, captured.target_log)
        )


def raise_after_write(out: Path, captured: Captured) -> None:
    """A run that failed, or an artifact cut short, after what it captured was extracted: say so."""
    capture, outcome, target_log = captured.capture, captured.outcome, captured.target_log
    if outcome is not None and failed(outcome):
        raise target_error(outcome, out, len(capture.graphs), target_log)
    if capture.incomplete:
        raise ParseError(f"{capture.incomplete}; the {len(capture.graphs)} complete graph(s) before the cut were extracted to {out}")


def refuse_foreign_extraction(out: Path, target: Target, force: bool) -> None:
    """-o inside another extraction, or on the extraction of another target (its raw/, maybe the only copy of a
    run, would be replaced): refuse before anything runs. --force replaces another target's extraction."""
    for parent in out.resolve().parents:
        if (parent / "raw" / CAPTURE_JSON).is_file():
            raise OutputError(f"{out} is inside the extraction {parent}: pick an -o outside it")
    record = out / "raw" / CAPTURE_JSON
    if force or not record.is_file():
        return
    old = recorded_target(record)
    new = recorded_target(target.raw_dir / CAPTURE_JSON) if target.raw_dir is not None else str(target.path)
    if old and new and Path(old).name != Path(new).name:
        raise OutputError(
            f"{out} holds the extraction of {old}; extracting {target.path} there would replace its raw capture: "
            "pick another -o, or add --force to replace it"
        )


def recorded_target(capture_json: Path) -> str:
    """The target an extraction's capture.json names ("" when it cannot be read)."""
    try:
        record = json.loads(capture_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return record.get("target", "") if isinstance(record, dict) and isinstance(record.get("target"), str) else ""


def missing_dirs(directory: Path) -> list[Path]:
    """`directory` and those of its parents that do not exist yet, deepest first: what this run may create."""
    missing = []
    for path in (directory, *directory.absolute().parents):
        if path.exists():
            break
        missing.append(path)
    return missing


def remove_empty(directories: list[Path]) -> None:
    """Remove each directory (deepest first) this run created and left empty; anything holding a file stays."""
    for directory in directories:
        try:
            directory.rmdir()  # only succeeds on an empty directory
        except OSError:
            pass


__all__ = ["ExtractOptions", "ExtractResult", "extract"]
