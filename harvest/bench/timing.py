"""How harvest times GPU work: the one code path behind `harvest bench` and every kernel module's `--bench`.

CUDA is asynchronous (the lecture's first lesson): a host clock around a launch measures the launch, not the kernel.
So, for each thing timed:

  * its first call is timed apart (host clock to a synchronize): Triton compiles the kernel there (or loads it from
    its cache), so this is compile + first launch, reported as such and never mixed into the kernel's figures;
  * a warm-up follows; then every repetition is bracketed by CUDA events, with the L2 cache flushed before it (a
    buffer twice the L2's size is zeroed), so each repetition reads its inputs from HBM as a cold kernel does;
  * the GPU is kept busy (`torch.cuda._sleep`) while the host queues a batch of repetitions, so no host launch gap
    can fall between a start event and its end event — for a 5-20 µs kernel that gap would be most of the figure;
  * the result is the median and the 20th/80th percentiles over the repetitions, in milliseconds.

Bandwidth is the kernel's bytes moved (`bytes_moved`: every view it reads, once, plus every view it writes) over its
median, next to a device-to-device copy timed the same way in the same process (`copy_bandwidth`).

The code between the `>>>`/`<<<` markers is pasted verbatim into every generated kernel module (which imports only
torch and triton) and is imported from here by harvest's bench child: both time with the same lines.
`device_times` (the profiler's CUPTI record of each kernel's own duration) is the child's only; it is how a kernel
is timed inside its Inductor graph, where no events can be placed around it.
"""

from __future__ import annotations

import collections

import torch

# >>> timing: pasted verbatim into every kernel module (harvest/bench/timing.py; imports only torch)
BENCH_JSON_SCHEMA = "harvest.bench/1"  # what --bench --json writes; a CUDA twin's --bench --json writes the same


def _quantile(ordered, q):
    """The q-quantile (0..1) of an ascending list, interpolated linearly between neighbours."""
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def l2_flush_buffer(device="cuda"):
    """A buffer twice the GPU's L2 cache: zeroing it evicts whatever the previous repetition left in L2."""
    size = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 64 * 2**20
    return torch.empty(2 * size, dtype=torch.uint8, device=device)


_SLEEP_CYCLES_PER_MS = []


def _sleep_cycles_per_ms():
    """How many torch.cuda._sleep cycles make a millisecond on this GPU (measured once)."""
    if not _SLEEP_CYCLES_PER_MS:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1000)
        start.record()
        torch.cuda._sleep(5_000_000)
        end.record()
        end.synchronize()
        _SLEEP_CYCLES_PER_MS.append(5_000_000 / max(start.elapsed_time(end), 1e-3))
    return _SLEEP_CYCLES_PER_MS[0]


def time_gpu(fn, flush, warmup_ms=25.0, rep_ms=100.0, min_reps=10, max_reps=1000, batch=100):
    """The device time of fn() in milliseconds, from CUDA events after a warm-up, L2 flushed before each repetition.

    Returns {"median_ms", "p20_ms", "p80_ms", "reps", "first_call_ms", "method"}. first_call_ms is the first call
    alone by the host clock (compile + first launch); it is not one of the repetitions.
    """
    import time

    torch.cuda.synchronize()
    started = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    first_call_ms = (time.perf_counter() - started) * 1e3
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    queued = time.perf_counter()
    for _ in range(5):
        flush.zero_()
        fn()
    host_ms_per_rep = (time.perf_counter() - queued) * 1e3 / 5  # the host's time to queue one repetition
    end.record()
    end.synchronize()
    estimate = max(start.elapsed_time(end) / 5, 1e-3)  # flush included: it sizes the warm-up and the repetitions
    for _ in range(max(1, int(warmup_ms / estimate))):
        flush.zero_()
        fn()
    reps = max(min_reps, min(max_reps, int(rep_ms / estimate)))
    can_sleep = hasattr(torch.cuda, "_sleep")
    cycles_per_ms = _sleep_cycles_per_ms() if can_sleep else 0.0
    times, late = [], 0
    while len(times) < reps:
        # A batch the host queues in about 5 ms: short enough that CUDA's launch queue (about a thousand entries)
        # never fills, so the host never waits mid-batch while the GPU drains the queue behind it.
        count = min(batch, max(5, int(5.0 / max(host_ms_per_rep, 1e-3))), reps - len(times))
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
        ahead_ms = 1.0 + 1.5 * count * host_ms_per_rep
        if can_sleep:  # the GPU waits here while the host queues the whole batch behind it
            torch.cuda._sleep(int(ahead_ms * cycles_per_ms))
        queued = time.perf_counter()
        for i in range(count):
            flush.zero_()
            starts[i].record()
            fn()
            ends[i].record()
        queue_ms = (time.perf_counter() - queued) * 1e3
        host_ms_per_rep = queue_ms / count
        late += queue_ms > ahead_ms or not can_sleep
        torch.cuda.synchronize()
        times += [s.elapsed_time(e) for s, e in zip(starts, ends)]
    times.sort()
    method = "CUDA events, L2 flushed before each repetition"
    if late:
        method += f"; the host fell behind the GPU in {late} batch(es): host launch time may show in those"
    return {
        "median_ms": _quantile(times, 0.5),
        "p20_ms": _quantile(times, 0.2),
        "p80_ms": _quantile(times, 0.8),
        "reps": len(times),
        "first_call_ms": first_call_ms,
        "method": method,
    }


def copy_bandwidth(flush, device="cuda"):
    """Device-to-device copy bandwidth in GB/s (bytes read + written), timed like the kernels: their yardstick."""
    free, _ = torch.cuda.mem_get_info(device)
    nbytes = max(1 << 20, min(1 << 30, free // 8)) // 4096 * 4096
    source = torch.ones(nbytes, dtype=torch.uint8, device=device)
    target = torch.empty_like(source)
    timing = time_gpu(lambda: target.copy_(source), flush)
    return 2 * nbytes / (timing["median_ms"] * 1e6)


def matmul_peak(flush, dtype, device="cuda", n=8192):
    """The device's matmul throughput for `dtype` in TFLOP/s, measured now: cuBLAS (torch.mm) on two n x n
    matrices, timed like the kernels. The yardstick of a matmul template's TFLOP/s, as the copy is of GB/s."""
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    timing = time_gpu(lambda: torch.mm(a, b), flush, rep_ms=50.0, min_reps=5)
    return 2 * n**3 / (timing["median_ms"] * 1e9)


def _view_bytes(shape, stride, dtype):
    """Distinct bytes a view covers: a broadcast (stride 0) dimension counts once."""
    if any(size == 0 for size in shape):
        return 0
    elements = 1
    for size, step in zip(shape, stride):
        if step != 0:
            elements *= size
    span = 1 + sum((size - 1) * abs(step) for size, step in zip(shape, stride))
    return min(elements, span) * torch.empty(0, dtype=dtype).element_size()


def bytes_moved(tensors, storage_of, storages, outputs):
    """Bytes the launch must move at least: every tensor view it reads, once, plus every view it writes.

    tensors: name -> a view with shape, stride, offset and dtype; storage_of: name -> the index of the storage it
    views; storages: each with `fill`, None when the kernel only writes that storage; outputs: the names it writes.
    A view read and written counts twice; identical views count once. A kernel that reads its input twice (a looped
    reduction's two passes) moves more than this, so its GB/s is a lower bound of what the memory system did.
    """
    reads, writes = set(), set()
    for name, arg in tensors.items():
        view = (storage_of[name], tuple(arg.shape), tuple(arg.stride), arg.offset, arg.dtype)
        if storages[storage_of[name]].fill is not None:
            reads.add(view)
        if name in outputs:
            writes.add(view)
    return sum(_view_bytes(v[1], v[2], v[4]) for v in reads) + sum(_view_bytes(v[1], v[2], v[4]) for v in writes)


def bench_result(kernel, device, inputs, moved, timings, copy_gbps, flops=None, peak_tflops=None):
    """The JSON-ready result of one module's --bench: timings gain GB/s and % of the copy bandwidth, and for a
    matmul (flops: its 2*M*N*K) TFLOP/s and % of the matmul peak measured in the same run."""
    for timing in timings.values():
        if "median_ms" in timing:
            timing["gbps"] = moved / (timing["median_ms"] * 1e6) if moved else None
            timing["pct_copy"] = 100 * timing["gbps"] / copy_gbps if moved and copy_gbps else None
            if flops:
                timing["tflops"] = flops / (timing["median_ms"] * 1e9)
                timing["pct_peak"] = 100 * timing["tflops"] / peak_tflops if peak_tflops else None
    matmul = {"flops": flops, "peak_tflops": peak_tflops} if flops else {}
    return {
        "schema": BENCH_JSON_SCHEMA,
        "kernel": kernel,
        "device": torch.cuda.get_device_name(device),
        "torch": torch.__version__,
        "inputs": inputs,
        "bytes_moved": moved,
        "copy_gbps": copy_gbps,
        **matmul,
        "timings": timings,
    }


def print_bench(result):
    """The result as the small table the module's --bench prints."""
    print(f"{result['kernel']} on {result['device']}, {result['inputs']} inputs, {result['bytes_moved'] / 1e6:.1f} MB moved; "
          f"device copy bandwidth measured now: {result['copy_gbps']:.0f} GB/s")
    matmul = bool(result.get("flops"))
    if matmul:
        print(f"a matmul of {result['flops'] / 1e9:.2f} GFLOP per launch; cuBLAS peak measured now (8192^3): "
              f"{result['peak_tflops']:.0f} TFLOP/s" if result.get("peak_tflops") else "")
    extra = f" {'TFLOP/s':>8s} {'% peak':>7s}" if matmul else ""
    print(f"{'':16s} {'median ms':>10s} {'p20':>9s} {'p80':>9s} {'GB/s':>8s} {'% copy':>7s}{extra} {'reps':>5s}  first call (compile + launch)")
    for label, t in result["timings"].items():
        if "median_ms" not in t:
            print(f"{label:16s} not timed: {t.get('error', 'unknown reason')}")
            continue
        gbps = f"{t['gbps']:8.1f}" if t.get("gbps") else f"{'-':>8s}"
        pct = f"{t['pct_copy']:6.1f}%" if t.get("pct_copy") else f"{'-':>7s}"
        if matmul:
            pct += f" {t['tflops']:8.1f}" + (f" {t['pct_peak']:6.1f}%" if t.get("pct_peak") else f" {'-':>7s}")
        print(f"{label:16s} {t['median_ms']:10.4f} {t['p20_ms']:9.4f} {t['p80_ms']:9.4f} {gbps} {pct} {t['reps']:5d}  {t['first_call_ms']:.1f} ms")
    print("(CUDA events after a warm-up, L2 flushed before each repetition; median and p20/p80 over the repetitions)")
# <<< timing


DeviceTimes = collections.namedtuple("DeviceTimes", "median_ms p20_ms p80_ms samples")


def summarize(durations: list[float]) -> DeviceTimes | None:
    """Median and p20/p80 of device durations in ms (None for none)."""
    if not durations:
        return None
    ordered = sorted(durations)
    return DeviceTimes(_quantile(ordered, 0.5), _quantile(ordered, 0.2), _quantile(ordered, 0.8), len(ordered))


def kernel_durations(prof, names) -> dict[str, list[float]]:
    """{name: [ms, ...]} of every GPU kernel event called one of `names` in a finished profiler, in start order."""
    found: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for event in prof.events():
        if str(getattr(event, "device_type", "")).endswith("CUDA") and event.name in found:
            found[event.name].append((event.time_range.start, event.time_range.elapsed_us() / 1e3))
    return {name: [ms for _, ms in sorted(pairs)] for name, pairs in found.items()}


def device_times(fn, names, flush, reps: int = 20) -> dict[str, list[float]]:
    """{name: [ms per launch]} of the kernels `names` that fn() launches, from the profiler's CUDA activity records:
    each kernel's own duration on the device (CUPTI), with no event or host launch time around it. L2 is flushed
    before each call of fn. One warm-up call first."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            flush.zero_()
            fn()
        torch.cuda.synchronize()
    return kernel_durations(prof, names)


def step_profile(fn, reps: int = 20) -> dict:
    """fn() (one call of a graph) run back to back, as a training loop runs it: its wall time per call by CUDA
    events (median and p20/p80, no profiler running), then every device kernel it launches, by name, from the
    profiler: device ms per call (all its launches) and launches per call; busy_ms is their total per call. Warm-up
    calls first; nothing is flushed in between."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for start, end in zip(starts, ends):
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    call = summarize([start.elapsed_time(end) for start, end in zip(starts, ends)])
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    totals: dict[str, list[float]] = {}
    for event in prof.events():
        if str(getattr(event, "device_type", "")).endswith("CUDA") and event.time_range.elapsed_us() > 0:
            totals.setdefault(event.name, []).append(event.time_range.elapsed_us() / 1e3)
    kernels = {name: {"ms": sum(found) / reps, "launches": round(len(found) / reps)} for name, found in sorted(totals.items())}
    return {"call": call._asdict(), "kernels": kernels, "busy_ms": sum(k["ms"] for k in kernels.values()), "reps": reps}
