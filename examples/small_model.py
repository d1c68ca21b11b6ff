"""A small transformer-like block, forward and backward: LayerNorm -> Linear -> GELU -> softmax attention.

    harvest extract examples/small_model.py

Gives Inductor reductions (layer norm, softmax), pointwise fusions (GELU, scaling, residual) and extern
matmuls (mm/bmm), in a forward graph and a backward graph.
"""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.ln = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)
        self.scale = dim**-0.5

    def forward(self, x):
        h = self.ln(x)
        h = self.up(h)
        h = torch.nn.functional.gelu(h)
        h = self.down(h)
        scores = (h @ x.transpose(-2, -1)) * self.scale
        attn = torch.softmax(scores, dim=-1)
        return x + attn @ h


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    batch, seq, dim, hidden = (8, 256, 512, 2048) if device == "cuda" else (2, 16, 32, 64)
    model = Block(dim, hidden).to(device)
    x = torch.randn(batch, seq, dim, device=device, requires_grad=True)
    compiled = torch.compile(model)
    out = compiled(x)
    out.sum().backward()
    grad = x.grad.clone()
    x.grad = None
    model(x).sum().backward()
    torch.testing.assert_close(grad, x.grad, rtol=1e-4, atol=1e-4)
    print(f"block on {device}: forward {tuple(out.shape)}, backward ok")


if __name__ == "__main__":
    main()
