"""Kernels for tests/test_launcher.py (Triton reads a kernel's source from its file). Made JITFunctions whatever
TRITON_INTERPRET says (the suite turns the interpreter on, and @triton.jit would make interpreted functions): the
launcher under test stands in for the JIT's kernels, which a GPU run launches."""

import triton.language as tl
from triton.runtime.jit import JITFunction


def scale(a_ptr, out_ptr, n, scale, BLOCK: tl.constexpr, EXTRA: tl.constexpr = 4):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask) * scale + EXTRA, mask)


def copy(a_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, offsets < n), offsets < n)


scale_kernel = JITFunction(scale)
copy_kernel = JITFunction(copy, do_not_specialize=["n"])
