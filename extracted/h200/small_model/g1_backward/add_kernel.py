"""add_kernel: pointwise kernel fusing aten.add

Extracted by harvest from examples/small_model.py (graph g1_backward).
Inductor kernel: triton_poi_fused_add_1   kind: pointwise
Fused ATen ops: aten.add
Source lines:
    examples/small_model.py:26 in forward: scores = (h @ x.transpose(-2, -1)) * self.scale
Captured with torch 2.11.0+cu130, triton 3.6.0, on cuda (NVIDIA H200).
Command: harvest extract examples/small_model.py

Run it (paths from the extraction directory):
    python g1_backward/add_kernel.py --check                      # on a GPU
    TRITON_INTERPRET=1 python g1_backward/add_kernel.py --check   # on a CPU, through the Triton interpreter
    python g1_backward/add_kernel.py --bench                      # time kernel and eager reference (GPU, CUDA events)

Names (this module <- Inductor's output_code.py  [FX node]):
    add_kernel <- triton_poi_fused_add_1
    bmm_add_ptr <- in_out_ptr0  [buf6]
    bmm_ptr <- in_ptr0  [buf5]
    n_elements <- xnumel
    BLOCK_SIZE <- XBLOCK
    block_start <- xoffset
    offsets <- xindex
    bmm <- tmp0
    bmm_1 <- tmp1
    add <- tmp2  [add_4]
    offsets <- x0

Notes:
    bound in_out_ptr0 to bmm_2 by read order (same meta as another input)
    bound in_ptr0 to bmm_5 by read order (same meta as another input)
    no data recorded for this launch: data not saved: the extraction's cap of 12 MiB is used up (--record-total-cap); --check uses made-up inputs
"""

import argparse
import collections
import hashlib
import os
import sys

import torch
import triton
import triton.language as tl


# >>> kernel (edit freely: once this text differs from what harvest extracted, --check compares with tolerances)
@triton.jit
def add_kernel(bmm_add_ptr, bmm_ptr, n_elements, BLOCK_SIZE : tl.constexpr):
    n_elements = 1048576  # fixed: at this size every block is full, so Inductor left out the bounds mask
    block_start = tl.program_id(0) * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)[:]
    bmm = tl.load(bmm_add_ptr + (offsets), None)
    bmm_1 = tl.load(bmm_ptr + (offsets), None)
    add = bmm + bmm_1
    tl.store(bmm_add_ptr + (offsets), add, None)
# <<< kernel


# The config the kernel ran with (recorded in the run; chosen by the only config).
CONFIG = {'BLOCK_SIZE': 1024, 'num_warps': 4, 'num_stages': 1}


def launch(bmm_add_ptr, bmm_ptr, n_elements, config=CONFIG):
    """Launch add_kernel on its arguments (outputs are written in place)."""
    constexprs = {key: value for key, value in config.items() if key not in ("num_warps", "num_stages")}
    grid = (triton.cdiv(n_elements, config["BLOCK_SIZE"]),)
    add_kernel[grid](
        bmm_add_ptr, bmm_ptr, n_elements,
        **constexprs,
        num_warps=config["num_warps"],
        num_stages=config["num_stages"],
    )


# Every argument of the launch, as recorded in the real run. A tensor is a View of one of STORAGES: (storage, shape,
# stride, storage offset in elements, dtype); tensors on one storage alias each other as they did in the graph.
View = collections.namedtuple("View", "storage shape stride offset dtype")
# Each storage: the byte range [lo, hi) its views cover, the dtype made-up values are drawn in (None: zeros, the
# kernel only writes it) and, for index tensors, the bound Inductor asserts indices stay below.
Storage = collections.namedtuple("Storage", "lo hi fill high")
STORAGES = [
    Storage(0, 4194304, torch.float32, None),  # bmm_add_ptr
    Storage(0, 4194304, torch.float32, None),  # bmm_ptr
]
ARGUMENTS = {
    "bmm_add_ptr": View(0, (8, 256, 512), (131072, 512, 1), 0, torch.float32),
    "bmm_ptr": View(1, (8, 256, 512), (131072, 512, 1), 0, torch.float32),
    "n_elements": 1048576,
}
OUTPUTS = ['bmm_add_ptr']  # the tensors the kernel writes: --check compares each of them
RECORD = None  # the run's data for this launch (inputs before, outputs after), relative to this file
RECORD_DEVICE = None  # where the record was made: its outputs are matched bit for bit there
KERNEL_SHA256 = "5228e19fe6db2ed957b7a63037202efd7390dd820a56ba4e2e71425ef294c0d0"  # of the kernel text above as extracted
EXACT_POSSIBLE = True  # False when the kernel's result depends on launch order (atomics)


def _views(storages, device):
    """ARGUMENTS with every tensor built as its view of `storages` (uint8 tensors)."""
    args = {}
    for name, arg in ARGUMENTS.items():
        if isinstance(arg, View):
            base = storages[arg.storage].untyped_storage()
            args[name] = torch.empty(0, dtype=arg.dtype, device=device).set_(base, arg.offset, arg.shape, arg.stride)
        else:
            args[name] = arg
    return args


def _made_up(storage, generator):
    """Random bytes for one storage, drawn as values of its dtype (so floats are finite, indices in bounds)."""
    if storage.fill is None:
        return torch.zeros(storage.hi, dtype=torch.uint8)
    itemsize = torch.empty(0, dtype=storage.fill).element_size()
    count = -(-storage.hi // itemsize)
    if storage.fill == torch.bool:
        values = torch.rand(count, generator=generator) < 0.5
    elif storage.fill.is_floating_point:
        values = torch.randn(count, generator=generator)
    else:
        high = storage.high if storage.high is not None else 8
        values = torch.randint(0 if storage.high is not None else -8, high, (count,), generator=generator)
    return values.to(storage.fill).view(torch.uint8)[: storage.hi].clone()


def make_inputs(device="cuda", seed=0):
    """Made-up arguments with the launch's exact layouts: random inputs, zeroed outputs."""
    generator = torch.Generator().manual_seed(seed)
    return _views([_made_up(s, generator).to(device) for s in STORAGES], device)


def load_record(device):
    """(arguments as the run passed them, {output: what Inductor's kernel wrote}), or None without a record."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), RECORD) if RECORD else None
    if path is None or not os.path.isfile(path):
        return None
    import pickle  # here, not at the top, so that the kernel region keeps its line numbers (and its PTX's .loc)

    try:
        data = torch.load(path, map_location="cpu", weights_only=True)  # plain uint8 tensors, nothing executable
    except pickle.UnpicklingError as exc:  # torch refused the file before anything in it ran
        words = str(exc).split()
        what = f"it pickles {words[words.index('GLOBAL') + 1]}" if "GLOBAL" in words else str(exc).strip().splitlines()[0]
        sys.exit(f"{RECORD}: not a launch record harvest wrote ({what}); refused without loading it: extract again to remake it")

    def storages(spans):
        result = []
        for storage, span in zip(STORAGES, spans):
            full = torch.zeros(storage.hi, dtype=torch.uint8)
            if span is not None:  # None: the kernel only writes this storage; the run's bytes there were garbage
                full[storage.lo :] = span
            result.append(full.to(device))
        return result

    before = storages(data["before"])
    after = storages([new if new is not None else old for old, new in zip(data["before"], data["after"])])
    written = _views(after, device)
    return _views(before, device), {name: written[name] for name in OUTPUTS}


def reference(bmm_add_ptr, bmm_ptr):
    bmm_2 = bmm_add_ptr
    bmm_5 = bmm_ptr
    add_4 = torch.ops.aten.add.Tensor(bmm_2, bmm_5)
    return {"bmm_add_ptr": add_4}


# Outputs the eager reference cannot compute, with the reason (the record still compares them).
UNCHECKED = {}

TOLERANCES = {
    torch.float32: dict(rtol=1e-4, atol=1e-5),
    torch.float16: dict(rtol=1e-3, atol=1e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
    torch.float64: dict(rtol=1e-7, atol=1e-7),
}
EXACT = dict(rtol=0, atol=0)


def compare(name, actual, expected, oracle, tolerance=None):
    """True when actual matches expected (exactly, or within the dtype's tolerance); prints the first mismatches."""
    tolerance = tolerance or TOLERANCES.get(actual.dtype, EXACT)
    what = ""
    expected = expected.to(actual.dtype).reshape(actual.shape) if expected.numel() == actual.numel() else expected
    if expected.shape != actual.shape:
        print(f"  {name}: {oracle}: shape {tuple(actual.shape)} but it gives {tuple(expected.shape)}")
        return False
    close = torch.isclose(actual.cpu(), expected.cpu(), equal_nan=True, **tolerance)
    limits = "bit for bit" if tolerance is EXACT else f"rtol={tolerance['rtol']:.3g}, atol={tolerance['atol']:.3g}"
    if bool(close.all()):
        print(f"  {name}: {oracle}: ok ({actual.numel()} values, {actual.dtype}, {limits}{what})")
        return True
    bad = (~close).nonzero()
    print(f"  {name}: {oracle}: {len(bad)} of {actual.numel()} values differ ({limits}{what}); first ones:")
    for index in bad[:5].tolist():
        where = tuple(index)
        print(f"    at {where}: kernel {actual.cpu()[where].item()!r}, {oracle} {expected.cpu()[where].item()!r}")
    return False


def unedited():
    """True while the kernel text in this file is the one harvest extracted."""
    with open(os.path.abspath(__file__), encoding="utf-8") as f:
        text = f.read()
    start = text.index("# >>> kernel")
    body = text[text.index("\n", start) + 1 : text.index("# <<< kernel")]
    return hashlib.sha256(body.strip().encode("utf-8")).hexdigest() == KERNEL_SHA256


def this_device(device):
    return "cpu" if device == "cpu" else f"cuda:{torch.cuda.get_device_name(device)}"


def check(device, seed=0):
    """Launch the kernel and compare every output it writes with two oracles, each where it exists:
    recorded: what Inductor's kernel wrote in the real run, from the same inputs (bit for bit when the kernel is
    unedited and this is the device it was recorded on); reference: the eager ops of the kernel's FX graph."""
    record = load_record(device)
    if record is None:
        print(f"no record at {RECORD or '(none was saved)'}: made-up inputs (seed {seed}), only the eager reference compares")
        args, recorded = make_inputs(device, seed), {}
    else:
        args, recorded = record
    exact = record is not None and EXACT_POSSIBLE and unedited() and this_device(device) == RECORD_DEVICE
    reference_args = [args[name].clone() if isinstance(args[name], torch.Tensor) else args[name] for name in ['bmm_add_ptr', 'bmm_ptr']]
    launch(**args)
    expected = reference(*reference_args)
    print(f"add_kernel on {device} ({'recorded inputs' if record is not None else 'made-up inputs'}):")
    ok = True
    for name in OUTPUTS + [n for n in expected if n not in OUTPUTS]:
        compared = []
        if name in recorded:
            compared.append(compare(name, args[name], recorded[name], "recorded", EXACT if exact else None))
        if name in expected:
            compared.append(compare(name, args[name], expected[name], "reference"))
        elif name in UNCHECKED:
            print(f"  {name}: reference: not computed ({UNCHECKED[name]})")
        if not compared:
            print(f"  {name}: NOT COMPARED: no record and no reference for it")
        ok = ok and bool(compared) and all(compared)
    return ok


def bench_inputs(device, seed=0):
    """The arguments --bench times the kernel on: the run's recorded inputs when they were saved, else made-up ones."""
    record = load_record(device)
    if record is not None:
        return record[0], "recorded"
    return make_inputs(device, seed), f"made-up (seed {seed})"


def bench(device="cuda", seed=0, config=None, copy_gbps=None, inputs=None):
    """Time the kernel and its eager reference on the GPU, on the same inputs; returns the figures (see time_gpu).
    inputs: what bench_inputs() returned, when the caller has it already."""
    args, inputs = inputs or bench_inputs(device, seed)
    reference_args = [args[name] for name in ['bmm_add_ptr', 'bmm_ptr']]
    flush = l2_flush_buffer(device)
    timings = {"kernel": time_gpu(lambda: launch(**args, config=config or CONFIG), flush)}
    try:
        computed = reference(*reference_args)
        if computed:
            timings["eager"] = time_gpu(lambda: reference(*reference_args), flush)
            if UNCHECKED:  # eager did part of the kernel's work: its time is a lower bound, say so
                timings["eager"]["partial"] = f"the reference computes {len(computed)} of the kernel's {len(computed) + len(UNCHECKED)} outputs"
        else:  # timing a reference that computes nothing would time an empty call
            timings["eager"] = {"error": "no eager reference: it computes none of the kernel's outputs (" + next(iter(UNCHECKED.values()), "none") + ")"}
    except Exception as exc:  # a reference that cannot run on these inputs is reported, not fatal
        timings["eager"] = {"error": f"{type(exc).__name__}: {exc}"}
    if copy_gbps is None:
        copy_gbps = copy_bandwidth(flush, device)
    return bench_result("add_kernel", device, inputs, bytes_moved(ARGUMENTS, STORAGES, OUTPUTS), timings, copy_gbps)


# Timing: the same lines `harvest bench` times with (from harvest/timing.py).
# >>> timing: pasted verbatim into every kernel module (harvest/timing.py; imports only torch)
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


def bytes_moved(arguments, storages, outputs):
    """Bytes the launch must move at least: every tensor view it reads, once, plus every view it writes.

    arguments: name -> View(storage, shape, stride, offset, dtype) or a scalar; storages: Storage(lo, hi, fill, high),
    fill None when the kernel only writes that storage; outputs: the names it writes. A view read and written counts
    twice; identical views count once. A kernel that reads its input twice (a looped reduction's two passes) moves
    more than this, so its GB/s is a lower bound of what the memory system did.
    """
    reads, writes = set(), set()
    for name, arg in arguments.items():
        if not hasattr(arg, "storage"):  # a scalar
            continue
        view = (arg.storage, tuple(arg.shape), tuple(arg.stride), arg.offset, arg.dtype)
        if storages[arg.storage].fill is not None:
            reads.add(view)
        if name in outputs:
            writes.add(view)
    return sum(_view_bytes(v[1], v[2], v[4]) for v in reads) + sum(_view_bytes(v[1], v[2], v[4]) for v in writes)


def bench_result(kernel, device, inputs, moved, timings, copy_gbps):
    """The JSON-ready result of one module's --bench: timings gain GB/s and % of the copy bandwidth."""
    for timing in timings.values():
        if "median_ms" in timing:
            timing["gbps"] = moved / (timing["median_ms"] * 1e6) if moved else None
            timing["pct_copy"] = 100 * timing["gbps"] / copy_gbps if moved and copy_gbps else None
    return {
        "schema": BENCH_JSON_SCHEMA,
        "kernel": kernel,
        "device": torch.cuda.get_device_name(device),
        "torch": torch.__version__,
        "inputs": inputs,
        "bytes_moved": moved,
        "copy_gbps": copy_gbps,
        "timings": timings,
    }


def print_bench(result):
    """The result as the small table the module's --bench prints."""
    print(f"{result['kernel']} on {result['device']}, {result['inputs']} inputs, {result['bytes_moved'] / 1e6:.1f} MB moved; "
          f"device copy bandwidth measured now: {result['copy_gbps']:.0f} GB/s")
    print(f"{'':16s} {'median ms':>10s} {'p20':>9s} {'p80':>9s} {'GB/s':>8s} {'% copy':>7s} {'reps':>5s}  first call (compile + launch)")
    for label, t in result["timings"].items():
        if "median_ms" not in t:
            print(f"{label:16s} not timed: {t.get('error', 'unknown reason')}")
            continue
        gbps = f"{t['gbps']:8.1f}" if t.get("gbps") else f"{'-':>8s}"
        pct = f"{t['pct_copy']:6.1f}%" if t.get("pct_copy") else f"{'-':>7s}"
        print(f"{label:16s} {t['median_ms']:10.4f} {t['p20_ms']:9.4f} {t['p80_ms']:9.4f} {gbps} {pct} {t['reps']:5d}  {t['first_call_ms']:.1f} ms")
    print("(CUDA events after a warm-up, L2 flushed before each repetition; median and p20/p80 over the repetitions)")
# <<< timing


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="add_kernel: extracted Triton kernel (check it, time it, edit it).")
    parser.add_argument("--check", action="store_true", help="compare every output with the run's record and the eager reference (default)")
    parser.add_argument("--bench", action="store_true", help="time the kernel and the eager reference (CUDA events; needs a GPU)")
    parser.add_argument("--json", metavar="FILE", help="with --bench: also write the figures to FILE as JSON")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", help="cuda or cpu")
    parser.add_argument("--seed", type=int, default=0, help="seed for made-up inputs (used when there is no record)")
    options = parser.parse_args()
    if options.device == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        sys.exit("no GPU: run with TRITON_INTERPRET=1 to use the Triton interpreter on the CPU")
    ok = True
    if options.check or not options.bench:
        ok = check(options.device, options.seed)
    if options.bench:
        if options.device == "cpu" or os.environ.get("TRITON_INTERPRET") == "1":
            print("--bench needs a CUDA device: the Triton interpreter's times are not GPU times; nothing was timed")
            sys.exit(1 if not ok else 9)
        result = bench(options.device, options.seed)
        print_bench(result)
        if options.json:
            import json

            with open(options.json, "w", encoding="utf-8") as f:
                json.dump(result, f, indent=1)
    sys.exit(0 if ok else 1)
