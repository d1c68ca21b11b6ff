"""`harvest run`'s A/B timing: the child's interleaving and what it keeps, and the table the parent writes.

The timing itself needs a GPU (CUDA events, the profiler's CUDA records): here the events are replaced by a host
clock (the one thing outside this machine), and everything else runs as it does on a GPU; the H200 runs are in
docs/benchmarks.md.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch

from harvest.capture import ab_timing
from harvest.capture.bootstrap import EventLog
from harvest.capture.record import LaunchRecorder
from harvest.run.command import RunResult, first_changed_kernel, host_decides, launch_line, timing_markdown
from harvest.run.plan import Swap


def test_fresh_inputs_copy_every_tensor_with_its_strides_into_new_memory():
    base = torch.arange(24.0).reshape(4, 6)
    view = base.t()[1:]  # strided, with an offset into its storage
    inputs = [view, 7, None, torch.zeros(0)]
    copied = ab_timing.fresh_inputs(inputs)
    assert copied[0].stride() == view.stride() and copied[0].shape == view.shape and torch.equal(copied[0], view)
    assert copied[0].untyped_storage().data_ptr() != base.untyped_storage().data_ptr()
    assert copied[1:3] == [7, None] and copied[3].numel() == 0


class Module:  # what Inductor's wrapper module is to the recorder: a call(args) that empties its list
    def __init__(self):
        self.calls = []

    def call(self, args):
        self.calls.append([a.clone() if isinstance(a, torch.Tensor) else a for a in args])
        args.clear()
        return (torch.ones(1),)


def test_the_recorder_keeps_each_graphs_first_call_and_a_copy_of_its_inputs(tmp_path):
    recorder = LaunchRecorder(EventLog(tmp_path), None, 1 << 20, 1 << 20, layouts_only=True)
    recorder.keep_inputs = True
    module = Module()
    recorder.wrap_call(module, 3)
    x = torch.randn(5)
    module.call([x, 2])
    module.call([torch.zeros(5), 9])  # a later call is not kept
    [(graph, call, inputs)] = recorder.graph_calls
    assert graph == 3 and call is module.call and torch.equal(inputs[0], x) and inputs[1] == 2
    x.add_(1)  # the kept inputs are a copy: what the target does to its tensors later does not reach them
    assert not torch.equal(inputs[0], x)


class Runner:  # what a partitioned wrapper module (torch >= 2.9, graph_partition) holds, as Inductor writes it
    def __init__(self, partitions):
        self.partitions = partitions

    def recursively_apply_fns(self, fns):
        self.partitions = [fn(c) for fn, c in zip(fns, self.partitions)]

    def call(self, args):
        (out,) = self.partitions[0](args)
        return (out,)


def test_the_ab_runs_the_partitions_inductor_wrote_where_cuda_graph_trees_replay_theirs(tmp_path):
    launched = []

    def partition_0(args):  # the kernels' launches: what a swap changes
        launched.append("written")
        return (torch.ones(1),)

    module = Module()
    module.runner = Runner([partition_0])
    module.call = module.runner.call
    recorder = LaunchRecorder(EventLog(tmp_path), None, 1 << 20, 1 << 20, layouts_only=True)
    recorder.wrap_call(module, 0)  # at load: before CUDA graph trees wrap the partitions

    def replaying(fn):  # what cudagraphify makes of a partition: after its recording, replays without Python
        return lambda args: (launched.append("replayed"), (torch.zeros(1),))[1]

    module.runner.recursively_apply_fns([replaying])
    module.call([])
    with ab_timing.written_partitions(recorder.partitions):
        module.call([])
    module.call([])
    assert launched == ["replayed", "written", "replayed"]


class HostEvent:  # a CUDA event read from the host clock: no GPU here
    def __init__(self, enable_timing=True):
        self.at = 0.0

    def record(self):
        self.at = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return (end.at - self.at) * 1e3


class Swaps:
    enabled = True


def test_a_and_b_alternate_and_the_slower_side_is_measured_slower(monkeypatch):
    monkeypatch.setattr(torch.cuda, "Event", HostEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    swaps = Swaps()
    seen = []

    def graph(args):
        seen.append(swaps.enabled)
        time.sleep(0.004 if swaps.enabled else 0.001)  # the edited step is 3 ms slower
        args.clear()

    def kernels(call, inputs, names, reps):
        return {name: [2.0 if name == "mine" else 1.0] * reps for name in names}

    monkeypatch.setattr(ab_timing, "kernel_times", kernels)
    data = ab_timing.time_a_b([(0, graph, [torch.ones(3)])], swaps, {(0, "triton_poi_fused_0"): "mine"}, budget_s=0.3)
    step = data["step"]
    assert step["repetitions"] >= 10 and step["inductor"]["samples"] == step["edited"]["samples"] == step["repetitions"]
    assert step["edited"]["median_ms"] > step["inductor"]["median_ms"] + 2
    pairs = list(zip(seen[::2], seen[1::2]))
    assert all(a != b for a, b in pairs) and pairs[0] != pairs[1]  # each repetition runs both, the order flipping
    [kernel] = data["kernels"]
    assert kernel["inductor"]["median_ms"] == 1.0 and kernel["edited"]["median_ms"] == 2.0
    assert swaps.enabled  # left on, as the run had it


def figures(median, low, high):
    return {"median_ms": median, "p20_ms": low, "p80_ms": high, "samples": 40}


def test_the_table_puts_each_kernels_win_beside_the_steps_effect():
    swap = Swap("g1_backward", 1, "triton_per_fused_0", "g1_backward/softmax_bwd_kernel.py", True, "0" * 16, (),
                "softmax_bwd_kernel")
    timing = {"step": {"inductor": figures(2.0, 1.9, 2.1), "edited": figures(2.1, 2.0, 2.2), "graphs": [0, 1],
                       "repetitions": 40},
              "kernels": [{"graph": 1, "kernel": "triton_per_fused_0", "module_kernel": "softmax_bwd_kernel",
                           "inductor": figures(0.5, 0.49, 0.51), "edited": figures(0.4, 0.39, 0.41),
                           "host_us": {"inductor": 6.5, "edited": 31.25}}], "seconds": 3.0}
    result = RunResult(1, Path("runs/1"), (swap,), device="cuda", timing=timing)
    table = "\n".join(timing_markdown(result))
    assert ("| g1_backward/triton_per_fused_0 (g1_backward/softmax_bwd_kernel.py), in its graph | 0.5000 (0.4900-0.5100) "
            "| 0.4000 (0.3900-0.4100) | 0.800 | 25.0 % | 6.5 → 31.2 |") in table
    assert "| **the whole compiled step** | 2.0000 (1.9000-2.1000) | 2.1000 (2.0000-2.2000) | 1.050 | 100 % | |" in table
    assert "40 repetitions" in table and "2 graphs" in table


def test_when_the_kernels_won_and_the_step_lost_the_table_says_the_host_decided():
    swap = Swap("g0_forward", 0, "triton_per_fused_0", "g0_forward/softmax_kernel.py", True, "0" * 16, (), "softmax_kernel")
    kernel = {"graph": 0, "kernel": "triton_per_fused_0", "module_kernel": "softmax_kernel",
              "inductor": figures(0.5, 0.49, 0.51), "edited": figures(0.4, 0.39, 0.41), "host_us": {"inductor": 14.0, "edited": 40.0}}
    timing = {"step": {"inductor": figures(2.0, 1.99, 2.01), "edited": figures(2.3, 2.29, 2.31), "graphs": [0],
                       "repetitions": 40}, "kernels": [kernel], "seconds": 3.0}
    line = ("**The host, not the kernels, decided this step**: the edited kernels took 0.1000 ms less device time, yet "
            "the step took 0.3000 ms more; a launch of the edited kernels took 40.0 µs of host time against 14.0 µs "
            "for Inductor's.")
    assert host_decides(timing) == line
    assert line in timing_markdown(RunResult(1, Path("runs/1"), (swap,), device="cuda", timing=timing))
    within = {**timing, "step": {**timing["step"], "edited": figures(2.01, 1.8, 2.2)}}  # slower within the spread
    slower_kernel = {**timing, "kernels": [{**kernel, "edited": figures(0.6, 0.59, 0.61)}]}  # the kernel lost too
    assert host_decides(within) == "" and host_decides(slower_kernel) == ""


def test_the_launch_line_says_how_the_edited_kernels_were_launched():
    static = RunResult(1, Path("runs/1"), (), launch_paths={"g0_forward/a.py": "static", "g0_forward/b.py": "static"})
    assert launch_line(static) == ("Launch path: each edited kernel compiled once per specialization and launched by "
                                   "torch's static CUDA launcher, as Inductor launches its own (harvest.capture.launcher).")
    mixed = RunResult(1, Path("runs/1"), (), launch_paths={"g0_forward/a.py": "static", "g0_forward/b.py": "direct: "
                      "torch's static CUDA launcher refused the kernel (Global scratch not yet supported)"})
    assert launch_line(mixed) == ("Launch path: each edited kernel compiled once per specialization and launched by "
                                  "Triton's compiled launcher, not through the JIT (harvest.capture.launcher); 1 of 2 by "
                                  "torch's static CUDA launcher, as Inductor launches its own; not by the static launcher: "
                                  "torch's static CUDA launcher refused the kernel (Global scratch not yet supported).")
    jit = RunResult(1, Path("runs/1"), (), launch_paths={"g0_forward/a.py": "direct", "g0_forward/b.py": "jit: Triton 3.2.0 "
                    "launches compiled kernels another way (the direct call needs Triton >= 3.3)"},
                    cuda_graphs=("g0_forward", "g1_backward"))
    assert launch_line(jit) == ("Launch path: through Triton's JIT at every launch (Triton 3.2.0 launches compiled kernels "
                                "another way (the direct call needs Triton >= 3.3)). The run captured g0_forward, "
                                "g1_backward into CUDA graphs (mode=\"reduce-overhead\"): the edited kernels ran inside them.")


class ReplayedGraph:  # a captured step: replay() takes the time the step would
    def __init__(self, seconds):
        self.seconds = seconds

    def replay(self):
        time.sleep(self.seconds)


def test_a_target_that_ran_cuda_graphs_is_timed_by_replays_and_their_outputs_compared(monkeypatch):
    monkeypatch.setattr(torch.cuda, "Event", HostEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(ab_timing, "kernel_times", lambda call, inputs, names, reps: {n: [1.0] * reps for n in names})
    outputs = {False: [(torch.ones(3), torch.zeros(2))], True: [(torch.ones(3), torch.zeros(2) + 1e-9)]}
    captured = []

    def capture(graphs, swaps, edited):
        captured.append(edited)
        return ReplayedGraph(0.001 if edited else 0.003), outputs[edited]

    monkeypatch.setattr(ab_timing, "captured_step", capture)
    data = ab_timing.time_a_b([(0, lambda args: args.clear(), [torch.ones(3)])], Swaps(), {(0, "k"): "mine"},
                              budget_s=0.3, cuda_graphs=True)
    step = data["step"]
    assert captured == [False, True] and step["as"] == "cuda graph replays"
    assert step["edited"]["median_ms"] + 1.5 < step["inductor"]["median_ms"]
    assert step["replay_outputs"] == {"bit for bit": 1, "within tolerance": 1, "differs": 0}


def test_replayed_outputs_that_differ_are_counted():
    assert ab_timing.compare_replays([torch.ones(4), (torch.ones(2),)], [torch.ones(4) * 2, (torch.ones(2),)]) == {
        "bit for bit": 1, "within tolerance": 0, "differs": 1}


@pytest.mark.parametrize("why", ["not measured on the CPU path (the Triton interpreter's times are not GPU times): "
                                 "correctness only", "not measured (--no-timing)"])
def test_no_timing_says_why_in_one_line(why):
    result = RunResult(1, Path("runs/1"), (), device="cpu", timing={"error": why})
    assert timing_markdown(result) == [f"Timing: {why}."]


def test_without_saved_data_the_first_changed_kernel_is_found_by_its_checksums(tmp_path):
    # a kernel over the record's per-kernel cap has no .pt in either run, only the checksums of its storages
    order = {0: ("triton_poi_fused_0", "triton_poi_fused_1")}
    swap = Swap("g0_inference", 0, "triton_poi_fused_1", "g0_inference/k.py", True, "0" * 16, ())
    before = {(0, "triton_poi_fused_0"): (11, 22), (0, "triton_poi_fused_1"): (22, 33)}
    after = {(0, "triton_poi_fused_0"): (11, 22), (0, "triton_poi_fused_1"): (22, 34)}
    found = first_changed_kernel(tmp_path / "a", tmp_path / "b", order, {0: "g0_inference"}, (swap,), (before, after))
    assert found == "g0_inference/triton_poi_fused_1 (g0_inference/k.py)"
    assert first_changed_kernel(tmp_path / "a", tmp_path / "b", order, {0: "g0_inference"}, (swap,), (before, before)) == ""


def test_a_first_changed_kernel_that_sums_by_atomic_adds_is_said_so(tmp_path):
    """An unedited kernel whose atomic adds sum in launch order differs between two runs on a GPU (BERT's embedding
    backward on an H100): the culprit line says that order is why, not an edit."""
    from harvest.run.command import atomic_kernels

    wrapper = ("triton_poi_fused_embedding_dense_backward_0 = async_compile.triton('triton_poi_fused_0', '''\n"
               "def triton_poi_fused_0(in_ptr0, out_ptr0):\n    tl.atomic_add(out_ptr0, tl.load(in_ptr0), sem='relaxed')\n"
               "''', device_str='cuda')\n"
               "triton_poi_fused_add_1 = async_compile.triton('triton_poi_fused_add_1', '''\n"
               "def triton_poi_fused_add_1(in_ptr0, out_ptr0):\n    tl.store(out_ptr0, tl.load(in_ptr0) + 1)\n"
               "''', device_str='cuda')\n")
    manifest = {"graphs": [{"name": "g1_backward", "kernels": [{"name": "triton_poi_fused_embedding_dense_backward_0"},
                                                              {"name": "triton_poi_fused_add_1"}]}]}
    atomic = atomic_kernels(manifest, {"g1_backward": wrapper}, {"g1_backward": 1})
    assert atomic == {(1, "triton_poi_fused_embedding_dense_backward_0")}
    for run, value in (("a", 1.0), ("b", 1.0000001)):
        (tmp_path / run / "1").mkdir(parents=True)
        torch.save({"after": [torch.tensor([value])]}, tmp_path / run / "1" / "triton_poi_fused_embedding_dense_backward_0.pt")
    swap = Swap("g1_backward", 1, "triton_poi_fused_embedding_dense_backward_0", "g1_backward/embedding_kernel.py",
                False, "0" * 16, ())
    found = first_changed_kernel(tmp_path / "a", tmp_path / "b", {1: ("triton_poi_fused_embedding_dense_backward_0",)},
                                 {1: "g1_backward"}, (swap,), atomic=atomic)
    assert found == ("g1_backward/triton_poi_fused_embedding_dense_backward_0 (g1_backward/embedding_kernel.py); its "
                     "atomic adds sum in the order the GPU runs them, another each run, and it is not edited: the "
                     "difference is that order's (--rtol/--atol accept it)")
