"""Inductor's own kernels in the bench child (harvest.bench.child): in their graph, and alone.

A graph's wrapper module (raw/<graph>/output_code.py, imported by the child) has its autotuners pinned to the configs
the recorded run used; its call(get_args()) runs under the profiler, with L2 flushed before each timed kernel or
only before each call; and each kernel object can be launched alone on an extracted module's arguments. Everything
here runs on the GPU: torch and harvest.bench.timing are imported inside the functions, as in the child.
"""

from __future__ import annotations

import inspect


def _config_json(config) -> dict:
    return {
        "kwargs": {k: v for k, v in config.kwargs.items() if isinstance(v, int)},
        "num_warps": int(config.num_warps),
        "num_stages": int(config.num_stages),
    }


def _matches(config, winner: dict) -> bool:
    return (
        all(config.kwargs.get(k) == v for k, v in winner["kwargs"].items())
        and int(config.num_warps) == winner["num_warps"]
        and int(config.num_stages) == winner["num_stages"]
    )


def pin_winners(module, winners: dict) -> None:
    """Make each kernel's autotuner pick the config the recorded run used instead of benchmarking its candidates
    again (another pick would make the comparison one of two configs, not of two launch paths)."""
    for name, winner in winners.items():
        tuner = getattr(module, name, None)
        if tuner is None or not hasattr(tuner, "autotune_to_one_config"):
            continue
        original = tuner.autotune_to_one_config

        def pick(*args, _tuner=tuner, _winner=winner, _original=original, **kwargs):
            same = [launcher for launcher in _tuner.launchers if _matches(launcher.config, _winner)]
            if same:
                _tuner.launchers = same[:1]
            else:
                _original(*args, **kwargs)

        tuner.autotune_to_one_config = pick


class flushed_before_each_kernel:
    """Within the block, each named kernel of the graph module flushes L2 right before it runs: the cache state the
    extracted kernel is timed in. (As the graph runs, a kernel finds in L2 what the kernel before it wrote.)"""

    def __init__(self, module, names, flush) -> None:
        self.tuners = [t for t in (getattr(module, n, None) for n in names) if t is not None and hasattr(t, "run")]
        self.flush = flush

    def __enter__(self) -> None:
        for tuner in self.tuners:
            def run(*args, _run=tuner.run, **kwargs):
                self.flush.zero_()
                return _run(*args, **kwargs)

            tuner.run = run  # an instance attribute in front of the class's method

    def __exit__(self, *exc) -> None:
        for tuner in self.tuners:
            vars(tuner).pop("run", None)


def example_inputs(module, graph: dict) -> list:
    """get_args()'s inputs, seeded (random values; zeros for integer tensors: indices stay in bounds), with the ones
    the plan names host inputs (bench.HOST_SCALAR_ARGUMENTS: an attention backward's seed and offset) on the host."""
    import torch

    torch.manual_seed(0)
    inputs = list(module.get_args())
    for index in graph.get("host_inputs") or []:
        if index < len(inputs) and isinstance(inputs[index], torch.Tensor):
            inputs[index] = inputs[index].cpu()
    return inputs


def in_graph(module, graph: dict, flush, iterations: int) -> tuple[list, dict, dict]:
    """Run the graph's wrapper module (imported by the caller) as call(get_args()) under the profiler; per kernel, the
    device times of its first launch in each call (the launch the record and the module are about): once with L2
    flushed right before each kernel (the figure the extracted kernel is compared with: both start from a cold L2),
    once as the graph runs (L2 flushed before each call only). Then the call as a step of a loop runs it, back to back
    (timing.step_profile: its time, and every device kernel's in it, for "What to tune first"). Returns the inputs,
    each kernel's figures and the step's."""
    import torch

    from harvest.bench.timing import device_times, step_profile, summarize

    def first_launches(durations: dict, name: str) -> list:
        found = durations.get(name, [])
        per_call = max(1, graph["launches"].get(name, 1))
        return found[0::per_call] if len(found) == iterations * per_call else found

    pin_winners(module, graph["winners"])
    inputs = example_inputs(module, graph)
    for _ in range(3):  # the first call compiles and (pinned) picks each kernel's config
        module.call(list(inputs))
    torch.cuda.synchronize()
    as_it_runs = device_times(lambda: module.call(list(inputs)), graph["kernels"], flush, reps=iterations)
    with flushed_before_each_kernel(module, graph["kernels"], flush):
        durations = device_times(lambda: module.call(list(inputs)), graph["kernels"], flush, reps=iterations)
    kernels = {}
    for name in graph["kernels"]:
        found = durations.get(name, [])
        first = first_launches(durations, name)
        warm = summarize(first_launches(as_it_runs, name))
        tuner = getattr(module, name, None)
        launchers = getattr(tuner, "launchers", None) or []
        used = _config_json(launchers[0].config) if len(launchers) == 1 and hasattr(launchers[0], "config") else None
        winner = graph["winners"].get(name)
        summary = summarize(first)
        kernels[name] = {
            "device": summary._asdict() if summary else None,
            "device_as_it_runs": warm._asdict() if warm else None,
            "events": len(found),
            "launches_per_call": max(1, graph["launches"].get(name, 1)),
            "config": used,
            "recorded_config": winner,
            "pinned": bool(used and winner and launchers and _matches(launchers[0].config, winner)),
        }
    step = step_profile(lambda: module.call(list(inputs)), reps=iterations)
    return inputs, kernels, step


def alone(tuner, args: dict, grid: list | None, recorded: list[dict] | None = None):
    """Launch Inductor's own kernel object on the module's arguments. Its positional arguments are the run's
    (`recorded`: bench.inductor_arguments) with the module's tensors in their places, in order: Inductor's kernel
    also takes the sizes the module's kernel fixes in its body, and a FixedGrid's grid values."""
    import torch

    values = list(args.values())
    if recorded:
        tensors = iter(v for v in values if isinstance(v, torch.Tensor))
        values = [next(tensors, None) if a.get("tensor") else a.get("value") for a in recorded]
    stream = torch.cuda.current_stream().cuda_stream
    if "grid" in inspect.signature(tuner.run).parameters:  # torch < 2.7 passed the grid at each launch
        return lambda: tuner.run(*values, grid=tuple(grid or (1,)), stream=stream)
    return lambda: tuner.run(*values, stream=stream)
