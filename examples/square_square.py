"""torch.square(torch.square(x)): two aten.pow ops that Inductor fuses into ONE Triton kernel.

    harvest extract examples/square_square.py

Compare its report with examples/square_compile.py: one kernel either way, two pow ops here.
"""

import torch


def square_square(x):
    return torch.square(torch.square(x))


def main():
    torch.manual_seed(0)  # the same inputs every run: the record harvest saves is then the same too
    device = "cuda" if torch.cuda.is_available() else "cpu"
    n = 10000 if device == "cuda" else 1000
    x = torch.randn(n, n, device=device)
    out = torch.compile(square_square)(x)
    torch.testing.assert_close(out, square_square(x))
    print(f"square_square on {device}: {tuple(out.shape)} ok")


if __name__ == "__main__":
    main()
