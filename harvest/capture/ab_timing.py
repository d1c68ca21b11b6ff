"""Child side of `harvest run --with`'s timing, on a GPU: the compiled step with Inductor's kernels (A) and with the
edited ones (B), interleaved in one process, after the target's own run.

The recorder kept each graph's first call and a copy of its inputs (strides kept: Inductor asserts them). One step
is every graph called once, in the order the target first called them, on fresh copies of those inputs (made before
the clock starts). A and B alternate, the order flipping every repetition, so drift (clocks, temperature, the
allocator) falls on both alike; warm-up rounds come first and are not counted.

  * The step: CUDA events around all the graphs' calls, the host synchronized before the start, so the time
    includes what the host adds (launch overhead: an edited module's compiled kernel launched directly, or through
    Triton's JIT where harvest.capture.launcher cannot; Inductor's through its own launcher) as a real step does.
    Where the target ran its graphs as CUDA graphs (mode="reduce-overhead"), each side's step is captured in one
    CUDA graph and the replays are timed, as that target's steps run; the replays' outputs are compared too.
  * Each replaced kernel: its own device time in its graph (the profiler's CUPTI records: no event or launch gap
    inside), A and B in alternating profiler sessions, summed over its launches in one call of its graph.

Results are medians and 20th/80th percentiles in milliseconds, written as JSON for the parent (harvest.run).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harvest.bench.timing import kernel_durations, summarize


def fresh_inputs(inputs: list) -> list:
    """A new copy of a graph's inputs: each tensor in new memory with its own size and strides, others as they are."""
    import torch

    def copy(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            made = torch.empty_strided(value.size(), value.stride(), dtype=value.dtype, device=value.device)
            return made.copy_(value.detach()) if value.numel() else made
        return value

    return [copy(v) for v in inputs]


def step_time(graphs: list[tuple[int, Any, list]]) -> float:
    """One step (every graph called once on fresh inputs), timed with CUDA events, in ms."""
    import torch

    prepared = [(call, fresh_inputs(inputs)) for _, call, inputs in graphs]
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for call, inputs in prepared:
        call(inputs)
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def captured_step(graphs: list[tuple[int, Any, list]], swaps: Any, edited: bool) -> tuple[Any, list]:
    """The step captured in one CUDA graph (every graph called once, on inputs of its own that stay), with the
    edited kernels (`edited`) or Inductor's; and what the calls returned, which each replay writes again."""
    import torch

    swaps.enabled = edited
    static = [(call, fresh_inputs(inputs)) for _, call, inputs in graphs]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # once outside the capture: whatever is compiled or allocated first, is
        for call, inputs in static:
            call(list(inputs))  # (Inductor's call(args) empties the list it is given, not the tensors)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outputs = [call(list(inputs)) for call, inputs in static]
    swaps.enabled = True
    return graph, outputs


def replay_time(graph: Any) -> float:
    """One replay of a captured step, timed with CUDA events, in ms."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def compare_replays(before: list, after: list) -> dict[str, int]:
    """Every tensor the step returned, Inductor's replay against the edited one's: how many are equal bit for bit,
    within torch.testing's default tolerance for their dtype, or differ."""
    import torch

    counts = {"bit for bit": 0, "within tolerance": 0, "differs": 0}
    flat = [(a, b) for x, y in zip(before, after)
            for a, b in zip(x if isinstance(x, (list, tuple)) else [x], y if isinstance(y, (list, tuple)) else [y])
            if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)]
    for a, b in flat:
        if a.shape == b.shape and a.dtype == b.dtype and torch.equal(a, b):
            counts["bit for bit"] += 1
            continue
        try:
            torch.testing.assert_close(b, a, equal_nan=True)
            counts["within tolerance"] += 1
        except AssertionError:
            counts["differs"] += 1
    return counts


def kernel_times(call: Any, inputs: list, names: list[str], reps: int) -> dict[str, list[float]]:
    """Per kernel name: its device time per call of the graph (the sum over its launches in that call), in ms."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    prepared = [fresh_inputs(inputs) for _ in range(reps)]
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for each in prepared:
            call(each)
        torch.cuda.synchronize()
    found = kernel_durations(prof, names)
    per_call = {}
    for name, durations in found.items():
        if durations and len(durations) % reps == 0:
            launches = len(durations) // reps
            per_call[name] = [sum(durations[i * launches:(i + 1) * launches]) for i in range(reps)]
        else:
            per_call[name] = []
    return per_call


def _summary(values: list[float]) -> dict | None:
    found = summarize(values)
    return None if found is None else found._asdict()


def time_a_b(graphs: list[tuple[int, Any, list]], swaps: Any, kernel_names: dict[tuple[int, str], str],
             budget_s: float = 6.0, host_times: dict | None = None, cuda_graphs: bool = False) -> dict:
    """The step and each swapped kernel, with Inductor's kernels (swaps off) and the edited ones (swaps on).
    graphs: (graph index, its call, its first call's inputs) in first-call order; kernel_names: (graph, Inductor's
    kernel) -> the edited module's kernel name (what the profiler calls it); host_times: what the recorder fills
    with each swapped launch's host seconds ((graph, kernel, swapped) -> [s]), read for the step's repetitions;
    cuda_graphs: the target ran its graphs as CUDA graphs, so the step is each side's step captured in one CUDA
    graph and replayed (no host time a launch), and the two replays' outputs are compared."""
    began = time.monotonic()
    steps: dict[str, list[float]] = {"inductor": [], "edited": []}
    replays: dict[str, Any] = {}
    captured = ""
    if cuda_graphs:  # the target ran its graphs as CUDA graphs: so does the step, each side captured once
        try:
            replays = {mode: captured_step(graphs, swaps, mode == "edited") for mode in ("inductor", "edited")}
        except Exception as exc:  # a graph that cannot be captured: the step is timed as launches, and says why
            message = next((line for line in str(exc).strip().splitlines() if line.strip()), type(exc).__name__)
            captured = f"not captured ({type(exc).__name__}: {message}): the step timed as launches"
            replays = {}
            swaps.enabled = True

    def both(record: bool, flip: bool) -> None:
        for mode in (("edited", "inductor") if flip else ("inductor", "edited")):
            swaps.enabled = mode == "edited"
            took = replay_time(replays[mode][0]) if replays else step_time(graphs)
            if record:
                steps[mode].append(took)

    warm = time.monotonic()
    for i in range(3):  # warm-up: the edited modules are compiled already (the target's run launched them)
        both(False, bool(i % 2))
    pair_s = max((time.monotonic() - warm) / 3, 1e-4)
    reps = max(10, min(200, int(budget_s * 0.6 / pair_s)))
    if host_times is not None:
        host_times.clear()
    for i in range(reps):
        both(True, bool(i % 2))
    launches = {key: sorted(v) for key, v in (host_times or {}).items()}

    kernels = []
    by_graph: dict[int, list[tuple[str, str]]] = {}
    for (graph, inductor), mine in kernel_names.items():
        by_graph.setdefault(graph, []).append((inductor, mine))
    calls = {index: (call, inputs) for index, call, inputs in graphs}
    kernel_reps = max(5, min(50, reps // 2))
    for graph, pairs in sorted(by_graph.items()):
        if graph not in calls:
            continue
        call, inputs = calls[graph]
        times: dict[str, list[float]] = {"inductor": [], "edited": []}
        for round_ in range(4):
            for mode in (("edited", "inductor") if round_ % 2 else ("inductor", "edited")):
                swaps.enabled = mode == "edited"
                names = [inductor if mode == "inductor" else mine for inductor, mine in pairs]
                found = kernel_times(call, inputs, names, kernel_reps)
                for (inductor, _mine), name in zip(pairs, names):
                    times.setdefault(f"{mode}:{inductor}", []).extend(found.get(name, []))
        for inductor, mine in pairs:
            kernels.append({"graph": graph, "kernel": inductor, "module_kernel": mine,
                            "inductor": _summary(times.get(f"inductor:{inductor}", [])),
                            "edited": _summary(times.get(f"edited:{inductor}", [])),
                            "host_us": {mode: round(1e6 * found[len(found) // 2], 1) if found else None
                                        for mode, found in (("inductor", launches.get((graph, inductor, False))),
                                                            ("edited", launches.get((graph, inductor, True))))}})
    swaps.enabled = True
    step = {"inductor": _summary(steps["inductor"]), "edited": _summary(steps["edited"]),
            "graphs": [index for index, _, _ in graphs], "repetitions": reps,
            "as": "cuda graph replays" if replays else "launches"}
    if replays:
        step["replay_outputs"] = compare_replays(replays["inductor"][1], replays["edited"][1])
    elif captured:
        step["captured"] = captured
    return {"step": step, "kernels": kernels, "seconds": round(time.monotonic() - began, 1)}


@contextlib.contextmanager
def written_partitions(partitions: dict[int, tuple[Any, list]]) -> Iterator[None]:
    """Each partitioned wrapper's call() runs the partition functions Inductor wrote, not what CUDA graph trees made
    of them (replays of the graphs the target's run recorded, which no swap can change): the A/B launches the
    kernels, or captures them into its own CUDA graph per side. Put back after."""
    now = {graph: list(runner.partitions) for graph, (runner, _) in partitions.items()}
    for runner, written in partitions.values():
        runner.partitions = list(written)
    try:
        yield
    finally:
        for graph, (runner, _) in partitions.items():
            runner.partitions = now[graph]


def write_timing(path: Path, recorder: Any) -> None:
    """Time A and B from what the recorder kept; the JSON the parent reads (an "error" when it could not)."""
    try:
        import torch

        if not torch.cuda.is_available():
            data: dict = {"error": "no GPU: timing is for the GPU path"}
        elif recorder.swaps is None or not recorder.graph_calls:
            data = {"error": "no graph was called with its inputs kept"}
        else:
            recorder.timing = True  # the launch hook's fast path: no recording while timing
            recorder.host_times = {}
            with written_partitions(recorder.partitions):
                data = time_a_b(recorder.graph_calls, recorder.swaps, recorder.swaps.kernel_names(),
                                host_times=recorder.host_times, cuda_graphs=bool(recorder.cuda_graphs))
    except Exception as exc:  # timing is the last thing the run does: say why it failed, keep the comparison
        message = next((line for line in str(exc).strip().splitlines() if line.strip()), "")
        data = {"error": f"{type(exc).__name__}: {message}"}
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
