"""A user-written @triton.jit kernel called inside a compiled function, between ops Inductor fuses.

    harvest extract examples/models/user_kernel.py

Dynamo keeps the user's kernel as it was written (a user-defined Triton kernel in Inductor's output) and fuses the
ops around it into Inductor kernels of its own.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def scaled_relu_kernel(x_ptr, out_ptr, scale, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0) * scale, mask=mask)


def scaled_relu(x, scale):
    out = torch.empty_like(x)
    n = x.numel()
    scaled_relu_kernel[(triton.cdiv(n, 1024),)](x, out, scale, n, BLOCK=1024)
    return out


def f(x, y):
    h = torch.sin(x) + y          # an Inductor kernel before
    h = scaled_relu(h, 2.0)       # the user's kernel
    return (h * y).sum(dim=-1)    # an Inductor reduction after


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(512, 1024, device=device)
    y = torch.randn(512, 1024, device=device)
    got = torch.compile(f)(x, y)
    torch.testing.assert_close(got, f(x, y), rtol=1e-4, atol=1e-3)
    print(f"user kernel on {device}: output matches eager")


if __name__ == "__main__":
    main()
