"""Cooperative reductions: few long rows, each reduced by many programs that meet at a grid barrier.

    harvest extract examples/models/cooperative.py

With `triton.cooperative_reductions` on, Inductor splits a reduction over few long rows across RSPLIT programs per
row (as many as the GPU has SMs, so that all run at once): each stores its partial result in a workspace, waits at
`triton_helpers.x_grid_barrier` for the others, then combines all partials (triton_heuristics.cooperative_reduction,
launched with launch_cooperative_grid=True). Here: a scaled sum, an amax and a variance per row and a whole-tensor
mean, in inference (torch 2.13's wrapper fails on the training graph of such reductions: "'WorkspaceArg' object has
no attribute 'name'" in memory_plan_reuse). Checked against eager.
"""

import torch
import torch._inductor.config as inductor_config

inductor_config.triton.cooperative_reductions = True
inductor_config.triton.force_cooperative_reductions = True  # every reduction here, even where it would not pay


def row_statistics(x, scale):
    y = x * scale
    variance, mean = torch.var_mean(y, dim=1)
    return y.sum(dim=1) + y.amax(dim=1), variance, mean, y.abs().mean()


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    rows, cols = (8, 1 << 20) if device == "cuda" else (4, 1 << 14)
    x = torch.randn(rows, cols, device=device)
    scale = torch.rand(cols, device=device) + 0.5
    got = torch.compile(row_statistics)(x, scale)
    want = row_statistics(x.detach(), scale)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-3)
    print(f"cooperative reductions on {device}: sums, amax, var_mean and mean of {rows} rows of {cols} match eager")


if __name__ == "__main__":
    main()
