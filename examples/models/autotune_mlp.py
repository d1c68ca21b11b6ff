"""A two-layer MLP compiled with mode="max-autotune-no-cudagraphs", one training step.

    harvest extract examples/models/autotune_mlp.py

On a GPU, max-autotune benchmarks Inductor's Triton matmul templates against cuBLAS and keeps the faster: the
winners are template kernels (triton_tem_fused_*) with the bias, ReLU or the backward's threshold fused in as an
epilogue. On the CPU Triton path the matmuls stay extern calls.
"""

import copy

import torch
from torch import nn


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    tokens, width = (2048, 512) if device == "cuda" else (32, 64)  # (autotuning each matmul takes a while)
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    model = nn.Sequential(nn.Linear(width, 4 * width), nn.ReLU(), nn.Linear(4 * width, width)).to(device, dtype)
    reference = copy.deepcopy(model)
    x = torch.randn(tokens, width, device=device, dtype=dtype)
    out = torch.compile(model, mode="max-autotune-no-cudagraphs")(x)
    out.float().pow(2).mean().backward()
    expected = reference(x)
    expected.float().pow(2).mean().backward()
    tolerance = dict(rtol=5e-2, atol=5e-2) if dtype == torch.bfloat16 else dict(rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(out, expected, **tolerance)
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=tolerance["rtol"], atol=tolerance["atol"] * q.grad.abs().max().item())
    print(f"max-autotune MLP on {device}: {tokens}x{width} {dtype}, output and grads match eager")


if __name__ == "__main__":
    main()
