"""Scans: cumsum, a cumprod of sigmoids and logcumsumexp, forward and backward, under torch.compile.

    harvest extract examples/models/scans.py

Inductor writes a scan with tl.associative_scan inside a reduction-shaped kernel; on a GPU, a long scan over few
rows becomes a split scan (triton_heuristics.split_scan: several programs per row, passing carries through a
workspace). Checked against eager.
"""

import torch
import torch._inductor.config as inductor_config

# torch 2.11's mix-order reduction fusion fails on this backward on CUDA ("AssertionError: 2045 v.s. 2044"): off.
if hasattr(inductor_config.triton, "mix_order_reduction"):
    inductor_config.triton.mix_order_reduction = False


def scans(x, y):
    return torch.cumsum(x, -1), torch.cumprod(torch.sigmoid(x), -1), torch.logcumsumexp(x, 0), torch.cumsum(y, 0)


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    # (on the H200 torch 2.11 spent over 4 minutes fusing the backward of 256 x 2048: the rows stay small there too)
    rows, cols, long = (64, 256, 1 << 20) if device == "cuda" else (16, 64, 4096)
    x = torch.randn(rows, cols, device=device, requires_grad=True)
    y = torch.randn(long, device=device)
    got = torch.compile(scans)(x, y)
    want = scans(x.detach(), y)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-3)
    sum(g.sum() for g in got[:3]).backward()
    print(f"scans on {device}: cumsum, cumprod, logcumsumexp of {rows}x{cols} and a cumsum of {long} values match eager")


if __name__ == "__main__":
    main()
