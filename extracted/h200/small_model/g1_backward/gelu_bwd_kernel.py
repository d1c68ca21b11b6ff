"""gelu_bwd_kernel: pointwise kernel fusing aten.view, aten.gelu, aten.gelu_backward

Extracted by harvest from examples/small_model.py (graph g1_backward).
Inductor kernel: triton_poi_fused_gelu_gelu_backward_view_4   kind: pointwise
Fused ATen ops: aten.view, aten.gelu, aten.gelu_backward
Source lines:
    examples/small_model.py:23 in forward: h = self.up(h)
    examples/small_model.py:24 in forward: h = torch.nn.functional.gelu(h)
    examples/small_model.py:25 in forward: h = self.down(h)
Captured with torch 2.11.0+cu130, triton 3.6.0, on cuda (NVIDIA H200).
Command: harvest extract examples/small_model.py

Run it (paths from the extraction directory):
    python g1_backward/gelu_bwd_kernel.py --check                      # on a GPU
    TRITON_INTERPRET=1 python g1_backward/gelu_bwd_kernel.py --check   # on a CPU, through the Triton interpreter
    python g1_backward/gelu_bwd_kernel.py --bench                      # time kernel and eager reference (GPU)

Names (this module <- Inductor's output_code.py  [FX node]):
    gelu_bwd_kernel <- triton_poi_fused_gelu_gelu_backward_view_4
    mm_ptr <- in_out_ptr0  [buf11]
    addmm_ptr <- in_ptr0  [addmm]
    n_elements <- xnumel
    BLOCK_SIZE <- XBLOCK
    block_start <- xoffset
    offsets <- xindex
    mask <- xmask
    mm <- tmp0
    addmm <- tmp1
    const <- tmp2
    mul <- tmp3
    erf <- tmp4  [erf]
    one <- tmp5
    add <- tmp6
    half <- tmp7
    mul_1 <- tmp8
    square <- tmp9
    const_1 <- tmp10
    mul_2 <- tmp11
    exp <- tmp12  [exp_1]
    const_2 <- tmp13
    mul_3 <- tmp14
    mul_4 <- tmp15
    add_1 <- tmp16
    mul_5 <- tmp17
    offsets <- x0
"""

import argparse
import os
import sys

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def gelu_bwd_kernel(mm_ptr, addmm_ptr, n_elements, BLOCK_SIZE : tl.constexpr):
    n_elements = 4194304
    block_start = tl.program_id(0) * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)[:]
    mask = tl.full([BLOCK_SIZE], True, tl.int1)[:]
    mm = tl.load(mm_ptr + (offsets), None)
    addmm = tl.load(addmm_ptr + (offsets), None)
    const = tl.full([1], 0.7071067811865476, tl.float32)
    mul = addmm * const
    erf = libdevice.erf(mul)
    one = tl.full([1], 1.0, tl.float32)
    add = erf + one
    half = tl.full([1], 0.5, tl.float32)
    mul_1 = add * half
    square = addmm * addmm
    const_1 = tl.full([1], -0.5, tl.float32)
    mul_2 = square * const_1
    exp = libdevice.exp(mul_2)
    const_2 = tl.full([1], 0.3989422804014327, tl.float32)
    mul_3 = exp * const_2
    mul_4 = addmm * mul_3
    add_1 = mul_1 + mul_4
    mul_5 = mm * add_1
    tl.store(mm_ptr + (offsets), mul_5, None)


# The config the kernel ran with when it was captured (chosen by autotune).
CONFIG = {'BLOCK_SIZE': 512, 'num_warps': 8, 'num_stages': 1}


def launch(mm_ptr, addmm_ptr, n_elements, config=CONFIG):
    """Launch gelu_bwd_kernel on arguments laid out as in the captured graph (outputs are written in place)."""
    constexprs = {key: value for key, value in config.items() if key not in ("num_warps", "num_stages")}
    grid = (triton.cdiv(n_elements, config["BLOCK_SIZE"]),)
    gelu_bwd_kernel[grid](
        mm_ptr, addmm_ptr, n_elements,
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
    mm_ptr = _random((8, 256, 2048), (524288, 2048, 1), torch.float32, device, generator, offset=0)
    addmm_ptr = _random((2048, 2048), (2048, 1), torch.float32, device, generator, offset=0)
    n_elements = 4194304
    return {
        "mm_ptr": mm_ptr,
        "addmm_ptr": addmm_ptr,
        "n_elements": n_elements,
    }


def reference(mm_ptr, addmm_ptr):
    mm = mm_ptr.reshape(2048, 2048)
    addmm = addmm_ptr
    view_18 = torch.ops.aten.reshape.default(mm, [8, 256, 2048])
    view_1 = torch.ops.aten.reshape.default(addmm, [8, 256, 2048])
    mul_3 = torch.ops.aten.mul.Tensor(view_1, 0.7071067811865476)
    erf = torch.ops.aten.erf.default(mul_3)
    add_2 = torch.ops.aten.add.Tensor(erf, 1)
    mul_9 = torch.ops.aten.mul.Tensor(add_2, 0.5)
    mul_10 = torch.ops.aten.mul.Tensor(view_1, view_1)
    mul_11 = torch.ops.aten.mul.Tensor(mul_10, -0.5)
    exp_1 = torch.ops.aten.exp.default(mul_11)
    mul_12 = torch.ops.aten.mul.Tensor(exp_1, 0.3989422804014327)
    mul_13 = torch.ops.aten.mul.Tensor(view_1, mul_12)
    add_7 = torch.ops.aten.add.Tensor(mul_9, mul_13)
    mul_14 = torch.ops.aten.mul.Tensor(view_18, add_7)
    return {"mm_ptr": mul_14}


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
    reference_args = [args[name].clone() if isinstance(args[name], torch.Tensor) else args[name] for name in ['mm_ptr', 'addmm_ptr']]
    launch(**args)
    expected = reference(*reference_args)
    print(f"gelu_bwd_kernel on {device}:")
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
    reference_args = [args[name] for name in ['mm_ptr', 'addmm_ptr']]
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
    parser = argparse.ArgumentParser(description="gelu_bwd_kernel: extracted Triton kernel (check it, time it, edit it).")
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
