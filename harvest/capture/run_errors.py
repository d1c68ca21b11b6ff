"""A run's output and failures, said in one line each: the target's log, the tail of what it printed, and the
errors for a script that cannot run, a run that failed or captured nothing, and graphs with no Triton kernel.

The runner (runner.py) reports how a run ended as a RunOutcome; this module turns that into what the user reads.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from harvest.capture.runner import TAIL_LINES, RunOutcome, TargetOutput
from harvest.errors import HarvestError, Interrupted, NoTritonKernelsError, TargetError, TimeoutError_, UsageError
from harvest.model import Capture

TARGET_LOG = "target.log"  # raw/target.log: the target's own stdout and stderr from the run (not replayed, not hashed)
TAIL_WIDTH = 300  # characters of each line of the target's output an error shows
CPP_KERNEL = re.compile(r"^(\w+) = async_compile\.cpp(?:_pybinding)?\(", re.M)


def new_log(target: Path) -> Path:
    """A file for the target's output while it runs, outside the extraction (a run that captures nothing adds nothing there)."""
    handle, name = tempfile.mkstemp(prefix=f"harvest-{target.stem}-", suffix=".log")
    os.close(handle)
    return Path(name)


def keep_log(running_log: Path, out: Path, outcome: RunOutcome) -> Path | None:
    """Where the target's output stays: raw/target.log beside the capture; with no capture, in its temporary file
    (named in the error), or nowhere when the error shows every line of it."""
    if outcome.capture.graphs:
        kept = out / "raw" / TARGET_LOG
        try:
            shutil.move(running_log, kept)
        except OSError:  # disk full: the temporary file still holds it
            return running_log
        return kept
    if all_shown(outcome.output):
        running_log.unlink(missing_ok=True)
        return None
    return running_log


def all_shown(output: TargetOutput) -> bool:
    """An error shows every line the target printed, whole: no need to keep its log."""
    return output.lines <= TAIL_LINES and not output.log_error and all(len(line.rstrip("\n")) <= TAIL_WIDTH for line in output.tail)


def output_tail(outcome: RunOutcome | None, target_log: Path | None) -> str:
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


def refuse_cpp_only(capture: Capture, target: Path, ran_into: Path | None = None) -> None:
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


def check_syntax(target: Path) -> None:
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


def failed(outcome: RunOutcome | None) -> bool:
    return outcome is not None and outcome.status != "ok" and not (outcome.status == "exit" and outcome.exit_code == 0)


def raise_for_run(outcome: RunOutcome | None, capture: Capture, out: Path, target_log: Path | None) -> None:
    """Failures with nothing to extract; a failed run that captured graphs is extracted first, then reported."""
    if outcome is not None and outcome.status == "no-cuda":
        raise UsageError("--device cuda, but torch sees no GPU here; use --device cpu (or auto) for the CPU Triton path")
    if outcome is not None and outcome.status == "no-cpu-triton":
        raise UsageError(f"{outcome.error}; extract on a GPU (--device cuda), or use torch >= 2.6 for the CPU Triton path")
    if not capture.graphs and failed(outcome):
        raise target_error(outcome, out, 0, target_log)  # type: ignore[arg-type]


def target_error(outcome: RunOutcome, out: Path, graphs: int, target_log: Path | None) -> HarvestError:
    """The one-line error of a failed run, then the tail of what the target printed (its traceback when it raised);
    what was captured before the failure has been written."""
    kept = f"kept the partial capture in {out}/raw: {graphs} graph(s) captured before that, extracted to {out}" if graphs else "nothing was captured"
    tail = output_tail(outcome, target_log)
    who, others = "target", ""
    if outcome.rank == "torchrun":
        return TargetError(f"torchrun started no rank (its arguments?); {kept}{tail}")
    if outcome.rank_runs:  # a torchrun job: name the rank, and what became of the others
        who = f"the target's {outcome.rank}" if outcome.rank else "the target"
        others = f" ({outcome.other_ranks})" if outcome.other_ranks else ""
    if outcome.status == "interrupted":
        return Interrupted(f"interrupted (Ctrl-C) while the target ran: the target was stopped; {kept}{tail}")
    if outcome.status == "timeout":
        running = f" ({outcome.rank} had not finished; every rank was ended)" if outcome.rank else ""
        return TimeoutError_(f"target ran past --timeout ({outcome.seconds:.0f} s) and was stopped{running}; {kept}{tail}")
    if outcome.status == "crashed":  # no Python exception to name: what it printed last follows
        return TargetError(f"{who} process died (exit status {outcome.exit_code}) without a Python exception{others}; {kept}{tail}")
    if outcome.status == "exit":
        return TargetError(f"{who} called sys.exit({outcome.exit_code}){': ' + outcome.error if outcome.error else ''}{others}; {kept}{tail}")
    return TargetError(f"{who} raised {exception_line(outcome.error)}{others}; {kept}{tail}")


def exception_line(error: str) -> str:
    """`ValueError: message` of a traceback: the first unindented line after its last frame (a message may span lines)."""
    lines = error.rstrip().splitlines()
    frames = [i for i, line in enumerate(lines) if line.startswith("  File ")]
    for line in lines[frames[-1] + 1 if frames else 0 :]:
        if line and not line.startswith(" "):
            return line
    return lines[-1] if lines else "unknown error"
