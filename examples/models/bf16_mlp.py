"""One training step of a bfloat16 SwiGLU MLP with RMSNorm: out = x + w2(silu(w1(n)) * w3(n)), n = RMSNorm(x).

    harvest extract examples/models/bf16_mlp.py

Exercises bfloat16 kernels: Inductor loads bf16, computes in float32 and stores bf16 (tl.float32 casts), the RMSNorm
reduction (mean of squares, rsqrt) forward and backward, the fused silu(a) * b pointwise kernel and its backward
(sigmoid derivative), the residual add, and bf16 gradient reductions for the norm weight; the three matmuls stay
extern.
"""

import copy

import torch
from torch import nn
from torch.nn import functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.to(x.dtype) * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.norm = RMSNorm(dim)
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        n = self.norm(x)
        return x + self.w2(F.silu(self.w1(n)) * self.w3(n))


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    tokens, dim, hidden = (8192, 1024, 2816) if device == "cuda" else (32, 32, 64)
    model = SwiGLU(dim, hidden).to(device=device, dtype=torch.bfloat16).train()
    reference = copy.deepcopy(model)
    x = torch.randn(tokens, dim, device=device, dtype=torch.bfloat16, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_()

    compiled = torch.compile(model)
    out = compiled(x)
    out.float().pow(2).mean().backward()
    expected = reference(x_ref)
    expected.float().pow(2).mean().backward()
    # Inductor keeps intermediates in float32 where eager rounds each op to bf16: compare with bf16 tolerances,
    # absolute tolerance relative to the largest value (gradients of a mean are small).
    def close(actual, wanted, what):
        atol = 2e-2 * wanted.float().abs().max().item()
        torch.testing.assert_close(actual, wanted, rtol=5e-2, atol=atol, msg=lambda m: f"{what}: {m}")

    close(out, expected, "output")
    close(x.grad, x_ref.grad, "grad of x")
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        assert p.grad.dtype == torch.bfloat16
        close(p.grad, q.grad, f"grad of {name}")
    print(f"bf16 SwiGLU MLP on {device}: out {tuple(out.shape)} {out.dtype}, grads match eager (bf16 tolerance)")


if __name__ == "__main__":
    main()
