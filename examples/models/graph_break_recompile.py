"""Graph breaks, recompiles and in-place updates: two compiled functions, each split by a graph break, each called on
two shapes, with mutations of tensors passed in and backward through part of the work.

    harvest extract examples/models/graph_break_recompile.py

`normalize_step` uses torch.compile's default: the second shape triggers a recompile with automatic dynamic shapes,
so the second pair of graphs has symbolic sizes (ks0) as kernel arguments. `scale_step` uses dynamic=False, so its
second shape gives another static compile. Each function has a graph break in the middle (print /
torch._dynamo.graph_break()), so every compile produces two forward graphs and two backward graphs. Exercises
Inductor's in-place mutation of graph inputs (buf.add_, scale.mul_, a running-mean update written back to the
input), column-mean reductions before and after the break, and pointwise forward/backward kernels (tanh, sigmoid,
square).
"""

import torch


def normalize_step(x, w, buf, running_mean):
    h = torch.tanh(x * w)
    buf.add_(h.detach().sum(0))  # in-place update of a tensor passed in
    print("graph break in normalize_step")  # graph break
    m = h.mean(dim=0)
    running_mean.mul_(0.9).add_(m.detach(), alpha=0.1)  # running-mean style update
    return (h - m).pow(2).mean()


def scale_step(x, scale, stats):
    y = torch.sigmoid(x) * 2.0
    scale.mul_(2)  # in-place on a tensor passed in
    torch._dynamo.graph_break()
    stats.copy_(0.5 * stats + 0.5 * y.detach().mean(dim=0))
    return (y * scale).mean()


def run(fn, kind, device, rows, cols, seed):
    """Run fn (normalize_step or scale_step, compiled or eager) once: returns loss, grads and the mutated tensors."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(rows, cols, generator=gen).to(device).requires_grad_()
    if kind == "normalize":
        w = torch.randn(cols, generator=gen).to(device).requires_grad_()
        buf, running = torch.zeros(cols, device=device), torch.ones(cols, device=device)
        loss = fn(x, w, buf, running)
        loss.backward()
        return [loss, x.grad, w.grad, buf, running]
    scale = torch.full((cols,), 0.5, device=device)
    stats = torch.zeros(cols, device=device)
    loss = fn(x, scale, stats)
    loss.backward()
    return [loss, x.grad, scale, stats]


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    cols = 2048 if device == "cuda" else 32
    shapes = [(4096, cols), (2048, cols)] if device == "cuda" else [(64, cols), (32, cols)]
    cases = [
        ("normalize", normalize_step, torch.compile(normalize_step)),  # default: automatic dynamic on the 2nd shape
        ("scale", scale_step, torch.compile(scale_step, dynamic=False)),  # a second static compile
    ]
    for kind, eager, fn in cases:
        for i, (rows, c) in enumerate(shapes):
            got = run(fn, kind, device, rows, c, seed=i)
            want = run(eager, kind, device, rows, c, seed=i)
            for a, b in zip(got, want):
                torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    print(f"graph breaks + recompiles on {device}: {len(shapes)} shapes x 2 functions match eager")


if __name__ == "__main__":
    main()
