"""Get a target's capture: read an artifact, run an artifact's graphs (--run-artifact), or run a script.

`capture_target` is the first stage of an extraction. A run writes its tensor records into raw/'s staging directory
and the target's output into a log; what comes back is one `Captured` value for the writer and the error checks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from harvest.capture.run_errors import check_syntax, exception_line, keep_log, new_log, refuse_cpp_only
from harvest.capture.runner import RunOutcome, run_target, run_wrapper_modules
from harvest.capture.target import Target, read_artifact
from harvest.errors import UsageError
from harvest.model import Capture
from harvest.options import ExtractOptions
from harvest.prewarm import start_prewarm
from harvest.writer import fresh_staging, place_records

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Captured:
    """A capture and how it was got: `outcome` is None without a run; `target_log` is where the run's output is."""

    capture: Capture
    outcome: RunOutcome | None = None
    target_log: Path | None = None


def capture_target(target: Target, out: Path, options: ExtractOptions, on_progress: Progress) -> Captured:
    """Read or run `target`; a run's records are placed in out/raw, its output in raw/target.log (see run_errors)."""
    if options.run_artifact and not target.can_run_artifact:
        raise UsageError("--run-artifact is for an output_code.py, a TORCH_COMPILE_DEBUG dir or a TORCH_TRACE log; a script always runs, an extraction replays its record")
    if options.launcher and not target.is_script:
        raise UsageError(f"a torchrun job runs a script; {target.path} is not one (an artifact or extraction is read, not launched)")
    if not target.is_script:
        capture = read_artifact(target)
        refuse_cpp_only(capture, target.path)
        if not options.run_artifact:
            on_progress(f"reading artifact {target.path} (no run; --run-artifact runs it to record real layouts)")
            return Captured(capture)
        check_artifact_device(capture, options.device)
        on_progress(f"running artifact {target.path}: each graph's own call(get_args()) under the launch recorder (--run-artifact)")
        return run_artifact_graphs(capture, out, options, on_progress)
    check_syntax(target.path)
    staging = fresh_staging(out)
    warm = import_torch_meanwhile()
    running_log = new_log(target.path)
    outcome = run_target(
        target.path, options.args, timeout=options.timeout, device=options.device, target_sm=options.target_sm,
        on_progress=on_progress, log_path=running_log, record_dir=staging, record=options.record,
        record_cap_mib=options.record_cap_mib, record_total_cap_mib=options.record_total_cap_mib,
        while_running=start_prewarm if options.names == "readable" and not options.launcher else None,
        launcher=options.launcher,
    )
    warm.join()
    on_progress(f"target ran for {outcome.seconds:.1f} s (capture and launch recording included)")
    target_log = keep_log(running_log, out, outcome)
    if outcome.rank_runs:  # each rank's records under its own raw/rank<r>/
        place_records(out, staging, [(f"rank{run.rank}/{g.index}", f"rank{run.rank}/{g.name}")
                                     for run in outcome.rank_runs for g in run.capture.graphs])
    else:
        place_records(out, staging, [(str(g.index), g.name) for g in outcome.capture.graphs])
    return Captured(outcome.capture, outcome, target_log)


def run_artifact_graphs(capture: Capture, out: Path, options: ExtractOptions, on_progress: Progress) -> Captured:
    """Run an artifact's graphs in the capture child; the static capture gains the recorded launches."""
    staging = fresh_staging(out)
    running_log = new_log(Path(capture.target))
    outcome = run_wrapper_modules(
        {graph.index: graph.source for graph in capture.graphs}, timeout=options.timeout, device=options.device,
        target_sm=options.target_sm, on_progress=on_progress, log_path=running_log, record_dir=staging,
        record=options.record, record_cap_mib=options.record_cap_mib, record_total_cap_mib=options.record_total_cap_mib,
    )
    ran = outcome.capture
    graphs = tuple(replace(g, recorded=outcome.recorded.get(g.index, {})) for g in capture.graphs)
    capture = replace(capture, graphs=graphs, gpu_name=ran.gpu_name, device=f"{ran.device}; artifact run with --run-artifact")
    place_records(out, staging, [(str(g.index), g.name) for g in capture.graphs])
    if outcome.status != "ok":
        on_progress(f"running the artifact failed ({exception_line(outcome.error)}); kernels it did not reach keep the static path")
    outcome = replace(outcome, capture=capture)
    return Captured(capture, outcome, keep_log(running_log, out, outcome))


def check_artifact_device(capture: Capture, device: str) -> None:
    """--run-artifact on CUDA code needs a GPU: say so before anything runs."""
    if not any("device_str='cuda'" in g.source for g in capture.graphs):
        return
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device != "cuda":
        raise UsageError("--run-artifact: the artifact was compiled for CUDA and there is no GPU here; leave --run-artifact out to only read it")


def import_torch_meanwhile() -> threading.Thread:
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
