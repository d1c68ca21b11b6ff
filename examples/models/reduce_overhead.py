"""Inference steps of a small block compiled with mode="reduce-overhead": on a GPU Inductor's CUDA graph trees run
the compiled graph once to warm up, then capture it into a CUDA graph and replay that on every later step.

    harvest extract examples/models/reduce_overhead.py
    harvest run examples/models/reduce_overhead.py --with extracted/reduce_overhead     (after editing a kernel)

Gives a layer norm, GELU and a row softmax (reductions and pointwise kernels) around extern matmuls; the steps'
outputs are checked against eager. On the CPU path reduce-overhead changes nothing (CUDA graphs need a GPU).
"""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.ln = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        h = self.down(torch.nn.functional.gelu(self.up(self.ln(x))))
        return torch.softmax(h, dim=-1) + x


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    batch, dim, hidden = (64, 512, 2048) if device == "cuda" else (4, 32, 64)
    model = Block(dim, hidden).to(device).eval()
    compiled = torch.compile(model, mode="reduce-overhead")
    with torch.no_grad():
        for _ in range(5):  # warm-up, capture, then replays of the CUDA graph
            x = torch.randn(batch, dim, device=device)
            out = compiled(x).clone()  # (a replay overwrites the graph's output buffer)
            torch.testing.assert_close(out, model(x), rtol=1e-4, atol=1e-4)
    print(f"reduce-overhead block on {device}: 5 steps match eager")


if __name__ == "__main__":
    main()
