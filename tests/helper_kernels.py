"""Small Triton kernels that call `triton_helpers.NAME(...)` as Inductor's kernels do, and a way to build them against
any module that provides those helpers: harvest's own (harvest/inductor_helpers.py) or torch's. Imported by
tests/test_inductor_helpers.py, and run by it as a child script (`python tests/helper_kernels.py`) to compile the
kernels offline for PTX."""

from __future__ import annotations

import linecache
import sys

KERNELS = '''
import triton
import triton.language as tl


@triton.jit
def max_min_kernel(x_ptr, y_ptr, max2_ptr, min2_ptr, maximum_ptr, minimum_ptr, COLS: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, COLS)[None, :]
    x = tl.load(x_ptr + row * COLS + cols)
    y = tl.load(y_ptr + row * COLS + cols)
    tl.store(max2_ptr + row + tl.arange(0, 1), triton_helpers.max2(x, 1))
    tl.store(min2_ptr + row + tl.arange(0, 1), triton_helpers.min2(x, 1))
    tl.store(maximum_ptr + row * COLS + cols, triton_helpers.maximum(x, y))
    tl.store(minimum_ptr + row * COLS + cols, triton_helpers.minimum(x, y))


@triton.jit
def max2_kernel(in_ptr, rows, out_ptr, ROWS: tl.constexpr, COLS: tl.constexpr):
    # a persistent row reduction as Inductor writes it: masked lanes are -inf
    row = tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]
    cols = tl.arange(0, COLS)[None, :]
    mask = row < rows
    x = tl.load(in_ptr + row * COLS + cols, mask, other=0.0)
    x = tl.where(mask, x, float("-inf"))
    tl.store(out_ptr + row, triton_helpers.max2(x, 1)[:, None], mask)


@triton.jit
def arg_kernel(x_ptr, max_ptr, argmax_ptr, min_ptr, argmin_ptr, COLS: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, COLS)[None, :]
    x = tl.load(x_ptr + row * COLS + cols)
    index = tl.broadcast_to(cols, [1, COLS]).to(tl.int64)
    value, where = triton_helpers.max_with_index(x, index, 1)
    tl.store(max_ptr + row + tl.arange(0, 1), value)
    tl.store(argmax_ptr + row + tl.arange(0, 1), where)
    value, where = triton_helpers.min_with_index(x, index, 1)
    tl.store(min_ptr + row + tl.arange(0, 1), value)
    tl.store(argmin_ptr + row + tl.arange(0, 1), where)


@triton.jit
def any_prod_kernel(x_ptr, any_ptr, prod_ptr, COLS: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, COLS)[None, :]
    x = tl.load(x_ptr + row * COLS + cols)
    tl.store(any_ptr + row + tl.arange(0, 1), triton_helpers.any(x > 2.0, 1).to(tl.int8))
    tl.store(prod_ptr + row + tl.arange(0, 1), triton_helpers.prod(x, 1))


@triton.jit
def welford_kernel(in_ptr, rows, r_numel, mean_ptr, m2_ptr, weight_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    # a looped Welford reduction as Inductor writes it (var_mean over rows of r_numel values)
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < rows
    rbase = tl.arange(0, RBLOCK)[None, :]
    mean = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    m2 = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    weight = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    for roffset in tl.range(0, r_numel, RBLOCK):
        rindex = roffset + rbase
        rmask = rindex < r_numel
        x = tl.load(in_ptr + (rindex + r_numel * xindex), rmask & xmask, eviction_policy="evict_first", other=0.0)
        x = tl.broadcast_to(x, [XBLOCK, RBLOCK])
        mean_next, m2_next, weight_next = triton_helpers.welford_reduce(x, mean, m2, weight, roffset == 0)
        mean = tl.where(rmask & xmask, mean_next, mean)
        m2 = tl.where(rmask & xmask, m2_next, m2)
        weight = tl.where(rmask & xmask, weight_next, weight)
    row_mean, row_m2, row_weight = triton_helpers.welford(mean, m2, weight, 1)
    tl.store(mean_ptr + xindex, row_mean[:, None], xmask)
    tl.store(m2_ptr + xindex, row_m2[:, None], xmask)
    tl.store(weight_ptr + xindex, row_weight[:, None], xmask)


@triton.jit
def welford_combine_kernel(a_ptr, out_ptr, N: tl.constexpr):
    # six operands per element: mean_1, m2_1, weight_1, mean_2, m2_2, weight_2
    i = tl.program_id(0) * N + tl.arange(0, N)
    mean_1, m2_1, weight_1 = tl.load(a_ptr + 6 * i), tl.load(a_ptr + 6 * i + 1), tl.load(a_ptr + 6 * i + 2)
    mean_2, m2_2, weight_2 = tl.load(a_ptr + 6 * i + 3), tl.load(a_ptr + 6 * i + 4), tl.load(a_ptr + 6 * i + 5)
    mean, m2, weight = triton_helpers.welford_combine(mean_1, m2_1, weight_1, mean_2, m2_2, weight_2)
    tl.store(out_ptr + 3 * i, mean)
    tl.store(out_ptr + 3 * i + 1, m2)
    tl.store(out_ptr + 3 * i + 2, weight)


@triton.jit
def online_softmax_kernel(in_ptr, r_numel, max_ptr, sum_ptr, RBLOCK: tl.constexpr, FAST: tl.constexpr):
    row = tl.program_id(0)
    rbase = tl.arange(0, RBLOCK)[None, :]
    running_max = tl.full([1, RBLOCK], float("-inf"), tl.float32)
    running_sum = tl.zeros([1, RBLOCK], tl.float32)
    for roffset in tl.range(0, r_numel, RBLOCK):
        rindex = roffset + rbase
        rmask = rindex < r_numel
        x = tl.load(in_ptr + (rindex + r_numel * row), rmask, other=0.0)
        max_next, sum_next = triton_helpers.online_softmax_combine(running_max, running_sum, x, FAST)
        running_max = tl.where(rmask, max_next, running_max)
        running_sum = tl.where(rmask, sum_next, running_sum)
    row_max, row_sum = triton_helpers.online_softmax_reduce(running_max, running_sum, 1, FAST)
    tl.store(max_ptr + row + tl.arange(0, 1), row_max)
    tl.store(sum_ptr + row + tl.arange(0, 1), row_sum)


@triton.jit
def pointwise_kernel(a_ptr, b_ptr, e_ptr, floor_ptr, rem_ptr, pow_ptr, exp_ptr, fast_ptr, max_ptr, sum_ptr, N: tl.constexpr):
    i = tl.program_id(0) * N + tl.arange(0, N)
    a = tl.load(a_ptr + i)
    b = tl.load(b_ptr + i)
    e = tl.load(e_ptr + i)
    tl.store(floor_ptr + i, triton_helpers.div_floor_integer(a, b))
    tl.store(rem_ptr + i, triton_helpers.remainder_integer(a, b))
    tl.store(pow_ptr + i, triton_helpers.device_assert_then(b != 0, "b is not 0", triton_helpers.pow_integer(a, e)))
    x = a.to(tl.float32) * 0.01
    y = b.to(tl.float32) * 0.01
    tl.store(exp_ptr + i, triton_helpers.exp(x, False))
    tl.store(fast_ptr + i, triton_helpers.exp(x, True))
    new_max, new_sum = triton_helpers.online_softmax_combine_with_sum(x, tl.abs(y), y, tl.abs(x), False)
    tl.store(max_ptr + i, new_max)
    tl.store(sum_ptr + i, new_sum)
'''


def build(helpers, tag: str) -> dict:
    """The kernels above, compiled from source with `triton_helpers` bound to `helpers` (a module of helpers)."""
    import triton
    import triton.language as tl

    filename = f"<helper kernels: {tag}>"
    linecache.cache[filename] = (len(KERNELS), None, KERNELS.splitlines(True), filename)  # jit reads its source here
    namespace = {"__name__": f"helper_kernels_{tag}", "triton": triton, "tl": tl, "triton_helpers": helpers}
    exec(compile(KERNELS, filename, "exec"), namespace)
    return namespace


def helper_modules() -> dict:
    """{"harvest": the helpers a harness.py holds for a capture with this torch, "torch": torch's own}."""
    import torch
    from torch._inductor.runtime import triton_helpers as torch_helpers

    from harvest.helper_blocks import known_helpers
    from harvest.inductor_helpers import for_torch

    called = sorted(known_helpers() & set(vars(torch_helpers)))  # what this torch has (2.11 has no pow_integer)
    return {"harvest": for_torch(torch.__version__, called), "torch": torch_helpers}


# What the PTX comparison compiles: kernel -> (signature, constexprs).
PTX_CASES = {
    "max2_kernel": ({"in_ptr": "*fp32", "rows": "i32", "out_ptr": "*fp32", "ROWS": "constexpr", "COLS": "constexpr"},
                    {"ROWS": 1, "COLS": 1024}),
    "welford_kernel": ({"in_ptr": "*fp32", "rows": "i32", "r_numel": "i32", "mean_ptr": "*fp32", "m2_ptr": "*fp32",
                        "weight_ptr": "*fp32", "XBLOCK": "constexpr", "RBLOCK": "constexpr"}, {"XBLOCK": 1, "RBLOCK": 2048}),
}


def compile_ptx(capability: int = 90) -> dict:
    """{kernel: {helpers: ptx}} for PTX_CASES, compiled offline for sm_<capability> (TRITON_INTERPRET must be off)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    out: dict = {}
    for tag, helpers in helper_modules().items():
        namespace = build(helpers, tag)
        for name, (signature, constexprs) in PTX_CASES.items():
            fn = namespace[name]
            source = ASTSource(fn, signature, {(fn.arg_names.index(k),): v for k, v in constexprs.items()},
                               {(i,): [["tt.divisibility", 16]] for i, k in enumerate(signature) if k.startswith("*")})
            compiled = triton.compile(source, target=GPUTarget("cuda", capability, 32), options={"num_warps": 8})
            out.setdefault(name, {})[tag] = compiled.asm["ptx"]
    return out


if __name__ == "__main__":  # the child of the PTX test: JSON {kernel: {helpers: ptx}} on stdout
    import json
    import os

    assert os.environ.get("TRITON_INTERPRET") != "1", "compile offline with the interpreter off"
    json.dump(compile_ptx(int(sys.argv[1]) if len(sys.argv) > 1 else 90), sys.stdout)
