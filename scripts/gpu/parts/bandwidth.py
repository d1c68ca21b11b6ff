"""On the GPU: the square twin's bandwidth against a device copy and torch.square, in the same process.

Reads OUT/twins.json (written by scripts/gpu/parts/twins.py) for the square_compile rows; prints one line per kernel.
    python3 scripts/gpu/parts/bandwidth.py OUT
"""
import json
import sys

import torch
import triton.testing

out = sys.argv[1]
rows = [r for r in json.load(open(f"{out}/twins.json")) if r["extraction"] == "square_compile" and r["twin_ms"]]
n = 10000 * 10000
src = torch.randn(n, device="cuda")
dst = torch.empty_like(src)
copy = triton.testing.do_bench(lambda: dst.copy_(src), quantiles=[0.5, 0.2, 0.8])
square = triton.testing.do_bench(lambda: torch.square(src, out=dst), quantiles=[0.5, 0.2, 0.8])
gb = 2 * n * 4 / 1e9
print(f"copy          {copy[0]:.4f} ms ({copy[1]:.4f}..{copy[2]:.4f})  {gb / copy[0] * 1e3:.0f} GB/s")
print(f"torch.square  {square[0]:.4f} ms ({square[1]:.4f}..{square[2]:.4f})  {gb / square[0] * 1e3:.0f} GB/s")
for r in rows:
    (t, t20, t80), (k, k20, k80) = r["twin_ms"], r["triton_ms"]
    print(f"twin {r['kernel']}  {t:.4f} ms ({t20:.4f}..{t80:.4f})  {gb / t * 1e3:.0f} GB/s = {copy[0] / t * 100:.1f}% of copy")
    print(f"triton {r['kernel']}  {k:.4f} ms ({k20:.4f}..{k80:.4f})  {gb / k * 1e3:.0f} GB/s = {copy[0] / k * 100:.1f}% of copy")
