"""layer_norm_fwd_kernel: persistent_reduction kernel fusing aten.native_layer_norm

Extracted by harvest from examples/small_model.py (graph g0_forward).
Inductor kernel: triton_per_fused_native_layer_norm_0   kind: persistent_reduction
Fused ATen ops: aten.native_layer_norm
Source lines:
    examples/small_model.py:22 in forward: h = self.ln(x)
Captured with torch 2.11.0+cu130, triton 3.6.0, on cuda (NVIDIA H200).
Command: harvest extract examples/small_model.py

Run it (paths from the extraction directory):
    python g0_forward/layer_norm_fwd_kernel.py --check                      # on a GPU
    TRITON_INTERPRET=1 python g0_forward/layer_norm_fwd_kernel.py --check   # on a CPU, through the Triton interpreter
    python g0_forward/layer_norm_fwd_kernel.py --bench                      # time kernel and eager reference (GPU)

Names (this module <- Inductor's output_code.py  [FX node]):
    layer_norm_fwd_kernel <- triton_per_fused_native_layer_norm_0
    rstd_ptr <- in_out_ptr0  [buf3]
    a_ptr <- in_ptr0  [primals_3]
    weight_ptr <- in_ptr1  [primals_1]
    bias_ptr <- in_ptr2  [primals_2]
    mean_ptr <- out_ptr0  [buf0]
    out_ptr <- out_ptr1  [buf4]
    n_rows <- xnumel
    n_cols <- r0_numel
    BLOCK_ROWS <- XBLOCK
    BLOCK_COLS <- R0_BLOCK
    row_start <- xoffset
    rows <- xindex
    row_mask <- xmask
    cols <- r0_index
    col_mask <- r0_mask
    a <- tmp0
    weight <- tmp24
    bias <- tmp26
    broadcast <- tmp1
    masked <- tmp3
    broadcast_1 <- tmp4
    masked_1 <- tmp6
    total <- tmp7
    const <- tmp8
    as_f32 <- tmp9
    mean <- tmp10
    centered <- tmp11
    square <- tmp12
    broadcast_2 <- tmp13
    masked_2 <- tmp15
    total_1 <- tmp16
    const_1 <- tmp17
    var <- tmp18
    const_2 <- tmp19
    var_eps <- tmp20
    rstd <- tmp21  [rsqrt]
    centered_1 <- tmp22
    mul <- tmp23
    mul_1 <- tmp25
    add <- tmp27
    cols <- r0_1
    rows <- x0

Notes:
    inferred getitem = var_mean[0] (the fragment uses it but does not define it)
    inferred getitem_1 = var_mean[1] (the fragment uses it but does not define it)
"""

import argparse
import os
import sys

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def layer_norm_fwd_kernel(rstd_ptr, a_ptr, weight_ptr, bias_ptr, mean_ptr, out_ptr, n_rows, n_cols, BLOCK_ROWS : tl.constexpr):
    n_rows = 2048
    n_cols = 512
    BLOCK_COLS: tl.constexpr = 512
    row_start = tl.program_id(0) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = rows < n_rows
    cols = tl.arange(0, BLOCK_COLS)[None, :]
    col_mask = tl.full([BLOCK_COLS], True, tl.int1)[None, :]
    a = tl.load(a_ptr + (cols + 512*rows), row_mask, other=0.0)
    weight = tl.load(weight_ptr + (cols), None, eviction_policy='evict_last')
    bias = tl.load(bias_ptr + (cols), None, eviction_policy='evict_last')
    broadcast = tl.broadcast_to(a, [BLOCK_ROWS, BLOCK_COLS])
    masked = tl.where(row_mask, broadcast, 0)
    broadcast_1 = tl.broadcast_to(broadcast, [BLOCK_ROWS, BLOCK_COLS])
    masked_1 = tl.where(row_mask, broadcast_1, 0)
    total = tl.sum(masked_1, 1)[:, None].to(tl.float32)
    const = tl.full([1, 1], 512, tl.int32)
    as_f32 = const.to(tl.float32)
    mean = (total / as_f32)
    centered = broadcast - mean
    square = centered * centered
    broadcast_2 = tl.broadcast_to(square, [BLOCK_ROWS, BLOCK_COLS])
    masked_2 = tl.where(row_mask, broadcast_2, 0)
    total_1 = tl.sum(masked_2, 1)[:, None].to(tl.float32)
    const_1 = tl.full([1, 1], 512.0, tl.float32)
    var = (total_1 / const_1)
    const_2 = tl.full([1, 1], 1e-05, tl.float32)
    var_eps = var + const_2
    rstd = libdevice.rsqrt(var_eps)
    centered_1 = a - mean
    mul = centered_1 * rstd
    mul_1 = mul * weight
    add = mul_1 + bias
    tl.debug_barrier()
    tl.store(rstd_ptr + (rows), rstd, row_mask)
    tl.store(out_ptr + (cols + 512*rows), add, row_mask)
    tl.store(mean_ptr + (rows), mean, row_mask)


# The config the kernel ran with when it was captured (chosen by autotune).
CONFIG = {'BLOCK_ROWS': 2, 'num_warps': 1, 'num_stages': 1}


def launch(rstd_ptr, a_ptr, weight_ptr, bias_ptr, mean_ptr, out_ptr, n_rows, n_cols, config=CONFIG):
    """Launch layer_norm_fwd_kernel on arguments laid out as in the captured graph (outputs are written in place)."""
    constexprs = {key: value for key, value in config.items() if key not in ("num_warps", "num_stages")}
    grid = (triton.cdiv(n_rows, config["BLOCK_ROWS"]),)
    layer_norm_fwd_kernel[grid](
        rstd_ptr, a_ptr, weight_ptr, bias_ptr, mean_ptr, out_ptr, n_rows, n_cols,
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
    rstd_ptr = _random((8, 256, 1), (256, 1, 1), torch.float32, device, generator, offset=0)
    a_ptr = _random((8, 256, 512), (131072, 512, 1), torch.float32, device, generator, offset=0)
    weight_ptr = _random((512,), (1,), torch.float32, device, generator, offset=0)
    bias_ptr = _random((512,), (1,), torch.float32, device, generator, offset=0)
    mean_ptr = _zeros((8, 256, 1), (256, 1, 1), torch.float32, device, offset=0)
    out_ptr = _zeros((8, 256, 512), (131072, 512, 1), torch.float32, device, offset=0)
    n_rows = 2048
    n_cols = 512
    return {
        "rstd_ptr": rstd_ptr,
        "a_ptr": a_ptr,
        "weight_ptr": weight_ptr,
        "bias_ptr": bias_ptr,
        "mean_ptr": mean_ptr,
        "out_ptr": out_ptr,
        "n_rows": n_rows,
        "n_cols": n_cols,
    }


def reference(a_ptr, weight_ptr, bias_ptr):
    primals_3 = a_ptr
    primals_1 = weight_ptr
    primals_2 = bias_ptr
    var_mean = torch.ops.aten.var_mean.correction(primals_3, [2], correction=0, keepdim=True)
    getitem = var_mean[0]
    getitem_1 = var_mean[1]
    add = torch.ops.aten.add.Tensor(getitem, 1e-05)
    rsqrt = torch.ops.aten.rsqrt.default(add)
    sub = torch.ops.aten.sub.Tensor(primals_3, getitem_1)
    mul = torch.ops.aten.mul.Tensor(sub, rsqrt)
    mul_1 = torch.ops.aten.mul.Tensor(mul, primals_1)
    add_1 = torch.ops.aten.add.Tensor(mul_1, primals_2)
    return {"rstd_ptr": rsqrt, "mean_ptr": getitem_1, "out_ptr": add_1}


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
    reference_args = [args[name].clone() if isinstance(args[name], torch.Tensor) else args[name] for name in ['a_ptr', 'weight_ptr', 'bias_ptr']]
    launch(**args)
    expected = reference(*reference_args)
    print(f"layer_norm_fwd_kernel on {device}:")
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
    reference_args = [args[name] for name in ['a_ptr', 'weight_ptr', 'bias_ptr']]
    moved = sum(t.untyped_storage().nbytes() for t in args.values() if isinstance(t, torch.Tensor))
    kernel_ms = triton.testing.do_bench(lambda: launch(**args), quantiles=[0.5, 0.2, 0.8])
    eager_ms = triton.testing.do_bench(lambda: reference(*reference_args), quantiles=[0.5, 0.2, 0.8])
    print(f"{'':12s} {'median ms':>10s} {'p20':>8s} {'p80':>8s} {'GB/s':>8s}")
    for label, (median, p20, p80) in (("kernel", kernel_ms), ("eager ref", eager_ms)):
        print(f"{label:12s} {median:10.4f} {p20:8.4f} {p80:8.4f} {moved / median / 1e6:8.1f}")


# Interpreter support: under TRITON_INTERPRET=1 the interpreter cannot run libdevice calls, so they get numpy
# versions here; on a GPU nothing changes.
def _interpret_libdevice(libdevice):
    """Under TRITON_INTERPRET=1, replace libdevice functions with numpy versions the interpreter can run."""
    import math

    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    def unary(np_fn, predicate=False):
        def call(x, *_, **__):
            data = np.asarray(np_fn(x.handle.data))
            dtype = tl.int1 if predicate else x.dtype
            if not predicate:
                data = data.astype(x.handle.data.dtype, copy=False)
            return tl.core.tensor(TensorHandle(data, dtype.scalar), x.type.with_element_ty(dtype.scalar) if x.type.is_block() else dtype)

        return call

    def binary(np_fn):
        def call(x, y, *_, **__):
            a = x if isinstance(x, tl.core.tensor) else y
            xd = x.handle.data if isinstance(x, tl.core.tensor) else x
            yd = y.handle.data if isinstance(y, tl.core.tensor) else y
            data = np.asarray(np_fn(xd, yd)).astype(a.handle.data.dtype, copy=False)
            return tl.core.tensor(TensorHandle(data, a.dtype.scalar), a.type)

        return call

    erf = np.vectorize(math.erf, otypes=[np.float64])
    unary_fns = {
        "abs": np.abs, "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin, "asinh": np.arcsinh,
        "atan": np.arctan, "atanh": np.arctanh, "cbrt": np.cbrt, "ceil": np.ceil, "cos": np.cos, "cosh": np.cosh,
        "erf": erf, "erfc": lambda v: 1.0 - erf(v), "exp": np.exp, "exp10": lambda v: np.power(10.0, v),
        "exp2": np.exp2, "expm1": np.expm1, "fabs": np.abs, "floor": np.floor, "lgamma": np.vectorize(math.lgamma),
        "log": np.log, "log10": np.log10, "log1p": np.log1p, "log2": np.log2, "nearbyint": np.rint,
        "rint": np.rint, "round": lambda v: np.trunc(v + np.copysign(0.5, v)), "rsqrt": lambda v: 1.0 / np.sqrt(v),
        "sin": np.sin, "sinh": np.sinh, "sqrt": np.sqrt, "tan": np.tan, "tanh": np.tanh, "trunc": np.trunc,
        "llrint": np.rint, "signbit_float": np.signbit,
    }
    predicates = {"isinf": np.isinf, "isnan": np.isnan, "isfinited": np.isfinite, "finitef": np.isfinite,
                  "signbit": np.signbit}
    binary_fns = {"pow": np.power, "fmod": np.fmod, "atan2": np.arctan2, "copysign": np.copysign,
                  "hypot": np.hypot, "nextafter": np.nextafter, "fmax": np.fmax, "fmin": np.fmin,
                  "remainder": np.remainder}
    for name, fn in unary_fns.items():
        setattr(libdevice, name, unary(fn))
    for name, fn in predicates.items():
        setattr(libdevice, name, unary(fn, predicate=True))
    for name, fn in binary_fns.items():
        setattr(libdevice, name, binary(fn))
    return libdevice


if os.environ.get("TRITON_INTERPRET") == "1":
    _interpret_libdevice(libdevice)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="layer_norm_fwd_kernel: extracted Triton kernel (check it, time it, edit it).")
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
