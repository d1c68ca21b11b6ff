"""Looped reductions whose Inductor kernels call triton_helpers: Welford (welford_reduce, welford), arg-max/min
(maximum/minimum_with_index, then max/min_with_index), max/min with NaNs (maximum, max2, ...) and any. The inputs hold
NaNs, ties and -0.0, so a helper that decides one of them differently from Inductor's shows in the record comparison.
(Online softmax is CUDA-only in Inductor; tests/test_inductor_helpers.py compares it directly.)"""
import torch


def step(x):
    var, mean = torch.var_mean(x, dim=1)
    # arg-max/min without the NaN: Triton's interpreter reads `not block` as one bool, so under TRITON_INTERPRET=1
    # Inductor's own maximum_with_index lets a NaN lose inside a loop (compiled for a GPU it does not)
    finite = x.nan_to_num(0.0)
    return var, mean, finite.argmax(dim=1) + finite.argmin(dim=1), x.amax(dim=1) - x.amin(dim=1), (x > 3).any(dim=1)


def main():
    torch.manual_seed(0)
    x = torch.randn(2, 4096).round(decimals=1)  # rows longer than a block: a loop; rounded: many ties
    x[0, 100] = float("nan")
    x[1, ::3] = -0.0
    x[1, 1::3] = 0.0
    out = torch.compile(step)(x)
    print("ok", [tuple(o.shape) for o in out])


if __name__ == "__main__":
    main()
