"""Make `libdevice.*` calls run under TRITON_INTERPRET=1.

The Triton interpreter patches `tl` and `tl.math` with numpy versions but not `triton.language.extra.libdevice`,
whose functions lower to `extern_elementwise`, which the interpreter cannot run. Inductor calls libdevice for tanh,
erf, rsqrt, isinf, pow, fma (torch 2.8-2.10), ... so the first GELU or LayerNorm kernel kills a CPU run. Older
interpreters (triton 3.2-3.3) also lack `block_type.with_element_ty` and `get_int1_ty` (Inductor's `max2` reaches
it through `tl.zeros((1,), tl.int1)`); the shim stands in for both.

`SHIM_SOURCE` defines numpy versions that work on the interpreter's tensors. It is plain source so it can be both
exec'd by the capture child (`install`) and pasted into generated kernel modules (which import only torch and
triton). It touches nothing unless the interpreter is on.
"""

from __future__ import annotations

SHIM_SOURCE = '''
def _interpret_libdevice(libdevice):
    """Under TRITON_INTERPRET=1, replace libdevice functions with numpy versions the interpreter can run."""
    import math

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

    def unary(np_fn, predicate=False):
        def call(x, *_, **__):
            data = np.asarray(np_fn(x.handle.data))
            dtype = tl.int1 if predicate else x.dtype
            if not predicate:
                data = data.astype(x.handle.data.dtype, copy=False)
            return tl.core.tensor(TensorHandle(data, dtype.scalar), retyped(x, dtype.scalar))

        return call

    def binary(np_fn):
        def call(x, y, *_, **__):
            a = x if isinstance(x, tl.core.tensor) else y
            xd = x.handle.data if isinstance(x, tl.core.tensor) else x
            yd = y.handle.data if isinstance(y, tl.core.tensor) else y
            data = np.asarray(np_fn(xd, yd)).astype(a.handle.data.dtype, copy=False)
            return tl.core.tensor(TensorHandle(data, a.dtype.scalar), a.type)

        return call

    def fma(x, y, z, *_, **__):
        # one rounding, as the hardware's: a float32 product is exact in float64, so only the sum rounds twice
        operands = [v for v in (x, y, z) if isinstance(v, tl.core.tensor)]
        xd, yd, zd = (np.asarray(v.handle.data if isinstance(v, tl.core.tensor) else v, dtype=np.float64) for v in (x, y, z))
        data = np.asarray(xd * yd + zd)
        a = next((v for v in operands if v.handle.data.shape == data.shape), operands[0])
        data = data.astype(a.handle.data.dtype, copy=False)
        return tl.core.tensor(TensorHandle(data, a.dtype.scalar), a.type)

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
    libdevice.fma = fma  # Inductor of torch 2.8-2.10 writes libdevice.fma in softmax backward
    return libdevice
'''


def install() -> bool:
    """Patch the libdevice module Inductor uses, when the interpreter is on. Returns whether it patched."""
    import os

    if os.environ.get("TRITON_INTERPRET") != "1":
        return False
    import triton.language.extra.libdevice as libdevice

    namespace: dict[str, object] = {}
    exec(compile(SHIM_SOURCE, "<harvest interpret shim>", "exec"), namespace)
    namespace["_interpret_libdevice"](libdevice)  # type: ignore[operator]
    return True
