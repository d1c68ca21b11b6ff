"""The seed's timing exercise: torch.square vs a * a vs a ** 2, then the same three compiled.

    python examples/pytorch_square.py            # timings (CUDA events on a GPU)
    harvest extract examples/pytorch_square.py   # the Triton kernels torch.compile wrote for each

torch.square and a ** 2 dispatch to aten.pow, a * a to aten.mul. GPU work is asynchronous, so on a GPU the
timings use CUDA events after a warm-up, never Python clocks. Without a GPU the script times with
time.perf_counter and uses a small input.
"""

import time

import torch


def square_fn(a):
    return torch.square(a)


def mul_fn(a):
    return a * a


def pow_fn(a):
    return a**2


def time_fn(fn, a, warmup=5, repeats=10):
    """Median time of fn(a) in milliseconds (CUDA events on a GPU, perf_counter on a CPU)."""
    for _ in range(warmup):
        fn(a)
    times = []
    for _ in range(repeats):
        if a.is_cuda:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn(a)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn(a)
            times.append((time.perf_counter() - t0) * 1e3)
    return sorted(times)[len(times) // 2]


def main():
    torch.manual_seed(0)  # the same inputs every run: the record harvest saves is then the same too
    device = "cuda" if torch.cuda.is_available() else "cpu"
    n = 10000 if device == "cuda" else 1000
    a = torch.randn(n, n, device=device)
    for fn in (square_fn, mul_fn, pow_fn):
        eager_ms = time_fn(fn, a)
        compiled = torch.compile(fn)
        torch.testing.assert_close(compiled(a), fn(a))
        # The interpreter takes ~1 s a call on a CPU: time the compiled version once there.
        compiled_ms = time_fn(compiled, a, warmup=1, repeats=10 if a.is_cuda else 1)
        print(f"{fn.__name__:10s} eager {eager_ms:8.3f} ms   compiled {compiled_ms:8.3f} ms")


if __name__ == "__main__":
    main()
