"""The arguments of a standalone module's launch, planned: each a view of one of the storages, or a scalar.

Pure: `plan_arguments(...) -> ArgumentPlan`, from the run's record when there is one, else from the wrapper's text.
The kernel's parameters as launch() passes them (`runtime_params`) live here too: the config and the grid read them.
Read from `launched_kernel(kernel, dropped)`, they leave out the sizes the rename stage took out of the def
(RenameResult.dropped_params): neither launch() nor ARGUMENTS has them.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass

from harvest.dtypes import ITEMSIZE, triton_pointer_dtype
from harvest.errors import HarvestError
from harvest.kernel_facts import kernel_facts
from harvest.model import Graph, Kernel, Launch, LaunchArg, RecordedLaunch, TensorMeta
from harvest.rename import DroppedParam
from harvest.shapes import evaluate
from harvest.syntax import kernel_trees


class RenderError(HarvestError):
    """A kernel that cannot be rendered as a standalone module (the reason goes into the manifest)."""


@dataclass(frozen=True)
class Argument:
    """One launch argument as the generated module builds it: a view of one of the storages, or a scalar."""

    param: str  # name in the module
    inductor_param: str
    storage: int | None = None
    shape: tuple[int, ...] = ()
    stride: tuple[int, ...] = ()
    offset: int = 0
    dtype: str = ""  # "torch.float32"
    value: int | float | bool | None = None
    note: str = ""  # why a scalar's value is a stand-in

    @property
    def is_tensor(self) -> bool:
        return self.storage is not None


@dataclass(frozen=True)
class Storage:
    """The bytes [lo, hi) of one storage the arguments view, and how made-up inputs fill it."""

    lo: int
    hi: int
    fill: str | None  # "torch.float32": the dtype of its first view the kernel reads; None: only written (zeros)
    high: int | None  # index tensors: the bound Inductor asserts indices stay below; a Welford weight: counts below it
    views: tuple[str, ...]  # the module's parameters that view it


@dataclass(frozen=True)
class ArgumentPlan:
    arguments: tuple[Argument, ...]
    storages: tuple[Storage, ...]


@dataclass(frozen=True)
class Layout:
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int


def def_constexprs(kernel: Kernel) -> set[str]:
    """Parameters the kernel's def annotates `tl.constexpr` (block sizes): the only ones not passed positionally."""
    try:
        function = kernel_facts(kernel.source).named(kernel.name)
    except SyntaxError:
        function = None
    if function is None:
        return {p for p, kind in kernel.signature.items() if kind == "constexpr"}
    return set(function.constexprs)


# The signature kind launched_kernel gives a size parameter the body fixes: in Inductor's def, not in launch().
FIXED_IN_BODY = "fixed in the body"


def launched_kernel(kernel: Kernel, dropped: Iterable[DroppedParam]) -> Kernel:
    """`kernel` as the module launches it: the size parameters the rename stage took out of the def (their values
    are set in the body: RenameResult.dropped_params) keep their place in the signature, as kind FIXED_IN_BODY.

    runtime_params leaves them out, and with it plan_arguments, the grid and do_not_specialize; the grid writes such a
    size as its value (module_plan.build_grid). They keep their place so that Inductor's configs, which name
    parameters by their index in its def, still name the right ones."""
    gone = {d.param for d in dropped} & set(kernel.signature)
    if not gone:
        return kernel
    signature = {p: FIXED_IN_BODY if p in gone else kind for p, kind in kernel.signature.items()}
    return dataclasses.replace(kernel, signature=signature)


def runtime_params(kernel: Kernel) -> list[str]:
    """Parameters launch() passes positionally, as Inductor does: all but the def's constexpr block sizes (a size
    Inductor made a compile-time constant, like `xnumel = 1`, is an ordinary argument of Inductor's def) and, in a
    launched_kernel, the sizes the body fixes."""
    constexprs = def_constexprs(kernel)
    return [p for p, kind in kernel.signature.items() if p not in constexprs and kind != FIXED_IN_BODY]


def index_bounds(kernel_source: str) -> int | None:
    """Smallest upper bound of Inductor's indirect-indexing asserts ("index out of bounds: 0 <= tmp6 < 1000"),
    read from the assert messages in Inductor's kernel source."""
    bounds = [int(b) for b in re.findall(r"index out of bounds: 0 <= \w+ < (\d+)", kernel_source)]
    return min(bounds) if bounds else None


# Made-up values for a Welford combine's weights (each chunk's count): whole numbers in [1, this).
WELFORD_COUNT_HIGH = 8
# Triton helpers that combine Welford partials, and the positions of their weight arguments.
_WELFORD_WEIGHTS = {"welford": (2,), "welford_combine": (2, 5)}


def welford_weight_params(kernel_source: str) -> set[str]:
    """Parameters whose values go into a Welford combine as weights (a split Welford's second stage reads each
    chunk's count): made-up values for them must be counts >= 1, or the combine divides by zero."""
    tree = kernel_trees(kernel_source).ast  # (parsed once per extraction: harvest.syntax)
    if tree is None:
        return set()
    assigns = {node.targets[0].id: node.value for node in ast.walk(tree)
               if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _WELFORD_WEIGHTS:
            for position in _WELFORD_WEIGHTS[node.func.attr]:
                if position < len(node.args) and (param := _loaded_from(node.args[position], assigns)):
                    found.add(param)
    return found


def _loaded_from(expr: ast.expr, assigns: dict[str, ast.expr]) -> str | None:
    """The pointer parameter a value was loaded from, through broadcasts, masks (tl.where's value), casts and
    subscripts; None when it was computed."""
    for _ in range(64):  # (a chain of assignments, never a cycle in straight-line kernel code)
        if isinstance(expr, ast.Name):
            if expr.id not in assigns:
                return None
            expr = assigns[expr.id]
        elif isinstance(expr, ast.Subscript):
            expr = expr.value
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.args:
            if expr.func.attr == "load":
                pointer = expr.args[0]
                while isinstance(pointer, ast.BinOp):
                    pointer = pointer.left
                return pointer.id if isinstance(pointer, ast.Name) else None
            if expr.func.attr == "where" and len(expr.args) == 3:
                expr = expr.args[1]
            elif expr.func.attr in ("broadcast_to", "reshape", "view", "to"):
                expr = expr.args[0]
            else:
                return None
        else:
            return None
    return None


def plan_arguments(kernel: Kernel, launch: Launch, graph: Graph, recorded: RecordedLaunch | None,
                   rename: dict[str, str], write_only: tuple[str, ...]) -> ArgumentPlan:
    """Every runtime parameter's argument (named as in the module) and the storages the tensors view."""
    if recorded is not None:
        arguments = _recorded_arguments(kernel, recorded, rename)
        spans = [(s.lo, s.hi) for s in recorded.storages]
    else:
        arguments, spans = _static_arguments(kernel, launch, graph, rename)
    high = index_bounds(kernel.source)
    counts = welford_weight_params(kernel.source)
    storages = []
    for index, (lo, hi) in enumerate(spans):
        views = [a for a in arguments if a.storage == index]
        read = [a for a in views if a.inductor_param not in write_only]
        fill = read[0].dtype if read else None
        bound = high if fill is not None and fill.startswith("torch.int") else None
        if fill is not None and fill.startswith(("torch.float", "torch.bfloat")) and read[0].inductor_param in counts:
            bound = WELFORD_COUNT_HIGH
        storages.append(Storage(lo, hi, fill, bound, tuple(a.param for a in views)))
    return ArgumentPlan(tuple(arguments), tuple(storages))


def _recorded_arguments(kernel: Kernel, recorded: RecordedLaunch, rename: dict[str, str]) -> list[Argument]:
    arguments = []
    for param in runtime_params(kernel):
        new = rename.get(param, param)
        arg = recorded.arg(param)
        if arg is None:
            raise RenderError(f"the recorded launch of {kernel.name} has no argument {param}")
        if arg.view is not None:
            v = arg.view
            arguments.append(Argument(new, param, v.storage, v.shape, v.stride, v.offset, "torch." + v.dtype))
        elif arg.value is None:
            raise RenderError(f"the recorded launch passed {param} an object harvest cannot write down")
        else:
            kind = kernel.signature.get(param, "")
            value = float(arg.value) if kind.startswith("fp") else arg.value
            arguments.append(Argument(new, param, value=value))
    return arguments


def _static_arguments(kernel: Kernel, launch: Launch, graph: Graph,
                      rename: dict[str, str]) -> tuple[list[Argument], list[tuple[int, int]]]:
    """Layouts read from the wrapper's text (artifacts without a run): one storage per distinct buffer."""
    hints = dict(graph.scalar_values)
    bound = {arg.param: arg for arg in launch.args}
    storages: list[tuple[int, int]] = []
    storage_of: dict[str, int] = {}
    arguments = []
    for param in runtime_params(kernel):
        kind = kernel.signature[param]
        new = rename.get(param, param)
        arg: LaunchArg | None = bound.get(param)
        if arg is None:
            raise RenderError(f"launch of {kernel.name} binds no value to parameter {param}")
        if kind.startswith("*"):
            name = triton_pointer_dtype(kind)
            dtype = f"torch.{name}" if name else None
            if dtype is None:
                raise RenderError(f"pointer type {kind} of {param} has no torch dtype")
            layout = tensor_layout(arg, graph, hints)
            if layout is None:
                raise RenderError(f"no concrete shape/stride for {param} = {arg.expr} in the wrapper's text (no run was recorded)")
            lo, hi = _extent_bytes(layout.shape, layout.stride, layout.offset, ITEMSIZE.get(dtype.removeprefix('torch.'), 4))
            base = arg.buffer or arg.expr
            if base not in storage_of:
                storage_of[base] = len(storages)
                storages.append((lo, hi))
            index = storage_of[base]
            storages[index] = (min(storages[index][0], lo), max(storages[index][1], hi))
            arguments.append(Argument(new, param, index, layout.shape, layout.stride, layout.offset, dtype))
        else:
            value = arg.value if arg.value is not None else evaluate(arg.expr, hints)
            note = ""
            if value is None and arg.item_of is not None:
                value = 0.5 if kind.startswith("fp") else 1
                note = f"the value of {arg.expr} is known only at run time; {value} stands in"
            if value is None:
                raise RenderError(f"no concrete value for {param} = {arg.expr} in the wrapper's text (no run was recorded)")
            if kind.startswith("fp"):
                value = float(value)
            arguments.append(Argument(new, param, value=value, note=note))
    return arguments, storages


def _extent_bytes(shape: tuple[int, ...], stride: tuple[int, ...], offset: int, itemsize: int) -> tuple[int, int]:
    if any(size == 0 for size in shape):
        return offset * itemsize, offset * itemsize
    extent = 1 + sum((size - 1) * abs(step) for size, step in zip(shape, stride))
    return offset * itemsize, (offset + extent) * itemsize


def tensor_layout(arg: LaunchArg, graph: Graph, hints: dict) -> Layout | None:
    if arg.view is not None:  # `reinterpret_tensor(buf4, shape, stride, offset)` at the launch
        return _sizes_layout(arg.view.shape, arg.view.stride, arg.view.offset, hints)
    name = arg.buffer or arg.expr
    buffer = graph.buffers.get(name)
    if buffer is None:
        return None
    return _meta_layout(buffer.meta, hints, buffer.offset)


def _meta_layout(meta: TensorMeta, hints: dict, offset: int | str = 0) -> Layout | None:
    return _sizes_layout(meta.shape, meta.stride, offset, hints)


def _sizes_layout(shape_sizes: tuple[int | str, ...], stride_sizes: tuple[int | str, ...], offset: int | str,
                  hints: dict) -> Layout | None:
    """Concrete sizes for a shape, stride and offset written with size symbols; None when one is unknown."""
    shape = [evaluate(str(s), hints) for s in shape_sizes]
    stride = [evaluate(str(s), hints) for s in stride_sizes]
    off = evaluate(str(offset), hints)
    if any(v is None for v in shape + stride) or off is None:
        return None
    return Layout(tuple(int(v) for v in shape), tuple(int(v) for v in stride), int(off))  # type: ignore[arg-type]
