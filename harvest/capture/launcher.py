"""How `harvest run --with` launches a swapped module's kernel: Triton's compiled kernel called directly, as
Inductor's own launcher does, instead of `JITFunction.__call__` at every launch.

A module's launch() is plain Triton (`kernel[grid](*args, **CONFIG)`), and stays so: the capture child puts a
`DirectLaunch` in place of the module's kernel object. Its first launch with a given specialization goes through
Triton's JIT, which compiles the kernel (or finds it in its cache), launches it and returns the compiled kernel;
later launches with the same specialization bind the arguments in the kernel's parameter order (constexprs and
defaults included, as Triton's own binder does) and call the compiled kernel's launcher: no signature binding,
no specialization of every argument, no cache-key hashing, no option parsing. (Triton's JIT spent 30-81 µs of host
time a launch on the H200 where Inductor's launcher spends 14-21 µs.)

The specialization key is finer than Triton's own, so that two launches with one key always take the same
compiled kernel: per tensor its dtype and whether its address is 16-byte aligned, per integer whether it is 1,
a multiple of 16 and which integer type holds it; constexprs and launch options by value.

Where the Triton here lacks what the direct call needs (Triton < 3.3: another launcher calling convention; the
interpreter: nothing is compiled), `direct_launch_unavailable()` says why, and the module's kernel is launched
through Triton's JIT as before.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

INT32 = range(-(2**31), 2**31)


def direct_launch_unavailable() -> str:
    """Why swapped kernels cannot be launched directly here ("" when they can)."""
    import os

    if os.environ.get("TRITON_INTERPRET") == "1":
        return "the Triton interpreter runs them on the CPU path, where nothing is compiled"
    try:
        import triton
        from triton.compiler.compiler import CompiledKernel
    except ImportError as exc:
        return f"Triton's compiled-kernel API is not importable ({exc})"
    runtime = getattr(getattr(triton, "knobs", None), "runtime", None)
    if runtime is None or not hasattr(runtime, "launch_enter_hook") or not hasattr(CompiledKernel, "launch_metadata"):
        return f"Triton {triton.__version__} launches compiled kernels another way (the direct call needs Triton >= 3.3)"
    return ""


def argument_key(value: Any) -> Any:
    """What of an argument's value Triton's specialization can depend on (a superset of it); None for a kind of
    value this key does not know (such a launch goes through the JIT)."""
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        return (value.dtype, value.data_ptr() % 16 == 0)
    if isinstance(value, bool):
        return ("bool", value)  # (a constexpr or an i1: both are keyed by value)
    if isinstance(value, int):
        return ("int", value == 1, value % 16 == 0, value in INT32, value < 2**63)
    if isinstance(value, float):
        return ("float",)
    if value is None:
        return ("none",)
    return None


class DirectLaunch:
    """Stands in for a module's @triton.jit kernel: `kernel[grid](*args, **kwargs)` in the module's launch() comes
    here. `first_launch(grid, args, kwargs)` launches through the JIT and returns the compiled kernel (the
    default: the JITFunction's own run); `stream()` gives the stream to launch on (default: Triton's driver's
    current stream). Should the compiled launcher refuse a call, every launch goes through the JIT from then on,
    and `on_fallback` is told why."""

    def __init__(self, fn: Any, first_launch: Callable | None = None, stream: Callable[[], Any] | None = None,
                 on_fallback: Callable[[str], None] = lambda why: None) -> None:
        self.fn = fn
        self.on_fallback = on_fallback  # told why, once, if the direct launch is given up
        self.names = [p.name for p in fn.params]
        self.constexpr = [p.is_constexpr for p in fn.params]
        signature = inspect.signature(fn.fn)
        self.defaults = {n: p.default for n, p in signature.parameters.items() if p.default is not inspect.Parameter.empty}
        self.compiled: dict[Any, Any] = {}
        self.failed = ""  # why the direct launch was given up, if it was
        self.jit_launches = 0  # launches that went through the JIT (a new specialization)
        self.direct_launches = 0
        self.first_launch = first_launch or (lambda grid, args, kwargs: fn.run(*args, grid=grid, warmup=False, **kwargs))
        if stream is None:
            from triton.runtime.driver import driver

            active = driver.active
            stream = lambda: active.get_current_stream(active.get_current_device())  # noqa: E731
        self.stream = stream
        from triton import knobs

        self.hooks = knobs.runtime

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.launch(grid, args, kwargs)

    def bind(self, args: tuple, kwargs: dict) -> tuple[list, dict] | None:
        """Every parameter's value in the kernel's order, and the launch options (num_warps, ...); None when the
        arguments do not bind (the JIT then says what is wrong)."""
        if len(args) > len(self.names):
            return None
        values = list(args)
        for name in self.names[len(args):]:
            if name in kwargs:
                values.append(kwargs[name])
            elif name in self.defaults:
                values.append(self.defaults[name])
            else:
                return None
        options = {k: v for k, v in kwargs.items() if k not in self.names}
        return values, options

    def key(self, values: list, options: dict) -> Any:
        parts = []
        for value, constexpr in zip(values, self.constexpr):
            part = ("constexpr", value) if constexpr else argument_key(value)
            if part is None:
                return None
            parts.append(part)
        try:
            key = (tuple(parts), tuple(sorted(options.items())))
            hash(key)
        except TypeError:  # an unhashable constexpr or option: no key, the JIT decides
            return None
        return key

    def launch(self, grid, args: tuple, kwargs: dict) -> Any:
        bound = self.bind(args, kwargs)
        key = self.key(*bound) if bound is not None else None
        kernel = self.compiled.get(key) if key is not None else None
        if kernel is None:
            self.jit_launches += 1
            kernel = self.first_launch(grid, args, kwargs)
            if key is not None and kernel is not None and hasattr(kernel, "run"):
                self.compiled[key] = kernel
            return kernel
        values, _ = bound
        if callable(grid):
            grid = grid(dict(zip(self.names, values)))
        stream = self.stream()
        grid_y = grid[1] if len(grid) > 1 else 1
        grid_z = grid[2] if len(grid) > 2 else 1
        try:
            kernel.run(grid[0], grid_y, grid_z, stream, kernel.function, kernel.packed_metadata,
                       kernel.launch_metadata(grid, stream, *values), self.hooks.launch_enter_hook,
                       self.hooks.launch_exit_hook, *values)
        except (TypeError, ValueError, AttributeError) as exc:
            # The compiled launcher refused the call before launching (this Triton calls it another way): the JIT
            # launches this and every later launch, and the run says why.
            self.failed = f"the direct launch failed ({type(exc).__name__}: {exc}); launched through Triton's JIT"
            self.compiled.clear()
            self.first_launch = self.jit_only(self.first_launch)
            self.on_fallback(self.failed)
            self.jit_launches += 1
            return self.first_launch(grid, args, kwargs)
        self.direct_launches += 1
        return kernel

    @staticmethod
    def jit_only(first_launch: Callable) -> Callable:
        """A first launch whose compiled kernel is not kept: every launch goes through the JIT."""
        return lambda grid, args, kwargs: (first_launch(grid, args, kwargs), None)[1]
