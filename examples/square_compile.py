"""The seed's first torch.compile example: one torch.square, compiled.

    harvest extract examples/square_compile.py

Inductor turns the square into one pointwise Triton kernel (aten.pow).
On a GPU the input is 10000x10000; without one, 1000x1000 so the Triton interpreter finishes in seconds.
"""

import torch


def square(a):
    return torch.square(a)


def main():
    torch.manual_seed(0)  # the same inputs every run: the record harvest saves is then the same too
    device = "cuda" if torch.cuda.is_available() else "cpu"
    n = 10000 if device == "cuda" else 1000
    a = torch.randn(n, n, device=device)
    opt = torch.compile(square)
    out = opt(a)
    torch.testing.assert_close(out, square(a))
    print(f"square on {device}: {tuple(out.shape)} ok")


if __name__ == "__main__":
    main()
