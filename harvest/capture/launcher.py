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

Where torch has it (torch >= 2.7, and Inductor's own kernels are launched by it: `use_static_cuda_launcher`), the
compiled kernel is launched by torch's static CUDA launcher, as Inductor launches its own: one C++ call with the
grid, the stream and the values of the parameters the kernel was not compiled with as constants. Otherwise, or
where that launcher refuses a kernel (launch hooks, scratch memory, a cooperative grid), Triton's compiled
launcher is called, and `static_why` says why.

Where the Triton here lacks what the direct call needs (Triton < 3.3: another launcher calling convention; the
interpreter: nothing is compiled), `direct_launch_unavailable()` says why, and the module's kernel is launched
through Triton's JIT as before.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
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


def static_launcher(kernel: Any) -> tuple[Callable[..., Any], tuple[int, ...]] | str:
    """torch's static CUDA launcher for a compiled Triton kernel, loaded on the current device: its run(grid_x,
    grid_y, grid_z, stream, *values) and the positions of the kernel's parameters whose values it takes (those the
    kernel was not compiled with as constants). Or why there is none here: Triton's compiled launcher then runs it."""
    import os
    import tempfile

    import torch
    import torch._inductor.config as inductor_config

    used = getattr(inductor_config, "use_static_triton_launcher", getattr(inductor_config, "use_static_cuda_launcher", None))
    if used is None:
        return f"torch {torch.__version__} has no static CUDA launcher"
    if not used:
        return "Inductor's static CUDA launcher is off here (TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER=0), as for its own kernels"
    try:
        from torch._inductor.runtime.static_triton_launcher import StaticallyLaunchedCudaKernel
    except ImportError:
        try:
            from torch._inductor.runtime.static_cuda_launcher import StaticallyLaunchedCudaKernel
        except ImportError:
            return f"torch {torch.__version__}'s static CUDA launcher is not importable"
    metadata = getattr(kernel, "metadata", None)
    if getattr(metadata, "launch_cooperative_grid", False) or getattr(metadata, "launch_pdl", False):
        return "the kernel is launched with launch attributes (a cooperative grid), which the static launcher does not set"
    cubin = (getattr(kernel, "asm", None) or {}).get("cubin")
    if not cubin:
        return "the compiled kernel has no cubin"
    handle, path = tempfile.mkstemp(suffix=".cubin", prefix="harvest-")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(cubin)
        kernel._cubin_path = path  # where the static launcher loads the binary from (Inductor sets it so too)
        static = StaticallyLaunchedCudaKernel(kernel)
        kept = static_positions(kernel, static)
        if isinstance(kept, str):
            return kept
        static.load_kernel(torch.cuda.current_device())
    except Exception as exc:  # NotImplementedError: launch hooks, scratch memory, num_ctas > 1, TMA descriptors
        message = next((line for line in str(exc).strip().splitlines() if line.strip()), type(exc).__name__)
        return f"torch's static CUDA launcher refused the kernel ({message})"
    finally:
        os.unlink(path)
    return static.run, kept


def static_positions(kernel: Any, static: Any) -> tuple[int, ...] | str:
    """The positions of the kernel's parameters whose values torch's static launcher takes (in the kernel's order):
    those of its signature that are neither constexprs nor compiled in as constants (a 1, a None); or why they do
    not match what the launcher was made for (its arg_tys, one type a value)."""
    names = list(kernel.src.fn.arg_names)

    def position(key: Any) -> int:
        return names.index(key) if isinstance(key, str) else key[0] if isinstance(key, tuple) else int(key)

    signature = {position(key): kind for key, kind in kernel.src.signature.items()}
    constants = {position(key) for key in getattr(kernel.src, "constants", {})} | set(getattr(static, "full_constexprs", ()))
    kept = tuple(i for i in sorted(signature) if signature[i] != "constexpr" and i not in constants)
    if len(kept) != len(static.arg_tys):
        return f"the static launcher takes {len(static.arg_tys)} values where the kernel's signature has {len(kept)}"
    return kept


def argument_key(value: Any) -> Any:
    """What of an argument's value Triton's specialization can depend on (a superset of it; a scalar's type
    included, so that no two kinds of value share a key); None for a kind of value this key does not know (such a
    launch goes through the JIT)."""
    kind = type(value)
    if kind is int:
        return (int, value == 1, value % 16 == 0, -(2**31) <= value < 2**31, value < 2**63)
    if kind is bool or kind is float:
        return (kind, value) if kind is bool else (float,)
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        return (value.dtype, value.data_ptr() % 16 == 0)
    if value is None:
        return (None,)
    return None


# argument_key's expression for each kind of value, for a keyer ({a}: the argument); another kind gives None
_KEY_TEXT: dict[Any, str] = {
    "tensor": "({a}.dtype, {a}.data_ptr() % 16 == 0)",
    int: "((int, {a} == 1, {a} % 16 == 0, -2147483648 <= {a} < 2147483648, {a} < 2**63) if type({a}) is int else None)",
    bool: "((bool, {a}) if type({a}) is bool else None)",
    float: "((float,) if type({a}) is float else None)",
    type(None): "((None,) if {a} is None else None)",
}


def made_keyer(args: tuple) -> Callable[..., tuple] | None:
    """A function of a call's arguments that returns what argument_key gives for each, written out for the kinds
    of value `args` holds (what a launch spends on its key); for another kind it raises or gives None there."""
    parts = []
    for index, value in enumerate(args):
        kind = type(value)
        if kind not in _KEY_TEXT and hasattr(value, "data_ptr") and hasattr(value, "dtype"):
            kind = "tensor"
        if kind not in _KEY_TEXT:
            return None
        parts.append(_KEY_TEXT[kind].format(a=f"a{index}"))
    names = ", ".join(f"a{i}" for i in range(len(args)))
    namespace: dict[str, Any] = {}
    exec(f"def keyer({names}):\n    return ({', '.join(parts)},)\n", namespace)  # noqa: S102 (harvest's own text)
    return namespace["keyer"]


def _condition(index: int, value: Any, namespace: dict[str, Any]) -> str | None:
    """What an argument must be to take the kernel compiled for `value` at this position (the same dtype and
    alignment; an integer Triton specializes alike: 1 or not, a multiple of 16 or not, in int32's range or not; the
    same bool): Python text of a{index}, its constants put in `namespace`."""
    a, kind = f"a{index}", type(value)
    if kind is bool:
        namespace[f"v{index}"] = value
        return f"type({a}) is bool and {a} == v{index}"
    if kind is int:
        if value == 1:
            return f"type({a}) is int and {a} == 1"
        if not -(2**31) <= value < 2**31:
            namespace[f"v{index}"] = value
            return f"type({a}) is int and {a} == v{index}"  # (a 64-bit integer: rare, taken only as it is)
        return (f"type({a}) is int and {a} != 1 and {a} % 16 {'==' if value % 16 == 0 else '!='} 0 "
                f"and -2147483648 <= {a} < 2147483648")
    if kind is float:
        return f"type({a}) is float"
    if value is None:
        return f"{a} is None"
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        namespace[f"d{index}"] = value.dtype
        aligned = "==" if value.data_ptr() % 16 == 0 else "!="
        return f"{a}.dtype is d{index} and {a}.data_ptr() % 16 {aligned} 0"
    return None


def made_fast_path(owner: Any, args: tuple, kwargs: dict, plan: Any, compiled: Compiled) -> Callable | None:
    """The launch of a compiled kernel for calls like this one (the same keywords and values, arguments of the same
    kinds and specialization), written out as Inductor writes its launchers: a few checks, then the static launcher
    (or Triton's compiled one). It returns False, launching nothing, for any other call; None when the call cannot be
    written so."""
    kernel = compiled.kernel
    namespace: dict[str, Any] = {"owner": owner, "expected": dict(kwargs), "kernel": kernel, "static_run": compiled.static_run,
                                 "function": kernel.function, "packed": kernel.packed_metadata, "hooks": owner.hooks}
    conditions = [_condition(i, v, namespace) for i, v in enumerate(args)]
    if None in conditions:
        return None
    given = tuple(kwargs.values())
    tail = []
    for number, (index, default) in enumerate(plan.after):
        namespace[f"c{number}"] = default if index is None else given[index]
        tail.append(f"c{number}")
    names = [f"a{i}" for i in range(len(args))]
    values = ", ".join(names + tail)
    if compiled.static_run is not None:  # torch's static launcher: the values of the parameters not compiled in
        kept = ", ".join((names + tail)[i] for i in compiled.kept)
        launch = f"""static_run(grid[0], grid_y, grid_z, stream{", " if kept else ""}{kept})
    except (TypeError, ValueError, AttributeError, AssertionError):  # refused before launching: the general way says why"""
    else:
        launch = f"""enter = hooks.launch_enter_hook
        metadata = kernel.launch_metadata(grid, stream, {values}) if enter is not None else None
        kernel.run(grid[0], grid_y, grid_z, stream, function, packed, metadata, enter, hooks.launch_exit_hook, {values})
    except (TypeError, ValueError, AttributeError):  # refused before launching: the general way says why"""
    text = f"""def fast(grid, args, kwargs):
    if len(args) != {len(args)} or callable(grid) or kwargs != expected:
        return False
    {", ".join(names)}{"," if len(names) == 1 else ""} = args
    try:
        if not ({" and ".join(conditions) or "True"}):
            return False
    except AttributeError:
        return False
    stream = owner.given_stream
    owner.given_stream = None
    if stream is None:
        stream = owner.stream()
    grid_y = grid[1] if len(grid) > 1 else 1
    grid_z = grid[2] if len(grid) > 2 else 1
    try:
        {launch}
        owner.given_stream = stream
        owner.fast = owner.launch_generally
        return False
    owner.direct_launches += 1
    return True
"""
    exec(text, namespace)  # noqa: S102 (harvest's own text)
    return namespace["fast"]


@dataclass(frozen=True)
class Compiled:
    """One specialization's compiled kernel and what launches it: torch's static launcher (its run, and the positions
    of the values it takes) or, where `static_run` is None, Triton's compiled launcher (kernel.run)."""

    kernel: Any
    static_run: Callable[..., Any] | None = None
    kept: tuple[int, ...] = ()


@dataclass(frozen=True)
class CallPlan:
    """How one shape of call (so many positional arguments, these keyword names) binds to the kernel's parameters:
    for each parameter after the positional ones, the keyword's position in the call or a default value."""

    after: tuple[tuple[int | None, Any], ...]  # (index into the call's keyword values, or None and the default)
    options: tuple[int, ...]  # the keyword values that are launch options (num_warps, ...), not parameters


class DirectLaunch:
    """Stands in for a module's @triton.jit kernel: `kernel[grid](*args, **kwargs)` in the module's launch() comes
    here. `first_launch(grid, args, kwargs)` launches through the JIT and returns the compiled kernel (the
    default: the JITFunction's own run); `stream()` gives the stream to launch on (default: Triton's driver's
    current stream), unless `given_stream` holds the one Inductor's wrapper passed for this launch. Should the
    compiled launcher refuse a call, every launch goes through the JIT from then on, and `on_fallback` is told why."""

    def __init__(self, fn: Any, first_launch: Callable | None = None, stream: Callable[[], Any] | None = None,
                 on_fallback: Callable[[str], None] = lambda why: None,
                 static: Callable[[Any], tuple[Callable[..., Any], tuple[int, ...]] | str] = static_launcher,
                 on_static_refused: Callable[[str], None] = lambda why: None) -> None:
        self.fn = fn
        self.on_fallback = on_fallback  # told why, once, if the direct launch is given up
        self.static = static  # a compiled kernel's static launcher, or why there is none (static_launcher)
        self.static_why: str | None = None  # None: nothing compiled yet; "": launched statically; else why not
        self.on_static_refused = on_static_refused  # told why, once, if the static launcher refuses a launch
        self.names = [p.name for p in fn.params]
        self.constexpr = [p.is_constexpr for p in fn.params]
        signature = inspect.signature(fn.fn)
        self.defaults = {n: p.default for n, p in signature.parameters.items() if p.default is not inspect.Parameter.empty}
        self.plans: dict[tuple, CallPlan | None] = {}
        self.keyers: dict[tuple, Callable[..., tuple] | None] = {}  # per shape of call: its arguments' keys, written out
        self.compiled: dict[Any, Compiled] = {}
        self.failed = ""  # why the direct launch was given up, if it was
        self.given_stream: Any = None
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
        return lambda *args, **kwargs: self.fast(grid, args, kwargs) or self.launch(grid, args, kwargs)

    @staticmethod
    def launch_generally(grid, args: tuple, kwargs: dict) -> bool:
        """No launch written out (yet): every launch goes the general way."""
        return False

    fast = launch_generally  # the first specialization's launch, written out once it is compiled (made_fast_path):
    # True when it launched; False sends the launch the general way
    fast_grid: tuple | None = None  # the grid of the launch `fast` was written for (a tuple grid's)
    fast_args: tuple = ()  # and its positional arguments

    def plan(self, count: int, keywords: tuple[str, ...]) -> CallPlan | None:
        """How a call with `count` positional arguments and these keywords binds, or None when it does not (the JIT
        then says what is wrong); made once per shape of call."""
        key = (count, keywords)
        if key not in self.plans:
            after: list[tuple[int | None, Any]] = []
            for name in self.names[count:]:
                if name in keywords:
                    after.append((keywords.index(name), None))
                elif name in self.defaults:
                    after.append((None, self.defaults[name]))
                else:
                    after = None  # type: ignore[assignment]
                    break
            bindable = after is not None and count <= len(self.names)
            self.plans[key] = CallPlan(tuple(after), tuple(i for i, k in enumerate(keywords) if k not in self.names)
                                       ) if bindable else None
        return self.plans[key]

    def bind(self, args: tuple, kwargs: dict) -> tuple[list, dict] | None:
        """Every parameter's value in the kernel's order, and the launch options (num_warps, ...); None when the
        arguments do not bind (the JIT then says what is wrong)."""
        plan = self.plan(len(args), tuple(kwargs))
        if plan is None:
            return None
        given = tuple(kwargs.values())
        values = [*args, *(default if index is None else given[index] for index, default in plan.after)]
        keys = tuple(kwargs)
        return values, {keys[i]: given[i] for i in plan.options}

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
        shape = (len(args), tuple(kwargs))
        plan = self.plans[shape] if shape in self.plans else self.plan(*shape)
        kernel = key = None
        if plan is not None and not any(self.constexpr[: len(args)]):
            # The key: what each positional argument's value specializes (module launches pass the kernel's run-time
            # arguments so), and the keyword values as they are (CONFIG: constexprs and options).
            given = tuple(kwargs.values())
            keyer = self.keyers.get(shape)
            try:
                parts = keyer(*args) if keyer is not None else tuple(map(argument_key, args))
            except (TypeError, AttributeError):  # not the kinds of value the keyer was written for
                parts = tuple(map(argument_key, args))
            key = (parts, given) if None not in parts else None
            try:
                kernel = self.compiled.get(key) if key is not None else None
            except TypeError:  # an unhashable keyword value: the JIT decides
                key = None
        if kernel is None:
            self.jit_launches += 1
            kernel = self.first_launch(grid, args, kwargs)
            if key is not None and kernel is not None and hasattr(kernel, "run"):
                compiled = self.compiled[key] = self.launched_by(kernel)
                if shape not in self.keyers:
                    self.keyers[shape] = made_keyer(args)
                if len(self.compiled) == 1 and (fast := made_fast_path(self, args, kwargs, plan, compiled)) is not None:
                    self.fast, self.fast_grid, self.fast_args = fast, grid if type(grid) is tuple else None, args
            return kernel
        compiled, kernel = kernel, kernel.kernel
        values = (*args, *(default if index is None else given[index] for index, default in plan.after))
        if callable(grid):
            grid = grid(dict(zip(self.names, values)))
        stream, self.given_stream = (self.given_stream if self.given_stream is not None else self.stream()), None
        grid_y = grid[1] if len(grid) > 1 else 1
        grid_z = grid[2] if len(grid) > 2 else 1
        if compiled.static_run is not None:
            try:
                compiled.static_run(grid[0], grid_y, grid_z, stream, *(values[i] for i in compiled.kept))
                self.direct_launches += 1
                return kernel
            except (TypeError, ValueError, AttributeError, AssertionError) as exc:  # refused before launching
                self.static_why = f"torch's static CUDA launcher refused a launch ({type(exc).__name__}: {exc})"
                self.compiled = {k: Compiled(c.kernel) for k, c in self.compiled.items()}
                self.fast = self.launch_generally
                self.on_static_refused(self.static_why)
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

    def launched_by(self, kernel: Any) -> Compiled:
        """What launches a newly compiled kernel: torch's static launcher where it takes the kernel, else Triton's
        compiled launcher (static_why says why; a launcher once refused is not tried again)."""
        if self.static_why:  # refused once: not tried again
            return Compiled(kernel)
        found = self.static(kernel)
        if isinstance(found, str):
            self.static_why = found
            return Compiled(kernel)
        self.static_why = ""
        return Compiled(kernel, *found)

    @staticmethod
    def jit_only(first_launch: Callable) -> Callable:
        """A first launch whose compiled kernel is not kept: every launch goes through the JIT."""
        return lambda grid, args, kwargs: (first_launch(grid, args, kwargs), None)[1]
