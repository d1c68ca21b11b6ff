"""Make `libdevice.*` calls (and bfloat16 `tl.dot`) run under TRITON_INTERPRET=1.

The Triton interpreter patches `tl` and `tl.math` with numpy versions but not `triton.language.extra.libdevice`,
whose functions lower to `extern_elementwise`, which the interpreter cannot run. Inductor calls libdevice for tanh,
erf, rsqrt, isinf, pow, fma (torch 2.8-2.10), ... so the first GELU or LayerNorm kernel kills a CPU run. Older
interpreters (triton 3.2-3.3) also lack `block_type.with_element_ty` and `get_int1_ty` (Inductor's `max2` reaches
it through `tl.zeros((1,), tl.int1)`); the shim stands in for both. And triton 3.9's interpreter multiplies a
bfloat16 `tl.dot`'s raw uint16 bits (a max-autotune bf16 matmul template gives values of 1e11): the shim widens
bfloat16 operands to float32 first, exactly, as the tensor cores do. Where a kernel reduces, the shim folds a
reduction's values for every output at once, and has the interpreter patch `tl` once per launch, not again at each
call of a @triton.jit function (tl.sum, a combine function, an Inductor helper): the same bits, in about half the time.

`shim_source(names)` writes `interpret_libdevice(libdevice)` with numpy versions of just those functions, as plain
source: the capture child execs it with every function (`install`), and an extraction's harness.py carries the
ones its kernels call. It touches nothing unless the interpreter is on.
"""

from __future__ import annotations

# libdevice function -> (kind, numpy expression of v, or of v and w): "unary" keeps the dtype, "predicate" gives int1.
NUMPY_VERSIONS = {
    "abs": ("unary", "np.abs(v)"), "acos": ("unary", "np.arccos(v)"), "acosh": ("unary", "np.arccosh(v)"),
    "asin": ("unary", "np.arcsin(v)"), "asinh": ("unary", "np.arcsinh(v)"), "atan": ("unary", "np.arctan(v)"),
    "atanh": ("unary", "np.arctanh(v)"), "cbrt": ("unary", "np.cbrt(v)"), "ceil": ("unary", "np.ceil(v)"),
    "cos": ("unary", "np.cos(v)"), "cosh": ("unary", "np.cosh(v)"), "erf": ("unary", "erf(v)"),
    "erfc": ("unary", "1.0 - erf(v)"), "exp": ("unary", "np.exp(v)"), "exp10": ("unary", "np.power(10.0, v)"),
    "exp2": ("unary", "np.exp2(v)"), "expm1": ("unary", "np.expm1(v)"), "fabs": ("unary", "np.abs(v)"),
    "floor": ("unary", "np.floor(v)"), "lgamma": ("unary", "np.vectorize(math.lgamma)(v)"),
    "log": ("unary", "np.log(v)"), "log10": ("unary", "np.log10(v)"), "log1p": ("unary", "np.log1p(v)"),
    "log2": ("unary", "np.log2(v)"), "nearbyint": ("unary", "np.rint(v)"), "rint": ("unary", "np.rint(v)"),
    "round": ("unary", "np.trunc(v + np.copysign(0.5, v))"), "rsqrt": ("unary", "1.0 / np.sqrt(v)"),
    "sin": ("unary", "np.sin(v)"), "sinh": ("unary", "np.sinh(v)"), "sqrt": ("unary", "np.sqrt(v)"),
    "tan": ("unary", "np.tan(v)"), "tanh": ("unary", "np.tanh(v)"), "trunc": ("unary", "np.trunc(v)"),
    "llrint": ("unary", "np.rint(v)"), "signbit_float": ("unary", "np.signbit(v)"),
    "isinf": ("predicate", "np.isinf(v)"), "isnan": ("predicate", "np.isnan(v)"),
    "isfinited": ("predicate", "np.isfinite(v)"), "finitef": ("predicate", "np.isfinite(v)"),
    "signbit": ("predicate", "np.signbit(v)"),
    "pow": ("binary", "np.power(v, w)"), "fmod": ("binary", "np.fmod(v, w)"), "atan2": ("binary", "np.arctan2(v, w)"),
    "copysign": ("binary", "np.copysign(v, w)"), "hypot": ("binary", "np.hypot(v, w)"),
    "nextafter": ("binary", "np.nextafter(v, w)"), "fmax": ("binary", "np.fmax(v, w)"),
    "fmin": ("binary", "np.fmin(v, w)"), "remainder": ("binary", "np.remainder(v, w)"),
    "fma": ("fma", ""),  # Inductor of torch 2.8-2.10 writes libdevice.fma in softmax backward
    "dot": ("dot", ""),  # not libdevice: tl.dot, whose interpreter version multiplies bfloat16's bits (triton 3.9)
    "reduce": ("reduce", ""),  # not libdevice: tl.reduce with a combine function (Inductor's max2, welford, ...)
    "grid_barrier": ("grid_barrier", ""),  # not libdevice: a cooperative reduction's x_grid_barrier
}

_HEAD = '''
def interpret_libdevice(libdevice):
    """Under TRITON_INTERPRET=1, replace libdevice functions with numpy versions the interpreter can run."""
    import math  # noqa: F401  (erf, lgamma)

    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter
    from triton.runtime.interpreter import TensorHandle

    builder = getattr(interpreter, "InterpreterBuilder", None)
    if builder is not None and not hasattr(builder, "get_int1_ty"):  # triton <= 3.3: tl.zeros(..., tl.int1) fails
        builder.get_int1_ty = lambda self: tl.int1

    def retyped(x, scalar):
        if not x.type.is_block():
            return scalar
        if hasattr(x.type, "with_element_ty"):
            return x.type.with_element_ty(scalar)
        return tl.core.block_type(scalar, x.type.get_block_shapes())  # triton <= 3.3 has no with_element_ty

    # triton 3.9's interpreter gives `block_mask & (scalar < n)` (a batched matmul template's store mask) int32 data
    # under an int1 type, which its loads and stores refuse ("mask has unsupported dtype"): they get it as bools
    if builder is not None and not getattr(builder.create_masked_store, "mask_as_bool", False):
        def as_bool(mask):
            if mask.data.dtype == np.bool_:
                return mask
            return TensorHandle(mask.data.astype(np.bool_), mask.dtype)

        masked_load, masked_store = builder.create_masked_load, builder.create_masked_store

        def create_masked_load(self, ptrs, mask, *args, **kwargs):
            return masked_load(self, ptrs, as_bool(mask), *args, **kwargs)

        def create_masked_store(self, ptrs, value, mask, *args, **kwargs):
            return masked_store(self, ptrs, value, as_bool(mask), *args, **kwargs)

        create_masked_store.mask_as_bool = True
        builder.create_masked_load, builder.create_masked_store = create_masked_load, create_masked_store
'''

_UNARY = '''
    def unary(np_fn, predicate=False):
        def call(x, *_, **__):
            data = np.asarray(np_fn(x.handle.data))
            dtype = tl.int1 if predicate else x.dtype
            if not predicate:
                data = data.astype(x.handle.data.dtype, copy=False)
            return tl.core.tensor(TensorHandle(data, dtype.scalar), retyped(x, dtype.scalar))

        return call
'''

_BINARY = '''
    def binary(np_fn):
        def call(x, y, *_, **__):
            a = x if isinstance(x, tl.core.tensor) else y
            xd = x.handle.data if isinstance(x, tl.core.tensor) else x
            yd = y.handle.data if isinstance(y, tl.core.tensor) else y
            data = np.asarray(np_fn(xd, yd)).astype(a.handle.data.dtype, copy=False)
            return tl.core.tensor(TensorHandle(data, a.dtype.scalar), a.type)

        return call
'''

_FMA = '''
    def fma(x, y, z, *_, **__):
        # one rounding, as the hardware's: a float32 product is exact in float64, so only the sum rounds twice
        operands = [v for v in (x, y, z) if isinstance(v, tl.core.tensor)]
        xd, yd, zd = (np.asarray(v.handle.data if isinstance(v, tl.core.tensor) else v, dtype=np.float64) for v in (x, y, z))
        data = np.asarray(xd * yd + zd)
        a = next((v for v in operands if v.handle.data.shape == data.shape), operands[0])
        data = data.astype(a.handle.data.dtype, copy=False)
        return tl.core.tensor(TensorHandle(data, a.dtype.scalar), a.type)
'''


_REDUCE = '''
    reduce_ops = getattr(interpreter, "ReduceOps", None)
    if hasattr(reduce_ops, "generic_reduce") and not getattr(reduce_ops.generic_reduce, "folds_at_once", False):
        one_at_a_time = reduce_ops.generic_reduce

        def generic_reduce(self, input):
            # The interpreter's own fold (each output's values combined in order along the axis, kept in the
            # input's dtype), done for every output at once: one call of the combine function per step along the
            # axis instead of one per value. The same values in the same order: the same bits, many times faster.
            try:
                values, axis = self.unravel(input, self.axis)
                datas = [v.handle.data for v in values]
                kept = [d.take(0, axis=axis) for d in datas]
                extreme = EXTREMES.get(getattr(self.combine_fn.fn, "__name__", "")) if len(datas) == 1 else None
                welford = welford_form(self.combine_fn.fn, datas)
                if extreme is not None:  # Inductor's max/min, a NaN winning: numpy's own
                    kept = [extreme(datas[0], axis=axis)]
                elif welford is not None:  # the same steps in numpy: no Triton tensor made per step
                    kept = fold_welford(datas, axis, kept, guarded=welford)
                else:
                    for k in range(1, datas[0].shape[axis]):
                        acc = [self.to_tensor(a, v.dtype) for a, v in zip(kept, values)]
                        step = [self.to_tensor(d.take(k, axis=axis), v.dtype) for d, v in zip(datas, values)]
                        out = self.combine_fn.fn(*acc, *step)
                        out = out if isinstance(out, tuple) else (out,)
                        kept = [np.broadcast_to(np.asarray(o.handle.data if isinstance(o, tl.core.tensor) else o),
                                                np.shape(a)).astype(d.dtype) for o, a, d in zip(out, kept, datas)]
            except Exception:  # a combine function that branches on values: the interpreter's way
                return one_at_a_time(self, input)
            ret = []
            for value, data in zip(values, kept):
                data = np.asarray(data)
                if self.keep_dims:
                    for _ in range(1 if self.axis is not None else len(datas[0].shape)):
                        data = np.expand_dims(data, axis if self.axis is not None else 0)
                elif self.axis is None:
                    data = data.item()
                ret.append(self.to_tensor(data, value.dtype))
            return ret

        # Inductor's maximum/minimum (and harvest's helper_ copies): a NaN wins, as with numpy's max/min; equal
        # values are equal whichever is kept (a 0.0 and a -0.0 too, as the check compares them)
        EXTREMES = {"maximum": np.max, "helper_maximum": np.max, "minimum": np.min, "helper_minimum": np.min}
        WELFORD = ("welford_combine", "helper_welford_combine", "helper_welford_combine_before_2_13")

        def welford_form(fn, datas):
            # Inductor's welford_combine (or harvest's copy) over float (mean, m2, weight): whether it guards equal
            # means (torch 2.13 on: "mean_1 == mean_2"); None for any other combine function
            if getattr(fn, "__name__", "") not in WELFORD or len(datas) != 3 or any(d.dtype.kind != "f" for d in datas):
                return None
            import inspect

            try:
                return "mean_1 == mean_2" in inspect.getsource(fn)
            except (OSError, TypeError):
                return None

        def fold_welford(datas, axis, kept, guarded):
            # welford_combine's operations, in its order and its dtype, one step along the axis at a time (the
            # interpreter's own order): the same bits as calling it, without a Triton tensor per operation
            mean, m2, weight = kept
            zero = np.zeros((), mean.dtype)
            with np.errstate(all="ignore"):  # (both sides of each where are computed, as in the interpreter)
                for k in range(1, datas[0].shape[axis]):
                    mean_2, m2_2, weight_2 = (d.take(k, axis=axis) for d in datas)
                    delta = mean_2 - mean
                    if guarded:
                        delta = np.where(mean == mean_2, zero, delta)
                    new_weight = weight + weight_2
                    share = np.where(new_weight == zero, zero, weight_2 / new_weight)
                    mean, m2, weight = mean + delta * share, m2 + m2_2 + delta * delta * weight * share, new_weight
            return [mean, m2, weight]

        generic_reduce.folds_at_once = True
        reduce_ops.generic_reduce = generic_reduce
'''


_DEVICE_CALLS = '''
    patch_lang, scope_type = getattr(interpreter, "_patch_lang", None), getattr(interpreter, "_LangPatchScope", None)
    if patch_lang is not None and scope_type is not None and not getattr(patch_lang, "once_per_launch", False):
        import inspect

        def patch_lang_where_needed(fn):
            # Each call of a @triton.jit function from a kernel (tl.sum, tl.zeros, a combine function, an Inductor
            # helper) has the interpreter patch the triton.language modules that function sees, found by
            # inspect.getmembers of tl, tl.tensor and tl.math: ~0.5 ms a call, half the time of a looped reduction.
            # Within a launch those modules are patched already: a call patches only a module that is not (tl.core,
            # which a kernel does not see, at the first call of a function that sees it), as the interpreter would.
            langs = [value for value in fn.__globals__.values() if inspect.ismodule(value) and value in (tl, tl.core)]
            if langs and not any(tl.core.is_builtin(getattr(lang, "load", None)) for lang in langs):
                return scope_type()
            return patch_lang(fn)

        patch_lang_where_needed.once_per_launch = True
        interpreter._patch_lang = patch_lang_where_needed
'''


_DOT = '''
    if builder is not None and not getattr(builder.create_dot, "bfloat16_widened", False):
        create_dot = builder.create_dot

        def widened(x):  # bfloat16 is held as its uint16 bits: float32 has the same top 16 bits (exact)
            if x.dtype.scalar != tl.bfloat16:
                return x
            return TensorHandle((x.data.astype(np.uint32) << 16).view(np.float32), tl.float32)

        def create_dot_bfloat16(self, a, b, d, *args):
            return create_dot(self, widened(a), widened(b), d, *args)

        create_dot_bfloat16.bfloat16_widened = True
        builder.create_dot = create_dot_bfloat16
'''


_GRID_BARRIER = '''
    executor = getattr(interpreter, "GridExecutor", None)
    if executor is not None and not getattr(executor.__call__, "passes_for_barriers", False):
        import inspect
        import re

        import torch

        run_grid = executor.__call__

        def run_grid_in_passes(self, *args, **kwargs):
            # A grid barrier (x_grid_barrier: a cooperative reduction's programs wait there for each other) cannot
            # wait under the interpreter, which runs one program after another. So the barrier does nothing and
            # the whole grid runs once more per barrier: the programs' partial results in the workspace survive
            # each pass while every other tensor argument is put back as it was, so in the last pass each program
            # reads the partials all programs wrote before the barrier, as on a GPU.
            try:
                source = inspect.getsource(self.fn)
            except (OSError, TypeError):
                source = ""
            barriers = len(re.findall(r"\\bx_grid_barrier\\(", source))
            helpers = self.fn.__globals__.get("triton_helpers")
            if not barriers or helpers is None:
                return run_grid(self, *args, **kwargs)
            # the workspaces: the semaphores the barrier takes and the buffers partials are stored through
            workspaces = set(re.findall(r"\\bx_grid_barrier\\((\\w+)", source))
            workspaces |= set(re.findall(r"\\((\\w+) \\+ \\d+\\)\\.to\\(tl\\.pointer_type", source))
            named = {**dict(zip(inspect.signature(self.fn).parameters, args)), **kwargs}
            kept = {n: v.clone() for n, v in named.items() if isinstance(v, torch.Tensor) and n not in workspaces}
            barrier = helpers.x_grid_barrier
            helpers.x_grid_barrier = lambda sem: None
            try:
                for done in range(barriers + 1):
                    if done:
                        for name, value in kept.items():
                            named[name].copy_(value)
                    run_grid(self, *args, **kwargs)
            finally:
                helpers.x_grid_barrier = barrier

        run_grid_in_passes.passes_for_barriers = True
        executor.__call__ = run_grid_in_passes
'''


def shim_source(names) -> str:
    """`interpret_libdevice(libdevice)` with numpy versions of just these libdevice functions, as source. A name
    harvest has no version of is left out: the interpreter then fails on it as it would without the shim."""
    known = sorted(n for n in set(names) if n in NUMPY_VERSIONS)
    kinds = {NUMPY_VERSIONS[n][0] for n in known}
    parts = [_HEAD]
    if kinds & {"unary", "predicate"}:
        parts.append(_UNARY)
    if "binary" in kinds:
        parts.append(_BINARY)
    if "fma" in kinds:
        parts.append(_FMA)
    if "dot" in kinds:
        parts.append(_DOT)
    if "reduce" in kinds:
        parts += [_DEVICE_CALLS, _REDUCE]
    if "grid_barrier" in kinds:
        parts.append(_GRID_BARRIER)
    lines = [""]
    if any("erf(" in NUMPY_VERSIONS[n][1] for n in known):
        lines.append("    erf = np.vectorize(math.erf, otypes=[np.float64])")
    for name in known:
        kind, expression = NUMPY_VERSIONS[name]
        if kind in ("dot", "reduce", "grid_barrier"):
            continue
        if kind == "fma":
            lines.append("    libdevice.fma = fma")
        elif kind == "binary":
            lines.append(f"    libdevice.{name} = binary(lambda v, w: {expression})")
        else:
            lines.append(f"    libdevice.{name} = unary(lambda v: {expression}{', predicate=True' if kind == 'predicate' else ''})")
    lines.append("    return libdevice")
    return ("".join(parts) + "\n".join(lines)).strip() + "\n"


SHIM_SOURCE = shim_source(NUMPY_VERSIONS)  # every function harvest has a version of: what the capture child installs


def install() -> bool:
    """Patch the libdevice module Inductor uses, when the interpreter is on. Returns whether it patched."""
    import os

    if os.environ.get("TRITON_INTERPRET") != "1":
        return False
    import triton.language.extra.libdevice as libdevice

    namespace: dict[str, object] = {}
    exec(compile(SHIM_SOURCE, "<harvest interpret shim>", "exec"), namespace)
    namespace["interpret_libdevice"](libdevice)  # type: ignore[operator]
    _interpretable_builtins()
    return True


def _interpretable_builtins() -> None:
    """Inductor's compile-time helpers (`constexpr_next_power_of_2`, `if_mask`: a cooperative reduction's) are
    Triton builtins that take the compiler's `_semantic`, which the interpreter does not pass (it raised a TypeError);
    under the interpreter they are plain Python on plain values, as harvest's own versions are."""
    try:
        from torch._inductor.runtime import triton_helpers
    except ImportError:
        return

    def value(x):
        return getattr(x, "value", x)  # a tl.constexpr, or the plain value the interpreter passes

    def constexpr_next_power_of_2(n, **_):
        n = int(value(n))
        return 1 if n <= 1 else 1 << (n - 1).bit_length()

    def if_mask(mask, val, **_):
        return None if value(mask) is None else val

    for replacement in (constexpr_next_power_of_2, if_mask):
        if hasattr(triton_helpers, replacement.__name__):
            setattr(triton_helpers, replacement.__name__, replacement)
