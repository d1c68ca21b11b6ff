"""The processes `harvest bench` starts and reads back: the compile-ahead children (`bench.child --warm`), the
timing child (`bench.child PLAN RESULTS`, a new one for the kernels left when one dies), and a CUDA twin's own
`--bench`. The plan they follow comes from plan.py; what they measure goes to output.py's rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from harvest.bench.child import PROGRESS
from harvest.errors import NoDeviceError
from harvest.progress import OnProgress, counter

BENCHING = "benching kernels"
NO_DEVICE = "timing needs a CUDA device and torch sees none here; check kernels on the CPU with TRITON_INTERPRET=1 python <module> --check (or harvest bench --sweep --check-only)"


def require_cuda() -> None:
    import torch

    if not torch.cuda.is_available():
        raise NoDeviceError(NO_DEVICE)


def child_env(check_only: bool) -> dict[str, str]:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])  # the folder holding harvest/ (this file: harvest/bench/)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    if check_only:
        env["TRITON_INTERPRET"] = "1"  # the interpreter runs the kernels on the CPU: correctness only, no times
    else:
        env.pop("TRITON_INTERPRET", None)
    return env


def compile_ahead(plan: dict, plan_path: Path, env: dict, on_progress: OnProgress, timeout: float = 600) -> None:
    """Compile every kernel and swept config in parallel processes first (`bench_child --warm`): Triton compiles one
    kernel in about a second of CPU, and the timing child, which must run alone, then loads them from its cache."""
    items = len(plan["kernels"]) + sum(len(job.get("sweep") or []) for job in plan["kernels"])
    workers = min(8, max(1, (os.cpu_count() or 2) // 2), items)
    if items < 4 or workers < 2:
        return
    on_progress(f"compiling {items} kernels and configs in {workers} processes before timing (Triton's cache)")
    children = [subprocess.Popen([sys.executable, "-m", "harvest.bench.child", "--warm", str(plan_path), str(k), str(workers)],
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for k in range(workers)]
    for child in children:
        try:
            child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def run_children(plan: dict, work: Path, on_progress: OnProgress, quiet_output: bool = False) -> dict:
    """Run the bench child until every kernel has a result. A child that dies (a sticky CUDA error ends the process's
    use of the GPU) loses the kernel it was on; a new child continues with the rest, as long as each one gets further."""
    plan_path, results_path = work / "plan.json", work / "results.json"
    plan_path.write_text(json.dumps(plan), encoding="utf-8")
    env = child_env(plan["check_only"])
    if not plan["check_only"]:
        compile_ahead(plan, plan_path, env, on_progress)
    empty: dict = {"graphs": {}, "kernels": {}}
    done_before = 0
    labels = {job["label"] for job in plan["kernels"]}
    count, started = counter(on_progress), set()
    count(BENCHING, 0, len(labels))
    while True:
        child = subprocess.Popen([sys.executable, "-m", "harvest.bench.child", str(plan_path), str(results_path)],
                                 env=env, stderr=subprocess.PIPE, text=True, errors="replace")
        tail: list[str] = []
        assert child.stderr is not None
        for line in child.stderr:
            if line.startswith(PROGRESS):
                message = line[len(PROGRESS):].rstrip("\n")
                on_progress(message)
                if message in labels and message not in started:  # the child starts a kernel: the one before is done
                    count(BENCHING, len(started), len(labels))
                    started.add(message)
            else:
                tail = (tail + [line])[-30:]
                if not quiet_output:
                    sys.stderr.write(line)
        code = child.wait()
        if code == 0:
            count(BENCHING, len(labels), len(labels))
        results = json.loads(results_path.read_text(encoding="utf-8")) if results_path.exists() else dict(empty)
        if code == 0:
            return results
        why = next((line.strip() for line in reversed(tail) if line.strip()), "") or f"exit status {code}"
        if code < 0:  # a signal (a crash in native code): its name says more than the last line of a warning
            why = f"killed by {signal_name(-code)}"
        graph = results.pop("current_graph", None)
        if graph is not None:  # it died in the graph's call() under the profiler: the next child leaves that out
            results["graphs"][graph] = {"error": f"the bench process died running Inductor's call() under the profiler ({why})"}
        current = results.pop("current", None)
        if current is not None:
            entry = results["kernels"].setdefault(str(current), {"errors": {}})
            entry.setdefault("errors", {})["child"] = f"the bench process died on this kernel: {why}"
        done = len(results["kernels"]) + len(results["graphs"])
        left = [job for job in plan["kernels"] if str(job["id"]) not in results["kernels"]]
        if not left:
            return results
        if done <= done_before:
            results["error"] = f"the bench process failed: {why}"
            return results
        done_before = done
        results_path.write_text(json.dumps(results), encoding="utf-8")
        on_progress(f"the bench process died ({why}); a new one continues with the {len(left)} kernel(s) left")


# -- the CUDA twin's seam -------------------------------------------------------------------------------------------------


def twin_path(extraction: Path, graph: str, display_name: str) -> Path:
    return extraction / graph / "twin" / f"{display_name}_twin.py"


def run_twin(path: Path, timeout: float = 600) -> dict:
    """`python TWIN --bench --json FILE` in a child; its median/p20/p80: timings["twin"] (else ["kernel"]) in the schema
    of timing.bench_result, or a [median, p20, p80] list under "twin_ms"."""
    with tempfile.TemporaryDirectory(prefix="harvest-twin-") as tmp:
        out = Path(tmp) / "twin.json"
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        try:
            done = subprocess.run([sys.executable, str(path), "--bench", "--json", str(out)], cwd=path.parent, env=env,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"--bench ran past {timeout:.0f} s"}
        if done.returncode != 0 or not out.exists():
            tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["no output"]
            return {"error": f"--bench exited {done.returncode}: {tail[0]}"}
        try:
            data = json.loads(out.read_text(encoding="utf-8"))
        except ValueError as exc:
            return {"error": f"its --json is not JSON ({exc})"}
    timings = data.get("timings") or {}
    figures = timings.get("twin") or timings.get("kernel") or {}
    if "median_ms" in figures:  # timing.bench_result's schema: timed by the lines harvest times with
        return {key: figures.get(key) for key in ("median_ms", "p20_ms", "p80_ms")}
    legacy = data.get("twin_ms")
    if isinstance(legacy, list) and len(legacy) == 3:  # [median, p20, p80] from the twin's own timer
        return {"median_ms": legacy[0], "p20_ms": legacy[1], "p80_ms": legacy[2], "note": "timed by the twin's own --bench, not harvest/bench/timing.py"}
    return {"error": "its --json has neither timings['twin'] (median_ms, p20_ms, p80_ms) nor twin_ms"}
