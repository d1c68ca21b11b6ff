"""add_sum_kernel: reduction kernel fusing aten.add, aten.view, aten.sum

Extracted by harvest from examples/small_model.py (graph g1_backward).
Inductor kernel: triton_red_fused_add_sum_view_2   kind: reduction
Fused ATen ops: aten.add, aten.view, aten.sum
Source lines:
    examples/small_model.py:25 in forward: h = self.down(h)
    examples/small_model.py:26 in forward: scores = (h @ x.transpose(-2, -1)) * self.scale
Captured with torch 2.11.0+cu130, triton 3.6.0, on cuda (NVIDIA H200).
Command: harvest extract examples/small_model.py

Run it (paths from the extraction directory):
    python g1_backward/add_sum_kernel.py --check                      # on a GPU
    TRITON_INTERPRET=1 python g1_backward/add_sum_kernel.py --check   # on a CPU, through the Triton interpreter
    python g1_backward/add_sum_kernel.py --bench                      # time kernel and eager reference (GPU)

Names (this module <- Inductor's output_code.py  [FX node]):
    add_sum_kernel <- triton_red_fused_add_sum_view_2
    bmm_ptr <- in_ptr0  [buf6]
    out_ptr <- out_ptr0  [buf9]
    n_rows <- xnumel
    n_cols <- r0_numel
    BLOCK_ROWS <- XBLOCK
    BLOCK_COLS <- R0_BLOCK
    row_start <- xoffset
    rows <- xindex
    row_mask <- xmask
    col_base <- r0_base
    row_inner <- x0
    row_outer <- x1
    total_acc <- _tmp2
    col_start <- r0_offset
    cols <- r0_index
    col_mask <- r0_mask
    bmm <- tmp0
    broadcast <- tmp1
    add <- tmp3  [add_4]
    total <- tmp2  [sum_3]
    rows <- x3
    cols <- r0_2

Notes:
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
def add_sum_kernel(bmm_ptr, out_ptr, n_rows, n_cols, BLOCK_ROWS : tl.constexpr, BLOCK_COLS : tl.constexpr):
    n_rows = 8192
    n_cols = 128
    row_start = tl.program_id(0) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = tl.full([BLOCK_ROWS], True, tl.int1)[:, None]
    col_base = tl.arange(0, BLOCK_COLS)[None, :]
    row_inner = (rows % 512)
    row_outer = rows // 512
    total_acc = tl.full([BLOCK_ROWS, BLOCK_COLS], 0, tl.float32)
    for col_start in tl.range(0, n_cols, BLOCK_COLS):
        cols = col_start + col_base
        col_mask = cols < n_cols
        bmm = tl.load(bmm_ptr + (row_inner + 512*cols + 65536*row_outer), col_mask, eviction_policy='evict_first', other=0.0)
        broadcast = tl.broadcast_to(bmm, [BLOCK_ROWS, BLOCK_COLS])
        add = total_acc + broadcast
        total_acc = tl.where(col_mask, add, total_acc)
    total = tl.sum(total_acc, 1)[:, None]
    tl.store(out_ptr + (rows), total, None)
# <<< kernel


# The config the kernel ran with (recorded in the run; chosen by the only config).
CONFIG = {'BLOCK_COLS': 32, 'BLOCK_ROWS': 16, 'num_warps': 4, 'num_stages': 1}


def launch(bmm_ptr, out_ptr, n_rows, n_cols, config=CONFIG):
    """Launch add_sum_kernel on its arguments (outputs are written in place)."""
    constexprs = {key: value for key, value in config.items() if key not in ("num_warps", "num_stages")}
    grid = (triton.cdiv(n_rows, config["BLOCK_ROWS"]),)
    add_sum_kernel[grid](
        bmm_ptr, out_ptr, n_rows, n_cols,
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
    Storage(0, 4194304, torch.float32, None),  # bmm_ptr
    Storage(0, 32768, None, None),  # out_ptr
]
ARGUMENTS = {
    "bmm_ptr": View(0, (8, 256, 512), (131072, 512, 1), 0, torch.float32),
    "out_ptr": View(1, (1, 512, 16), (8192, 1, 512), 0, torch.float32),
    "n_rows": 8192,
    "n_cols": 128,
}
OUTPUTS = ['out_ptr']  # the tensors the kernel writes: --check compares each of them
RECORD = None  # the run's data for this launch (inputs before, outputs after), relative to this file
RECORD_DEVICE = None  # where the record was made: its outputs are matched bit for bit there
KERNEL_SHA256 = "c95d186c6528eb8c9d61cc5c2c8d631335a357eafcb77d5863a8de41440318ae"  # of the kernel text above as extracted
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
    data = torch.load(path, map_location="cpu", weights_only=True)  # plain uint8 tensors, nothing executable

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


def reference(bmm_ptr):
    add_4 = bmm_ptr
    view_16 = torch.ops.aten.reshape.default(add_4, [2048, 512])
    sum_3 = torch.ops.aten.sum.dim_IntList(view_16, [0], True)
    # Split reduction, stage 1: the kernel stores sum_3 as 16 partial sums along dim [2];
    # check() sums them over that dim and compares with sum_3 (2048 values per element).
    return {"out_ptr": {"reduce": "sum", "dims": [2], "terms": 2048, "expected": sum_3}}


# Outputs the eager reference cannot compute, with the reason (the record still compares them).
UNCHECKED = {}

TOLERANCES = {
    torch.float32: dict(rtol=1e-4, atol=1e-5),
    torch.float16: dict(rtol=1e-3, atol=1e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
    torch.float64: dict(rtol=1e-7, atol=1e-7),
}
EXACT = dict(rtol=0, atol=0)


def reduce_partials(partials, split):
    """A split reduction's partial buffer combined over its split dims (sum of sums, max of maxima)."""
    combine = {"sum": torch.sum, "amax": torch.amax, "amin": torch.amin}[split["reduce"]]
    return combine(partials.cpu(), dim=split["dims"])


def compare(name, actual, expected, oracle, tolerance=None):
    """True when actual matches expected (exactly, or within the dtype's tolerance); prints the first mismatches.

    `expected` is a tensor, or for a split reduction's partial output {"reduce", "dims", "terms", "expected"}: the
    kernel's partials are combined over the split dims, then compared with the whole reduction.
    """
    tolerance = tolerance or TOLERANCES.get(actual.dtype, EXACT)
    what = ""
    if isinstance(expected, dict):
        split = expected
        actual, expected = reduce_partials(actual, split), split["expected"]
        what = f", partials {split['reduce']}-combined over dims {split['dims']} vs the whole reduction of {split['terms']} values"
        if split["reduce"] == "sum" and actual.dtype.is_floating_point:
            # Partial sums add in another order; the rounding error of a sum of n terms grows like sqrt(n).
            tolerance = dict(rtol=tolerance["rtol"], atol=tolerance["atol"] * split["terms"] ** 0.5)
            what += f", atol scaled by sqrt({split['terms']})"
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
    reference_args = [args[name].clone() if isinstance(args[name], torch.Tensor) else args[name] for name in ['bmm_ptr']]
    launch(**args)
    expected = reference(*reference_args)
    print(f"add_sum_kernel on {device} ({'recorded inputs' if record is not None else 'made-up inputs'}):")
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


def bench(device, seed=0):
    """Median time of the kernel and of the eager reference (triton.testing.do_bench, CUDA events)."""
    if device != "cuda":
        print("--bench needs a GPU: the interpreter's timings mean nothing")
        return
    record = load_record(device)
    args = record[0] if record is not None else make_inputs(device, seed)
    reference_args = [args[name] for name in ['bmm_ptr']]
    moved = sum(t.untyped_storage().nbytes() for t in args.values() if isinstance(t, torch.Tensor))
    kernel_ms = triton.testing.do_bench(lambda: launch(**args), quantiles=[0.5, 0.2, 0.8])
    eager_ms = triton.testing.do_bench(lambda: reference(*reference_args), quantiles=[0.5, 0.2, 0.8])
    print(f"{'':12s} {'median ms':>10s} {'p20':>8s} {'p80':>8s} {'GB/s':>8s}")
    for label, (median, p20, p80) in (("kernel", kernel_ms), ("eager ref", eager_ms)):
        print(f"{label:12s} {median:10.4f} {p20:8.4f} {p80:8.4f} {moved / median / 1e6:8.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="add_sum_kernel: extracted Triton kernel (check it, time it, edit it).")
    parser.add_argument("--check", action="store_true", help="compare every output with the run's record and the eager reference (default)")
    parser.add_argument("--bench", action="store_true", help="time the kernel and the eager reference (GPU)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", help="cuda or cpu")
    parser.add_argument("--seed", type=int, default=0, help="seed for made-up inputs (used when there is no record)")
    options = parser.parse_args()
    if options.device == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        sys.exit("no GPU: run with TRITON_INTERPRET=1 to use the Triton interpreter on the CPU")
    ok = True
    if options.check or not options.bench:
        ok = check(options.device, options.seed)
    if options.bench:
        bench(options.device, options.seed)
    sys.exit(0 if ok else 1)
