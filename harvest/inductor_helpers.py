"""harvest's own versions of the helpers Inductor's Triton kernels call as `triton_helpers.NAME(...)`.

Inductor's kernels import them from torch's private runtime package. An extraction must need only torch's public API
and triton, so harvest writes these instead into the extraction's harness.py (only the ones its kernels call, with
what they call) and a module imports them from there: `from harness import Tensor, main, triton_helpers`. The kernel
text stays as Inductor wrote it (`triton_helpers.max2(x, 1)`), so its KERNEL_SHA256 and its record still hold.

Each helper computes what Inductor defines it to compute, bit for bit (tests/test_inductor_helpers.py compares them
with torch's under the interpreter; `harvest ptx` compiles them):
  * max/min: a NaN wins over any number; between two equal values (0.0 and -0.0 too) the second operand is kept;
  * arg-max/min: the value as above, two NaNs count as equal, and equal values keep the lowest index;
  * Welford: (mean, m2, weight) per element, combined pairwise as Chan et al.; equal means add no delta (two equal
    infinite means stay finite; from torch 2.13 on), and two empty partials stay empty;
  * online softmax: a running (max, sum of exp(x - max)), rescaled when the max grows; a row that is all -inf keeps
    scale 1 rather than exp(-inf - -inf);
  * integer floor division and remainder take the sign of the divisor, as Python's // and %.
Rounding follows from the order of the operations, so each formula is written in the order Inductor's kernels are
compiled with (with FP fusion, `a * b + c` becomes one fma): changing it changes the last bits.

Layout: one block per name kernels call, between `# >>> helper: NAME` and `# <<< helper: NAME`, holding
`helper_NAME` (and any private combine function it reduces with). Where Inductor changed a helper, the older form is
a block of its own, `# >>> helper: NAME before torch X.Y` holding `helper_NAME_before_X_Y`; harness.py then holds it
under the helper's own name when the extraction was captured with an older torch (helper_blocks.helpers_source). A
block calls other helpers only by their `helper_` names, which is how harvest.helper_blocks finds what a block
needs. The prefix keeps the names clear of Python's (`any`) and of a packed module's own. Imported, `triton_helpers`
below holds the current forms of all of them; `for_torch` builds what a harness.py holds for a given torch
(harvest's PTX child compiles kernels with that).
"""

import linecache
import types

import triton
import triton.language as tl
from triton.language.extra import libdevice


# >>> helper: promote_to_tensor
@triton.jit
def helper_promote_to_tensor(x):
    # a Python scalar becomes a one-element block; a block keeps its shape and dtype (int1 zeros change neither)
    return x + tl.zeros((1,), tl.int1)
# <<< helper: promote_to_tensor


# >>> helper: is_floating
@triton.jit
def helper_is_floating(x):
    return helper_promote_to_tensor(x).dtype.is_floating()
# <<< helper: is_floating


# >>> helper: minimum
@triton.jit
def helper_minimum(a, b):
    take_a = a < b
    if helper_is_floating(a):
        take_a |= a != a  # a NaN wins; when only b is NaN, `a < b` is false and b is taken
    return tl.where(take_a, a, b)
# <<< helper: minimum


# >>> helper: maximum
@triton.jit
def helper_maximum(a, b):
    take_a = a > b
    if helper_is_floating(a):
        take_a |= a != a
    return tl.where(take_a, a, b)
# <<< helper: maximum


# >>> helper: min2
@triton.jit
def helper_min2(a, dim):
    return tl.reduce(a, dim, helper_minimum)
# <<< helper: min2


# >>> helper: max2
@triton.jit
def helper_max2(a, dim):
    return tl.reduce(a, dim, helper_maximum)
# <<< helper: max2


# >>> helper: pick_with_index
@triton.jit
def helper_pick_with_index(take_a, a_value, a_index, b_value, b_index):
    # `take_a` where a's value wins the comparison; then a NaN wins over a number, and equal values (two NaNs too)
    # keep the lowest index
    tie = a_value == b_value
    if helper_is_floating(a_value):
        a_nan = a_value != a_value
        b_nan = b_value != b_value
        # `not`, as Inductor writes it: elementwise once compiled, but Triton's interpreter takes `not` of a block of
        # 2+ values as False, so under TRITON_INTERPRET=1 a NaN can lose in a loop, with Inductor's helper as here
        take_a |= a_nan & (not b_nan)
        tie |= a_nan & b_nan
    take_a |= tie & (a_index < b_index)
    return tl.where(take_a, a_value, b_value), tl.where(take_a, a_index, b_index)
# <<< helper: pick_with_index


# >>> helper: minimum_with_index
@triton.jit
def helper_minimum_with_index(a_value, a_index, b_value, b_index):
    return helper_pick_with_index(a_value < b_value, a_value, a_index, b_value, b_index)
# <<< helper: minimum_with_index


# >>> helper: maximum_with_index
@triton.jit
def helper_maximum_with_index(a_value, a_index, b_value, b_index):
    return helper_pick_with_index(a_value > b_value, a_value, a_index, b_value, b_index)
# <<< helper: maximum_with_index


# >>> helper: min_with_index
@triton.jit
def helper_min_with_index(value, index, dim):
    return tl.reduce((value, index), dim, helper_minimum_with_index)
# <<< helper: min_with_index


# >>> helper: max_with_index
@triton.jit
def helper_max_with_index(value, index, dim):
    return tl.reduce((value, index), dim, helper_maximum_with_index)
# <<< helper: max_with_index


# >>> helper: any
@triton.jit
def _helper_or(a, b):
    return a | b


@triton.jit
def helper_any(a, dim):
    return tl.reduce(a, dim, _helper_or)
# <<< helper: any


# >>> helper: prod
@triton.jit
def _helper_multiply(a, b):
    return a * b


@triton.jit
def helper_prod(input, axis):
    return tl.reduce(input, axis, _helper_multiply)
# <<< helper: prod


# >>> helper: exp
@triton.jit
def helper_exp(x, use_fast_math: tl.constexpr):
    if use_fast_math:
        return tl.math.exp(x)  # exp2 of x * log2(e): faster, a few ulp off
    else:
        return libdevice.exp(x)
# <<< helper: exp


# >>> helper: online_softmax_reduce
@triton.jit
def helper_online_softmax_reduce(lhs_max, lhs_sum, dim, use_fast_math: tl.constexpr):
    # the row's (max, sum) from its per-lane running pairs: each lane's sum rescaled to the row's max
    row_max = helper_max2(lhs_max, dim)
    row_max_kept = tl.expand_dims(row_max, dim)
    shift = tl.where(row_max_kept == float("-inf"), 0, lhs_max - row_max_kept)
    return row_max, tl.sum(lhs_sum * helper_exp(shift, use_fast_math), dim)
# <<< helper: online_softmax_reduce


# >>> helper: online_softmax_combine
@triton.jit
def helper_online_softmax_combine(lhs_max, lhs_sum, rhs_max, use_fast_math: tl.constexpr):
    # lhs is the running pair, rhs one new value (its sum is exp(rhs - rhs) = 1, so only its scale is added)
    new_max = helper_maximum(lhs_max, rhs_max)
    lhs_scale = tl.where(new_max == float("-inf"), 1.0, helper_exp(lhs_max - new_max, use_fast_math))
    rhs_scale = tl.where(new_max == float("-inf"), 1.0, helper_exp(rhs_max - new_max, use_fast_math))
    return new_max, lhs_sum * lhs_scale + rhs_scale
# <<< helper: online_softmax_combine


# >>> helper: online_softmax_combine_with_sum
@triton.jit
def helper_online_softmax_combine_with_sum(lhs_max, lhs_sum, rhs_max, rhs_sum, use_fast_math: tl.constexpr):
    new_max = helper_maximum(lhs_max, rhs_max)
    lhs_scale = tl.where(new_max == float("-inf"), 1.0, helper_exp(lhs_max - new_max, use_fast_math))
    rhs_scale = tl.where(new_max == float("-inf"), 1.0, helper_exp(rhs_max - new_max, use_fast_math))
    return new_max, lhs_sum * lhs_scale + rhs_sum * rhs_scale
# <<< helper: online_softmax_combine_with_sum


# >>> helper: welford_reduce
@triton.jit
def helper_welford_reduce(value, mean, m2, weight, first_iteration):
    # one more value into each lane's running (mean, m2, weight); the first iteration starts the lanes afresh
    if first_iteration:
        new_weight = tl.full(weight.shape, 1, weight.dtype)
        new_mean = value
        new_m2 = tl.zeros_like(m2)
    else:
        delta = value - mean
        new_weight = weight + 1
        new_mean = mean + delta / new_weight
        new_m2 = m2 + delta * (value - new_mean)
    return new_mean, new_m2, new_weight
# <<< helper: welford_reduce


# >>> helper: welford_combine
@triton.jit
def helper_welford_combine(mean_1, m2_1, weight_1, mean_2, m2_2, weight_2):
    delta = tl.where(mean_1 == mean_2, 0.0, mean_2 - mean_1)  # inf - inf would be NaN
    weight = weight_1 + weight_2
    share_2 = tl.where(weight == 0.0, 0.0, weight_2 / weight)  # two empty partials: no 0 / 0
    return mean_1 + delta * share_2, m2_1 + m2_2 + delta * delta * weight_1 * share_2, weight
# <<< helper: welford_combine


# >>> helper: welford_combine before torch 2.13
@triton.jit
def helper_welford_combine_before_2_13(mean_1, m2_1, weight_1, mean_2, m2_2, weight_2):
    # Inductor's form before torch 2.13 (2.11 and 2.12 checked): no guard for equal means (equal infinite means: NaN)
    delta = mean_2 - mean_1
    weight = weight_1 + weight_2
    share_2 = tl.where(weight == 0.0, 0.0, weight_2 / weight)
    return mean_1 + delta * share_2, m2_1 + m2_2 + delta * delta * weight_1 * share_2, weight
# <<< helper: welford_combine before torch 2.13


# >>> helper: welford
@triton.jit
def helper_welford(mean, m2, weight, dim):
    return tl.reduce((mean, m2, weight), dim, helper_welford_combine)
# <<< helper: welford


# >>> helper: div_floor_integer
@triton.jit
def helper_div_floor_integer(a, b):
    # Triton's // truncates toward zero; floor division rounds down where the signs differ and it is inexact
    quotient = a // b
    inexact = (a % b) != 0
    return tl.where(inexact & ((a < 0) != (b < 0)), quotient - 1, quotient)
# <<< helper: div_floor_integer


# >>> helper: remainder_integer
@triton.jit
def helper_remainder_integer(a, b):
    # Triton's % takes the dividend's sign; Python's (and torch's) takes the divisor's
    remainder = a % b
    return tl.where((remainder != 0) & ((a < 0) != (b < 0)), remainder + b, remainder)
# <<< helper: remainder_integer


# >>> helper: pow_integer
@triton.jit
def helper_pow_integer(base, exponent):
    # exact integer power by squaring, one step per bit of the exponent (a float pow would round)
    bits: tl.constexpr = exponent.dtype.primitive_bitwidth
    remaining = exponent.to(tl.core.get_int_dtype(bits, signed=False))
    result = tl.full(base.shape, 1, base.dtype)
    for _ in tl.static_range(bits):
        result = tl.where((remaining & 1) != 0, result * base, result)
        remaining = remaining >> 1
        base = base * base
    return result
# <<< helper: pow_integer


# >>> helper: select_one
@triton.jit
def helper_select_one(x, mask, dim, keep_dims=False):
    # the one element where mask is 1, moved as its bits (an integer sum of x * mask over dim)
    bits = tl.core.get_int_dtype(x.dtype.primitive_bitwidth, signed=False)
    chosen = tl.sum(x.to(bits, bitcast=True) * mask, dim, keep_dims=keep_dims)
    return chosen.to(bits).to(x.dtype, bitcast=True)
# <<< helper: select_one


# >>> helper: device_assert_then
@triton.jit
def helper_device_assert_then(cond, msg, r):
    tl.device_assert(cond, msg)
    return r
# <<< helper: device_assert_then


# >>> helper: constexpr_next_power_of_2
def helper_constexpr_next_power_of_2(n, _semantic=None, _builder=None):
    # a Triton builtin, run while the kernel compiles: a cooperative reduction's RSPLIT rounded up to a power of two
    return tl.constexpr(triton.next_power_of_2(getattr(n, "value", n)))


helper_constexpr_next_power_of_2.__triton_builtin__ = True
# <<< helper: constexpr_next_power_of_2


# >>> helper: if_mask
def helper_if_mask(mask, val, _semantic=None, _builder=None):
    # a Triton builtin: a load's `other` only where the load has a mask (`other` without one is an error)
    return tl.constexpr(None) if getattr(mask, "value", mask) is None else val


helper_if_mask.__triton_builtin__ = True
# <<< helper: if_mask


# >>> helper: x_grid_barrier
@triton.jit
def helper_x_grid_barrier(sem):
    # Every program with this program_id(1) waits here until all tl.num_programs(0) of them have arrived. Each adds
    # to the semaphore `sem` (a uint32, zero or 0x80000000 at the start): program 0 adds 0x80000000 - (n - 1) and
    # the others 1, so the top bit flips exactly when the last one arrives. A grid larger than the GPU can hold at
    # once never gets there: launch it with launch_cooperative_grid=True, which refuses such a grid.
    tl.debug_barrier()  # this program's stores are written before it says it arrived
    arriving = tl.num_programs(0).to(tl.uint32)
    add = tl.full([], 1, tl.uint32)
    if tl.program_id(0) == 0:
        add = 0x80000000 - (arriving - 1)
    before = tl.atomic_add(sem, add, sem="release")
    flipped = False
    while not flipped:
        now = tl.atomic_add(sem, 0, sem="acquire")
        flipped = ((before ^ now) & 0x80000000) != 0
    tl.debug_barrier()
# <<< helper: x_grid_barrier


triton_helpers = types.ModuleType("triton_helpers", "harvest's versions of Inductor's Triton helpers (all of them)")
triton_helpers.__dict__.update({name[len("helper_") :]: fn for name, fn in list(globals().items())
                                if name.startswith("helper_") and "_before_" not in name})


def for_torch(torch_version: str | None, names, filename: str = "harness.py") -> types.ModuleType:
    """The `triton_helpers` a harness.py holds for kernels calling `names`, captured with `torch_version` (None: the
    current forms): harvest.helper_blocks' text, run as the harness runs it, named `filename` in Triton's output."""
    from harvest.helper_blocks import helpers_source

    source = helpers_source(names, torch_version)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # triton.jit reads it here
    namespace = {"__name__": "harness_helpers", "types": types, "triton": triton, "tl": tl, "libdevice": libdevice}
    exec(compile(source, filename, "exec"), namespace)
    return namespace["triton_helpers"]
