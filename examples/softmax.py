"""A row softmax wide enough that Inductor loops over each row: the reduction `harvest bench --sweep` tunes.

    harvest extract examples/softmax.py
    harvest bench extracted/softmax --sweep      # BLOCK_ROWS x BLOCK_COLS x num_warps x num_stages (GPU)

8192 rows of 4096 float32 on a GPU (128 MiB in, 128 MiB out): a row is longer than a persistent reduction holds,
so the kernel is a looped reduction (XBLOCK rows per program, R0_BLOCK columns per step), the kind with the most
to sweep. Without a GPU the rows are fewer, so the Triton interpreter finishes in seconds.
"""

import torch


def softmax(x):
    return torch.softmax(x, dim=-1)


def main():
    torch.manual_seed(0)  # the same inputs every run: the record harvest saves is then the same too
    device = "cuda" if torch.cuda.is_available() else "cpu"
    rows = 8192 if device == "cuda" else 4
    x = torch.randn(rows, 4096, device=device)
    out = torch.compile(softmax)(x)
    torch.testing.assert_close(out, softmax(x))
    print(f"softmax on {device}: {tuple(out.shape)} ok")


if __name__ == "__main__":
    main()
