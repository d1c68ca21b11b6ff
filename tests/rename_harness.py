"""The renamer's fuzz harness: random torch programs -> torch.compile -> every Triton kernel, Inductor's names vs
ours, bitwise. Used by tests/test_rename.py, tests/test_rename_property.py and the long run:

    TRITON_INTERPRET=1 python scripts/rename_fuzz.py --programs 1000 [--seed 0]

`compare_kernel` runs one kernel under both names on the same inputs; `make_program` and `check_program` make and
check a random program.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

import torch  # noqa: E402

from harvest.dtypes import TRITON_DTYPES  # noqa: E402
from harvest.imports import import_file
from harvest.model import Graph, Kernel, Launch  # noqa: E402
from harvest.rename import build_context, kernel_names, rename_kernel  # noqa: E402

_TORCH_DTYPES = {kind: getattr(torch, name) for kind, name in TRITON_DTYPES.items() if hasattr(torch, name)}
_counter = itertools.count()


# ---------------------------------------------------------------------------------------------------------------------
# Running one kernel twice


def load_module(source: str, directory: Path, stem: str) -> Any:
    """Import `source` from a file (triton reads kernels back with inspect.getsource)."""
    path = directory / f"{stem}_{next(_counter)}.py"
    path.write_text(source, encoding="utf-8")
    return import_file(path, path.stem)


def scalar_value(expr: str, value: int | None, graph: Graph) -> int | float:
    """A launch's scalar argument: a literal, a size symbol from get_args, an expression of them, or `.item()`."""
    if value is not None:
        return value
    if expr.endswith(".item()"):
        return 0.375  # a tensor's scalar (dynamic shapes fixture: a float64 0-d input)
    env = {k: v for k, v in graph.scalar_values.items()}
    return eval(expr, {"__builtins__": {}}, env)  # noqa: S307 (Inductor's own arithmetic on size symbols)


def _storage_needed(graph: Graph, buffer: str | None) -> int:
    """Elements a buffer's storage spans, from the wrapper's shapes and strides (0 when unknown)."""
    buf = graph.buffers.get(buffer or "")
    if buf is None:
        return 0
    env = dict(graph.scalar_values)
    try:
        sizes = [int(eval(str(s), {"__builtins__": {}}, env)) for s in buf.meta.shape]  # noqa: S307
        strides = [int(eval(str(s), {"__builtins__": {}}, env)) for s in buf.meta.stride]  # noqa: S307
        offset = int(eval(str(buf.offset), {"__builtins__": {}}, env))  # noqa: S307
    except Exception:
        return 0
    span = 1 + sum((n - 1) * st for n, st in zip(sizes, strides)) + offset
    return max(span, 1) + _storage_needed(graph, buf.base)


def make_args(kernel: Kernel, launch: Launch, graph: Graph, seed: int) -> dict[str, Any]:
    """Inputs for one launch: a random tensor per pointer (big enough for every index), the launch's scalars."""
    gen = torch.Generator().manual_seed(seed)
    scalars = {a.param: scalar_value(a.expr, a.value, graph) for a in launch.args
               if not kernel.signature.get(a.param, "").startswith("*")}
    bound = math.prod(int(v) for p, v in scalars.items() if p.endswith("numel")) or 1
    args: dict[str, Any] = {}
    for arg in launch.args:
        sig = kernel.signature.get(arg.param, "")
        if not sig.startswith("*"):
            args[arg.param] = scalars[arg.param]
            continue
        dtype = _TORCH_DTYPES[sig[1:]]
        numel = max(bound, _storage_needed(graph, arg.buffer))
        if dtype.is_floating_point:
            args[arg.param] = torch.randn(numel, generator=gen, dtype=torch.float32).to(dtype)
        elif dtype == torch.bool:
            args[arg.param] = torch.randint(0, 2, (numel,), generator=gen).bool()
        else:
            args[arg.param] = torch.randint(0, 8, (numel,), generator=gen).to(dtype)
    return args


def _grid(kernel: Kernel, args: dict[str, Any], blocks: dict[str, int]) -> tuple[int, ...]:
    grid = [math.ceil(int(args.get("xnumel", 1)) / blocks.get("XBLOCK", 1))]
    if "ynumel" in args or kernel.inductor_meta.get("grid_type") in ("Grid2D", "Grid3D"):
        grid.append(math.ceil(int(args.get("ynumel", 1)) / blocks.get("YBLOCK", 1)))
    if "znumel" in args:
        grid.append(math.ceil(int(args.get("znumel", 1)) / blocks.get("ZBLOCK", 1)))
    return tuple(grid)


def _bits(t: torch.Tensor) -> torch.Tensor:
    if t.dtype == torch.bool or not t.dtype.is_floating_point:
        return t
    return t.view({1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


@dataclass
class KernelCheck:
    kernel: str
    renamed: str
    ok: bool  # bitwise identical outputs (and the rename reported ok)
    message: str = ""
    configs: int = 0


def compare_kernel(kernel: Kernel, launch: Launch, graph: Graph, directory: Path, new_name: str = "",
                   all_configs: bool = False, seed: int = 0,
                   tamper: Callable[[str], str] | None = None) -> KernelCheck:
    """Run Inductor's kernel and the renamed one on the same inputs and configs; outputs must be bit-identical."""
    from harvest.capture.inprocess import prepare_cpu_triton
    from harvest.interpret_shim import install

    prepare_cpu_triton()
    install()
    result = rename_kernel(kernel.source, build_context(kernel, launch, graph, new_name))
    if not result.ok:
        return KernelCheck(kernel.name, result.kernel_name, False, "; ".join(result.warnings))
    inductor = getattr(load_module(kernel.source, directory, kernel.name), kernel.name)
    code = tamper(result.code) if tamper else result.code  # tests prove a changed kernel is caught
    renamed = getattr(load_module(code, directory, result.kernel_name), result.kernel_name)
    new_param = dict(result.params)
    dropped = {d.param for d in result.dropped_params}  # sizes the renamed def fixes in its body: not passed
    constants = {k: v for k, v in inductor.triton_meta.get("constants", {}).items() if isinstance(k, str)}
    configs = inductor.configs if all_configs else inductor.configs[:1]
    for config in configs:
        base = make_args(kernel, launch, graph, seed)
        # A constant Inductor still passes positionally (xnumel = 1) is one of the launch's arguments already.
        blocks = {k: v for k, v in {**config.kwargs, **constants}.items() if k not in base}
        first = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in base.items()}
        second = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in base.items()}
        grid = _grid(kernel, base, blocks)
        inductor.fn[grid](**first, **blocks)
        renamed[grid](**{new_param.get(k, k): v for k, v in second.items() if k not in dropped},
                      **{new_param.get(k, k): v for k, v in blocks.items()})
        for param, value in first.items():
            if isinstance(value, torch.Tensor) and not torch.equal(_bits(value), _bits(second[param])):
                diff = (_bits(value) != _bits(second[param])).sum().item()
                return KernelCheck(kernel.name, result.kernel_name, False,
                                   f"{param} differs in {diff} elements with config {config.kwargs}", len(configs))
    return KernelCheck(kernel.name, result.kernel_name, True, "", len(configs))


def check_graph(graph: Graph, directory: Path, all_configs: bool = False) -> list[KernelCheck]:
    """compare_kernel for every Triton kernel of a graph that is launched (first launch of each)."""
    names = kernel_names(graph)
    checks = []
    for kernel in graph.kernels:
        launches = graph.launches_of(kernel.name)
        if not launches or kernel.standalone_reason:
            continue
        checks.append(compare_kernel(kernel, launches[0], graph, directory, names[kernel.name], all_configs))
    return checks


# ---------------------------------------------------------------------------------------------------------------------
# Random programs

SHAPES = ((8,), (33,), (4, 8), (3, 5), (2, 16), (5, 1), (2, 3, 4))
DTYPES = (torch.float32, torch.float16, torch.bfloat16)
UNARY = {
    "exp": "torch.exp(torch.clamp({a}, -5, 5))", "log": "torch.log(torch.abs({a}) + 1)", "abs": "torch.abs({a})",
    "sqrt": "torch.sqrt(torch.abs({a}))", "rsqrt": "torch.rsqrt(torch.abs({a}) + 1)", "tanh": "torch.tanh({a})",
    "sigmoid": "torch.sigmoid({a})", "relu": "torch.relu({a})", "gelu": "torch.nn.functional.gelu({a})",
    "pow": "torch.pow({a}, 2)", "neg": "-{a}",
}
BINARY = {
    "add": "{a} + {b}", "mul": "{a} * {b}", "sub": "{a} - {b}", "div": "{a} / (torch.abs({b}) + 1)",
    "maximum": "torch.maximum({a}, {b})", "minimum": "torch.minimum({a}, {b})",
    "where": "torch.where({a} > 0, {a}, {b})",
}
REDUCE = {
    "sum": "torch.sum({a}, dim={d}, keepdim=True)", "amax": "torch.amax({a}, dim={d}, keepdim=True)",
    "mean": "torch.mean({a}, dim={d}, keepdim=True)", "var": "torch.var({a}, dim={d}, correction=0, keepdim=True)",
    "softmax": "torch.softmax({a}, dim={d})",
}
CASTS = ("torch.float16", "torch.bfloat16", "torch.float32", "torch.int32")


@dataclass
class Program:
    source: str  # `def program(x0, ...)` in plain torch
    shapes: tuple[tuple[int, ...], ...]
    dtype: torch.dtype
    ops: list[str] = field(default_factory=list)
    precision: torch.dtype = torch.float32  # the least precise float the program passes through (tolerances)

    def function(self) -> Callable[..., torch.Tensor]:
        namespace: dict[str, Any] = {"torch": torch}
        exec(compile(self.source, "<program>", "exec"), namespace)  # noqa: S102 (our own generated source)
        return namespace["program"]  # type: ignore[no-any-return]

    def inputs(self, seed: int = 0) -> list[torch.Tensor]:
        gen = torch.Generator().manual_seed(seed)
        return [torch.randn(s, generator=gen).to(self.dtype) for s in self.shapes]


def make_program(choose: Callable[[Sequence[Any]], Any], steps: int) -> Program:
    """A random program; `choose(options)` picks one (hypothesis' data.draw or random.choice)."""
    shape = choose(SHAPES)
    dtype = choose(DTYPES)
    rank = len(shape)
    shapes = [shape]
    for _ in range(choose((0, 1, 2))):  # extra inputs: full shape or a broadcast along one axis
        kind = choose(("full", "last", "first"))
        shapes.append(shape if kind == "full" or rank == 1 else
                      tuple(n if i == rank - 1 else 1 for i, n in enumerate(shape)) if kind == "last" else
                      tuple(n if i == 0 else 1 for i, n in enumerate(shape)))
    values = [f"x{i}" for i in range(len(shapes))]
    lines: list[str] = []
    ops: list[str] = []
    precision = dtype
    for step in range(steps):
        group = choose(("unary", "binary", "binary", "reduce", "cast"))
        a = choose(values)
        if group == "unary":
            op = choose(sorted(UNARY))
            expr = UNARY[op].format(a=a)
        elif group == "binary":
            op = choose(sorted(BINARY))
            expr = BINARY[op].format(a=a, b=choose(values))
        elif group == "reduce":
            op = choose(sorted(REDUCE))
            expr = REDUCE[op].format(a=a, d=choose(tuple(range(-1, -rank - 1, -1))))
        else:
            target = choose(CASTS)
            op = f"cast:{target.split('.')[-1]}"
            if target == "torch.int32":
                # truncation only of inputs: a computed value may sit a rounding away from an integer in eager
                a = choose([v for v in values if v.startswith("x")])
                expr = f"({a} * 4).to(torch.int32).to({dtype})"
            else:
                expr = f"{a}.to({target}).to({dtype})"
                # Inductor may keep the wider type through a down-and-up cast, so compare at the narrow one's tolerance
                precision = max(precision, getattr(torch, target.split(".")[-1]), key=_PRECISION_ORDER.index)
        ops.append(op)
        lines.append(f"    v{step} = {expr}")
        values.append(f"v{step}")
    outputs = [values[-1]] + ([values[-2]] if len(values) > 2 and choose((False, True)) else [])
    params = ", ".join(f"x{i}" for i in range(len(shapes)))
    source = f"def program({params}):\n" + "\n".join(lines) + f"\n    return {', '.join(outputs)}\n"
    return Program(source, tuple(shapes), dtype, ops, precision)


_PRECISION_ORDER = [torch.float32, torch.float16, torch.bfloat16]
TOLERANCES = {torch.float32: (1e-4, 1e-5), torch.float16: (2e-2, 2e-2), torch.bfloat16: (8e-2, 8e-2)}


@dataclass
class ProgramCheck:
    kernels: list[KernelCheck]
    eager_ok: bool
    eager_message: str = ""


def check_program(program: Program, directory: Path) -> ProgramCheck:
    """Compile, capture, compare every kernel bitwise, and the compiled result with eager."""
    from harvest.capture.inprocess import capturing
    from harvest.parse import parse_output_code

    fn = program.function()
    inputs = program.inputs()
    expected = fn(*inputs)
    with capturing() as sources:
        actual = torch.compile(fn)(*inputs)
    eager_ok, message = True, ""
    rtol, atol = TOLERANCES[program.precision]
    try:
        torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    except AssertionError as exc:
        eager_ok, message = False, str(exc).splitlines()[0]
    checks: list[KernelCheck] = []
    for i, source in enumerate(sources):
        checks += check_graph(parse_output_code(source, name=f"g{i}"), directory)
    return ProgramCheck(checks, eager_ok, message)
