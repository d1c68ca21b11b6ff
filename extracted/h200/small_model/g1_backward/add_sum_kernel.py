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
"""

import argparse
import os
import sys

import torch
import triton
import triton.language as tl


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


# The config the kernel ran with when it was captured (chosen by autotune).
CONFIG = {'BLOCK_COLS': 32, 'BLOCK_ROWS': 16, 'num_warps': 4, 'num_stages': 1}


def launch(bmm_ptr, out_ptr, n_rows, n_cols, config=CONFIG):
    """Launch add_sum_kernel on arguments laid out as in the captured graph (outputs are written in place)."""
    constexprs = {key: value for key, value in config.items() if key not in ("num_warps", "num_stages")}
    grid = (triton.cdiv(n_rows, config["BLOCK_ROWS"]),)
    add_sum_kernel[grid](
        bmm_ptr, out_ptr, n_rows, n_cols,
        **constexprs,
        num_warps=config["num_warps"],
        num_stages=config["num_stages"],
    )


def _random(shape, stride, dtype, device, generator, offset=0, low=None, high=None):
    """A tensor with the given layout over fresh random storage (room for padded strides and offsets)."""
    storage_size = offset + 1 + sum((size - 1) * step for size, step in zip(shape, stride) if size > 0)
    if dtype == torch.bool:
        values = torch.rand(storage_size, generator=generator) < 0.5
    elif dtype.is_floating_point:
        values = torch.randn(storage_size, generator=generator)
    else:
        values = torch.randint(low if low is not None else -8, high if high is not None else 8, (storage_size,), generator=generator)
    return values.to(dtype).to(device).as_strided(shape, stride, offset)


def _zeros(shape, stride, dtype, device, offset=0):
    storage_size = offset + 1 + sum((size - 1) * step for size, step in zip(shape, stride) if size > 0)
    return torch.zeros(storage_size, dtype=dtype, device=device).as_strided(shape, stride, offset)


def make_inputs(device="cuda", seed=0):
    """Every argument of the captured launch: tensors with its shapes, strides and dtypes, and its sizes."""
    generator = torch.Generator().manual_seed(seed)
    bmm_ptr = _random((8, 256, 512), (131072, 512, 1), torch.float32, device, generator, offset=0)
    out_ptr = _zeros((1, 512, 16), (8192, 1, 512), torch.float32, device, offset=0)
    n_rows = 8192
    n_cols = 128
    return {
        "bmm_ptr": bmm_ptr,
        "out_ptr": out_ptr,
        "n_rows": n_rows,
        "n_cols": n_cols,
    }


def reference(bmm_ptr):
    add_4 = bmm_ptr
    view_16 = torch.ops.aten.reshape.default(add_4, [2048, 512])
    sum_3 = torch.ops.aten.sum.dim_IntList(view_16, [0], True)
    # Split reduction, stage 1: the kernel stores sum_3 as 16 partial sums along dim [2];
    # check() sums them over that dim and compares with sum_3 (2048 values per element).
    return {"out_ptr": {"reduce": "sum", "dims": [2], "terms": 2048, "expected": sum_3}}


# Outputs the reference cannot compute, with the reason (they are not compared).
UNCHECKED = {}

TOLERANCES = {
    torch.float32: dict(rtol=1e-4, atol=1e-5),
    torch.float16: dict(rtol=1e-3, atol=1e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
    torch.float64: dict(rtol=1e-7, atol=1e-7),
}


def reduce_partials(partials, split):
    """A split reduction's partial buffer combined over its split dims (sum of sums, max of maxima)."""
    combine = {"sum": torch.sum, "amax": torch.amax, "amin": torch.amin}[split["reduce"]]
    return combine(partials.cpu(), dim=split["dims"])


def compare(name, actual, expected):
    """True when actual matches expected within the dtype's tolerance; prints the first mismatches otherwise.

    `expected` is a tensor, or for a split reduction's partial output {"reduce", "dims", "terms", "expected"}: the
    kernel's partials are combined over the split dims, then compared with the whole reduction.
    """
    tolerance = TOLERANCES.get(actual.dtype, dict(rtol=0, atol=0))
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
        print(f"  {name}: shape {tuple(actual.shape)} but the reference gives {tuple(expected.shape)}")
        return False
    close = torch.isclose(actual.cpu(), expected.cpu(), equal_nan=True, **tolerance)
    limits = f"rtol={tolerance['rtol']:.3g}, atol={tolerance['atol']:.3g}{what}"
    if bool(close.all()):
        print(f"  {name}: ok ({actual.numel()} values, {actual.dtype}, {limits})")
        return True
    bad = (~close).nonzero()
    print(f"  {name}: {len(bad)} of {actual.numel()} values differ ({limits}); first ones:")
    for index in bad[:5].tolist():
        where = tuple(index)
        print(f"    at {where}: kernel {actual.cpu()[where].item()!r}, reference {expected.cpu()[where].item()!r}")
    return False


def check(device, seed=0):
    """Run kernel and reference on the same inputs and compare every output the reference computes."""
    args = make_inputs(device, seed)
    reference_args = [args[name].clone() if isinstance(args[name], torch.Tensor) else args[name] for name in ['bmm_ptr']]
    launch(**args)
    expected = reference(*reference_args)
    print(f"add_sum_kernel on {device}:")
    results = [compare(name, args[name], value) for name, value in expected.items()]
    for name, reason in UNCHECKED.items():
        print(f"  {name}: not checked ({reason})")
    return bool(results) and all(results)


def bench(device, seed=0):
    """Median time of the kernel and of the eager reference (triton.testing.do_bench, CUDA events)."""
    if device != "cuda":
        print("--bench needs a GPU: the interpreter's timings mean nothing")
        return
    args = make_inputs(device, seed)
    reference_args = [args[name] for name in ['bmm_ptr']]
    moved = sum(t.untyped_storage().nbytes() for t in args.values() if isinstance(t, torch.Tensor))
    kernel_ms = triton.testing.do_bench(lambda: launch(**args), quantiles=[0.5, 0.2, 0.8])
    eager_ms = triton.testing.do_bench(lambda: reference(*reference_args), quantiles=[0.5, 0.2, 0.8])
    print(f"{'':12s} {'median ms':>10s} {'p20':>8s} {'p80':>8s} {'GB/s':>8s}")
    for label, (median, p20, p80) in (("kernel", kernel_ms), ("eager ref", eager_ms)):
        print(f"{label:12s} {median:10.4f} {p20:8.4f} {p80:8.4f} {moved / median / 1e6:8.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="add_sum_kernel: extracted Triton kernel (check it, time it, edit it).")
    parser.add_argument("--check", action="store_true", help="compare the kernel with the eager reference (default)")
    parser.add_argument("--bench", action="store_true", help="time the kernel and the eager reference (GPU)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", help="cuda or cpu")
    parser.add_argument("--seed", type=int, default=0, help="seed for the random inputs")
    options = parser.parse_args()
    if options.device == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        sys.exit("no GPU: run with TRITON_INTERPRET=1 to use the Triton interpreter on the CPU")
    ok = True
    if options.check or not options.bench:
        ok = check(options.device, options.seed)
    if options.bench:
        bench(options.device, options.seed)
    sys.exit(0 if ok else 1)
