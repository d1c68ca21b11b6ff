"""Where a bench child dies in a graph's call() under the profiler (issue 24, H200): the steps of
bench_inductor.in_graph and timing.step_profile run one by one on one graph of an extraction, with faulthandler on,
each announced before it starts, so a crash in native code names the step it happened in.

    python scripts/gpu_step_debug.py EXTRACTION GRAPH
"""

import faulthandler
import json
import sys
from pathlib import Path

faulthandler.enable()
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from harvest.bench.child import load_module  # noqa: E402
from harvest.bench.inductor import flushed_before_each_kernel, pin_winners  # noqa: E402
from harvest.bench.timing import device_times, l2_flush_buffer, step_profile  # noqa: E402


def say(text: str) -> None:
    print(text, flush=True)


def main(extraction: str, graph_name: str) -> None:
    manifest = json.loads((Path(extraction) / "manifest.json").read_text())
    graph = next(g for g in manifest["graphs"] if g["name"] == graph_name)
    names = [k["name"] for k in graph["kernels"]]
    module = load_module(str(Path(extraction) / graph["raw"]), "debug_graph", register=True)
    capture = json.loads((Path(extraction) / "raw" / "capture.json").read_text())
    winners = next((g.get("winners") or {} for g in capture["graphs"] if g["name"] == graph_name), {})
    pin_winners(module, winners)
    flush = l2_flush_buffer()
    torch.manual_seed(0)
    inputs = list(module.get_args())
    say(f"{graph_name}: {len(inputs)} inputs, {len(names)} kernels")
    for n in range(3):
        say(f"call {n}")
        module.call(list(inputs))
    torch.cuda.synchronize()
    say("device_times, as it runs")
    found = device_times(lambda: module.call(list(inputs)), names, flush, reps=20)
    say(f"  {sum(len(v) for v in found.values())} events")
    say("device_times, flushed before each kernel")
    with flushed_before_each_kernel(module, names, flush):
        found = device_times(lambda: module.call(list(inputs)), names, flush, reps=20)
    say(f"  {sum(len(v) for v in found.values())} events")
    say("step_profile")
    step = step_profile(lambda: module.call(list(inputs)), reps=20)
    say(f"  call {step['call']}, busy {step['busy_ms']:.4f} ms, {len(step['kernels'])} device kernels")
    say("done")


if __name__ == "__main__":
    main(*sys.argv[1:3])
