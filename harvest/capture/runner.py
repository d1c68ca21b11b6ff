"""Parent side of a capture: run the target in a child process and read back what the child wrote.

The child (harvest.capture.bootstrap) gets fresh, empty Inductor and Triton cache directories, so a warm cache can
never hide a graph. Its "[harvest] ..." progress lines are handed to `on_progress`; everything else it prints (stdout
and stderr through one pipe, in the order it was written) is the target's own output: it goes to the log file the
caller names, never to harvest's own stdout or stderr, and its last lines come back in the RunOutcome.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from harvest.capture.bootstrap import PROGRESS
from harvest.capture.ranks import RankRun, merge_ranks, ranked_status
from harvest.capture.recorded import launches_from_events
from harvest.model import AutotuneWinner, Capture, CapturedGraph, RecordedLaunch

TAIL_LINES = 20  # lines of the target's output kept to show when it fails


@dataclass(frozen=True)
class TargetOutput:
    """What the target printed (stdout and stderr as one stream), in brief; the whole of it is in the log file."""

    lines: int = 0
    tail: tuple[str, ...] = ()  # the last TAIL_LINES lines, each with its newline
    log_error: str = ""  # why the log file could not be written in full ("" when it was)


@dataclass(frozen=True)
class RunOutcome:
    """How the target's run ended, next to what it produced."""

    capture: Capture
    # "ok", "exit" (sys.exit), "raised", "timeout", "interrupted" (Ctrl-C), "crashed" (child died), "no-cuda",
    # "no-cpu-triton" (torch < 2.6 has no CPU Triton backend)
    status: str
    exit_code: int  # the target's sys.exit code (0 when it returned normally)
    error: str  # the target's traceback tail, or the tail of its output when its process died
    seconds: float
    recorded: dict[int, dict[str, RecordedLaunch]] = field(default_factory=dict)  # graph index -> kernel -> launch
    output: TargetOutput = field(default_factory=TargetOutput)
    swap_events: tuple[dict, ...] = ()  # `harvest run --with`: swapped / swap_refused / swap_failed / cuda_graph, as they came
    launch_order: dict[int, tuple[str, ...]] = field(default_factory=dict)  # graph -> its kernels, first launches in order
    rank_runs: tuple[RankRun, ...] = ()  # a torchrun job: how each rank ended and what it captured
    rank: str = ""  # a torchrun job: the ranks the status is about ("rank 1"), "torchrun" when no rank started
    other_ranks: str = ""  # a torchrun job that failed: what became of the other ranks ("rank 0 failed after it")


class TargetLog:
    """The target's output, line by line, into one file; its last lines are kept to show when it fails.

    A write that fails (disk full) ends the log, never the target: the reason is kept to be said."""

    def __init__(self, path: Path):
        self.lock = threading.Lock()  # the pump writes while the run's end closes (a grandchild may hold the pipe)
        self.lines = 0
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self.error = ""
        self.file = None
        try:
            self.file = path.open("w", encoding="utf-8", errors="replace")
        except OSError as exc:
            self.error = exc.strerror or str(exc)

    def write(self, line: str) -> None:
        with self.lock:
            self.lines += 1
            self.tail.append(line)
            if self.file is None:
                return
            try:
                self.file.write(line)
            except OSError as exc:
                self.error = exc.strerror or str(exc)
                self._close()

    def close(self) -> None:
        with self.lock:
            self._close()

    def _close(self) -> None:
        if self.file is None:
            return
        try:
            self.file.close()
        except OSError as exc:  # the last buffered write failed
            self.error = self.error or exc.strerror or str(exc)
        self.file = None

    def summary(self) -> TargetOutput:
        return TargetOutput(self.lines, tuple(self.tail), self.error)


def normalise_kernel_paths(source: str, cache_dir: str) -> str:
    """Replace the run's temporary cache directory in `# kernel path:` comments with a fixed placeholder.

    Every capture runs with a fresh cache directory (and Inductor adds a random tmpXXXX level under it), so the
    comment would differ from run to run; the rest of the file is kept byte for byte.
    """
    prefix = re.escape(cache_dir.rstrip("/")) + r"/(?:tmp[\w]+/)?"
    return re.sub(r"(# kernel path: )" + prefix, r"\1<inductor-cache>/", source)


def run_target(
    target: Path,
    args: tuple[str, ...],
    *,
    timeout: float | None = None,
    device: str = "auto",
    target_sm: int = 90,
    on_progress: Callable[[str], None] = lambda line: None,
    log_path: Path | None = None,
    record_dir: Path | None = None,
    record: str = "data",
    record_cap_mib: float = 1024,
    record_total_cap_mib: float = 4096,
    artifact: bool = False,
    swaps: Path | None = None,
    outputs_dir: Path | None = None,
    timing_out: Path | None = None,
    while_running: Callable[[Path, Callable[[str], str]], Callable[[], None]] | None = None,
    launcher: tuple[str, ...] = (),
) -> RunOutcome:
    """Run `python target args...` under the capture hooks; return every graph it compiled and how it ended.

    The target's own output (stdout and stderr) goes to `log_path` (with None, to a file in the run's temporary
    directory, removed with it); the outcome keeps its last lines. Every kernel launch is recorded; the data of each kernel's first launch in each graph goes to
    `record_dir/<graph index>/<kernel>.pt` (record="layouts", or no record_dir: layouts and values only).
    `while_running(capture_dir, normalise)` starts work on the graphs as they are captured and returns the function
    that stops it, called as soon as the target's process has ended.

    `launcher`: torchrun's own arguments. The target then runs as a torchrun job, the capture in every rank; the
    outcome's capture merges the ranks' (harvest.capture.ranks) and `rank_runs` holds each rank's own.
    """
    with tempfile.TemporaryDirectory(prefix="harvest-") as tmp:
        tmp_path = Path(tmp)
        capture_dir = tmp_path / "capture"
        capture_dir.mkdir()
        cache_dir = str(tmp_path / "inductor-cache")
        env = dict(os.environ)
        env.update(
            TORCHINDUCTOR_CACHE_DIR=cache_dir,
            TRITON_CACHE_DIR=str(tmp_path / "triton-cache"),
            TORCHINDUCTOR_FORCE_DISABLE_CACHES="1",
            PYTHONUNBUFFERED="1",
        )
        env.pop("TRITON_INTERPRET", None)  # the child decides: on only for the CPU path
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        options = [f"record={record}", f"kernel_cap={int(record_cap_mib * (1 << 20))}", f"total_cap={int(record_total_cap_mib * (1 << 20))}"]
        if record_dir is not None:
            options.append(f"record_dir={record_dir}")
        if artifact:  # `target` is a directory of graph_NNN.py wrapper modules to run, not a script
            options.append("artifact=1")
        if swaps is not None:  # `harvest run --with`: the edited modules to launch in place of Inductor's kernels
            options.append(f"swaps={swaps}")
        if outputs_dir is not None:  # and where each graph's first call saves its outputs
            options.append(f"outputs_dir={outputs_dir}")
        if timing_out is not None:  # and, on a GPU, where the A/B timing of the step goes (harvest.capture.ab_timing)
            options.append(f"timing_out={timing_out}")
        command = [sys.executable, "-m", "harvest.capture.bootstrap", str(capture_dir), device, str(target_sm), *options, "--"]
        if launcher:  # torchrun starts one bootstrap per rank; each writes under rank<r>/
            command = [sys.executable, "-m", "torch.distributed.run", *launcher, *command[1:-1], "ranked=1", "--"]
        command += [str(target), *args]

        started = time.monotonic()
        log = TargetLog(log_path if log_path is not None else tmp_path / "target.log")
        child = subprocess.Popen(
            command,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,  # one pipe: the log keeps the order the target wrote in
            text=True,
            errors="replace",
            start_new_session=True,  # so a timeout can end the target's own children too
        )

        def pump() -> None:
            assert child.stdout is not None
            for line in child.stdout:
                if line.startswith(PROGRESS):
                    on_progress(line[len(PROGRESS) :].rstrip("\n"))
                else:
                    log.write(line)

        pumping = threading.Thread(target=pump, daemon=True)
        pumping.start()
        stop_meanwhile = while_running(capture_dir, lambda text: normalise_kernel_paths(text, cache_dir)) \
            if while_running is not None else (lambda: None)
        timed_out = interrupted = False
        try:
            child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            end_run(child, capture_dir if launcher else None)
        except KeyboardInterrupt:  # Ctrl-C: end the target (its own session, so it did not get the signal) and keep what it captured
            interrupted = True
            end_run(child, capture_dir if launcher else None)
        stop_meanwhile()
        pumping.join(timeout=5)
        log.close()
        seconds = time.monotonic() - started

        if launcher:
            return ranked_outcome(target, args, capture_dir, cache_dir, launcher, timed_out, interrupted, seconds, log.summary())
        events = read_events(capture_dir / "events.jsonl")
        foreign = uncaptured_graphs(Path(cache_dir), capture_dir)
        if foreign:
            on_progress(f"{foreign} graph(s) compiled by a process the target started (spawned or forked) were not captured: "
                        "harvest hooks the target's own process; run that script with harvest itself to capture them")
        capture = build_capture(target, args, capture_dir, events, cache_dir)
        exit_event = next((e for e in events if e["event"] == "exit"), None)
        if timed_out or interrupted:
            status, code, error = "timeout" if timed_out else "interrupted", 0, ""
        elif exit_event is None:
            status, code, error = "crashed", child.returncode, "".join(list(log.tail)[-12:])
        else:
            status, code, error = exit_event["status"], exit_event["code"], exit_event["error"]
        order: dict[int, list[str]] = {}
        for event in events:
            if event["event"] == "launch":
                order.setdefault(event["graph"], []).append(event["kernel"])
        return RunOutcome(
            capture=capture, status=status, exit_code=code, error=error, seconds=seconds, recorded=launches_from_events(events),
            output=log.summary(), swap_events=tuple(e for e in events if e["event"].startswith("swap") or e["event"] == "cuda_graph"),
            launch_order={g: tuple(k) for g, k in order.items()},
        )


def end_run(child: subprocess.Popen, ranked_dir: Path | None) -> None:
    """Kill the target's process group; for a torchrun job first ask torchrun to end its ranks (each rank runs in a
    session of its own, out of the group's reach), then kill any rank still there by the pid it logged."""
    if ranked_dir is not None:
        os.killpg(child.pid, signal.SIGTERM)
        try:
            child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait()
    for rank_dir in sorted(ranked_dir.glob("rank*")) if ranked_dir is not None else []:
        env = next((e for e in read_events(rank_dir / "events.jsonl") if e["event"] == "env"), {})
        if isinstance(env.get("pid"), int):
            try:
                os.killpg(env["pid"], signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def ranked_outcome(target: Path, args: tuple[str, ...], capture_dir: Path, cache_dir: str, launcher: tuple[str, ...],
                   timed_out: bool, interrupted: bool, seconds: float, output: TargetOutput) -> RunOutcome:
    """A torchrun job's outcome: every rank's capture merged, each rank's own kept in rank_runs."""
    runs = []
    for rank_dir in sorted(capture_dir.glob("rank*"), key=lambda path: int(path.name[4:])):
        rank = int(rank_dir.name[4:])
        events = read_events(rank_dir / "events.jsonl")
        capture = replace(build_capture(target, args, rank_dir, events, f"{cache_dir}/rank{rank}"), launcher=launcher)
        ended = next((e for e in events if e["event"] == "exit"), None)
        status, code, error = (ended["status"], ended["code"], ended["error"]) if ended else ("ended", 0, "")
        runs.append(RankRun(rank, capture, status, code, error, float(ended.get("ended_at") or 0) if ended else 0.0))
    if not runs:  # torchrun itself failed before any rank started (bad arguments): its own output says why
        empty = Capture(str(target), tuple(args), "", "", "", "", (), "cpu-triton", launcher=launcher)
        return RunOutcome(capture=empty, status="crashed", exit_code=1, error="".join(output.tail[-12:]), seconds=seconds,
                          output=output, rank="torchrun")
    status, code, error, about, others = ranked_status(runs, timed_out, interrupted)
    merged = merge_ranks({run.rank: run.capture for run in runs})
    return RunOutcome(capture=merged, status=status, exit_code=code, error=error, seconds=seconds, output=output,
                      rank_runs=tuple(runs), rank=about, other_ranks=others)


def run_wrapper_modules(sources: dict[int, str], **options) -> RunOutcome:
    """--run-artifact: run each wrapper module's own call(get_args()) in the capture child (graph index -> source)."""
    with tempfile.TemporaryDirectory(prefix="harvest-artifact-") as tmp:
        for index, source in sources.items():
            (Path(tmp) / f"graph_{index:03d}.py").write_text(source, encoding="utf-8")
        return run_target(Path(tmp), (), artifact=True, **options)


def uncaptured_graphs(cache_dir: Path, capture_dir: Path) -> int:
    """How many wrapper modules Inductor wrote into this run's cache that the capture does not hold. A process the
    target spawns inherits the cache directory (the environment) but not harvest's hooks: this is how it shows."""
    captured = {p.read_text(encoding="utf-8", errors="replace") for p in capture_dir.glob("graph_*.py")}
    found = 0
    for path in sorted(cache_dir.rglob("*.py")) if cache_dir.is_dir() else []:
        text = path.read_text(encoding="utf-8", errors="replace")
        if "def call(" in text and "async_compile" in text and text not in captured:
            found += 1
    return found


def read_events(path: Path) -> list[dict]:
    """The child's event log; a last line cut off by a kill is ignored."""
    if not path.exists():
        return []
    events = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return events


def match_winners(winners: list[dict], names: set[str], source: str) -> dict[str, AutotuneWinner]:
    """The winners of this graph's kernels: same name, and the kernel's def text appears in this graph's source."""
    matched = {}
    for w in winners:
        if w["name"] in names and w["name"] not in matched and (not w["src"] or w["src"].strip() in source):
            matched[w["name"]] = AutotuneWinner(
                kwargs=w["kwargs"], num_warps=w["num_warps"], num_stages=w["num_stages"], chosen_by=w["chosen_by"]
            )
    return dict(sorted(matched.items()))


def kernel_graphs_of(events: list[dict], graph: int, names: set[str]) -> dict[str, dict]:
    """The recorded graph of each kernel of graph `graph` (the last one recorded: a graph Inductor generated twice
    keeps the code it saved), without the event's own fields."""
    found: dict[str, dict] = {}
    for event in events:
        if event["event"] == "kernel_graph" and event.get("graph") == graph and event.get("kernel") in names:
            found[event["kernel"]] = {k: v for k, v in event.items() if k not in ("event", "graph", "kernel")}
    return dict(sorted(found.items()))


def build_capture(target: Path, args: tuple[str, ...], capture_dir: Path, events: list[dict], cache_dir: str) -> Capture:
    env = next((e for e in events if e["event"] == "env"), {})
    winners_event = next((e for e in events if e["event"] == "winners"), {"winners": []})
    recorded = launches_from_events(events)
    artifacts: dict[int, dict] = {}
    for event in events:
        if event["event"] == "artifact":
            artifacts.setdefault(event["graph"], {})[event["name"]] = event["value"]
    graphs = []
    for event in events:
        if event["event"] != "graph":
            continue
        source_path = capture_dir / f"graph_{event['index']:03d}.py"
        if not source_path.exists():
            continue
        source = normalise_kernel_paths(source_path.read_text(encoding="utf-8"), cache_dir)
        names = set(re.findall(r"^(\w+) = async_compile\.triton\(", source, flags=re.M))
        graphs.append(
            CapturedGraph(
                index=event["index"],
                aot_id=event["aot_id"],
                compile_id=event["compile_id"],
                source=source,
                provenance=artifacts.get(event["index"], {}),
                winners=match_winners(winners_event["winners"], names, source),
                recorded=recorded.get(event["index"], {}),
                kernel_graphs=kernel_graphs_of(events, event["index"], names),
            )
        )
    mode = env.get("mode", "cpu-triton")
    device = f"cuda ({env.get('gpu', '')})" if mode == "cuda" else f"cpu (Triton interpreter, offline target sm_{env.get('sm', 90)})"
    return Capture(
        target=str(target),
        command=tuple(args),
        device=device,
        torch_version=env.get("torch", ""),
        triton_version=env.get("triton", ""),
        gpu_name=env.get("gpu", ""),
        graphs=tuple(graphs),
        mode=mode,
    )
