"""Dynamic shapes: compile with dynamic=True so the kernels take size symbols (ks0) instead of constants.

    harvest extract examples/dynamic_shapes.py
"""

import torch


def scaled_softmax(x, scale: float):
    return torch.softmax(x * scale, dim=-1) + torch.relu(x)


def main():
    torch.manual_seed(0)  # the same inputs every run: the record harvest saves is then the same too
    device = "cuda" if torch.cuda.is_available() else "cpu"
    fn = torch.compile(scaled_softmax, dynamic=True)
    for rows, cols in ((64, 96), (33, 200)):
        x = torch.randn(rows, cols, device=device)
        torch.testing.assert_close(fn(x, 0.5), scaled_softmax(x, 0.5))
    print(f"dynamic softmax on {device}: ok")


if __name__ == "__main__":
    main()
