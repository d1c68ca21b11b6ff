"""A compiled AdamW step: torch.compile of optimizer.step() on a small MLP's parameters, as training code does.

    harvest extract examples/models/adamw_step.py

On a GPU Inductor writes the step as foreach (combo) kernels: one launch updates several parameters, each its own
sub-kernel (triton_for_fused_*); on the CPU Triton path one pointwise kernel per parameter. Checked against an eager
AdamW step from the same state.
"""

import copy

import torch
from torch import nn


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    width = 1024 if device == "cuda" else 32
    model = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)).to(device)
    reference = copy.deepcopy(model)
    x = torch.randn(64, width, device=device)
    for m in (model, reference):
        m(x).pow(2).mean().backward()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    opt_ref = torch.optim.AdamW(reference.parameters(), lr=1e-3, weight_decay=0.01)

    @torch.compile
    def step():
        opt.step()

    for _ in range(2):
        step()
        opt_ref.step()
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    print(f"compiled AdamW on {device}: {sum(p.numel() for p in model.parameters())} parameters, two steps match eager")


if __name__ == "__main__":
    main()
