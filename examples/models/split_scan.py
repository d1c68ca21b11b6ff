"""Long scans in inference, under torch.compile: the split scan without a backward to compile.

    harvest extract examples/models/split_scan.py

On a GPU a scan over few long rows becomes a split scan (triton_heuristics.split_scan, triton_spl_*): several
programs per row, which pass their carries through a workspace with a decoupled look-back. examples/models/scans.py
has them too, but torch 2.11's Inductor spends minutes fusing that target's backward on CUDA; this one has none.
On the CPU path the scans are persistent or looped reductions.
"""

import torch


def scans(y, z):
    return torch.cumsum(y, 0), torch.logcumsumexp(z, -1), torch.cumsum(z * z, -1)


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    long = 1 << 20 if device == "cuda" else 4096
    y = torch.randn(long, device=device)
    z = torch.randn(4, long, device=device)
    with torch.no_grad():
        got = torch.compile(scans)(y, z)
    for a, b in zip(got, scans(y, z)):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-2 if device == "cuda" else 1e-3)
    print(f"split scans on {device}: cumsum of {long} values, logcumsumexp and cumsum of 4 x {long} match eager")


if __name__ == "__main__":
    main()
