"""What the twin reads from an extracted kernel module (through harvest.module.file: the kernel, its launch grid and
argument dtypes, never imported), and the twin's C++ types of Triton's dtypes."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from harvest.dtypes import TL_DTYPES, TRITON_POINTEE
from harvest.kernel_facts import kernel_facts
from harvest.module.file import ModuleFileError, TensorArg, read_module_file
from harvest.shapes import evaluate_node
from harvest.syntax import dotted, is_constexpr_annotation
from harvest.twin.cooperative import as_row_reduction, is_cooperative
from harvest.twin.no_twin import NoTwin
from harvest.twin.split_scan import as_row_scan, is_split_scan

# The twin's dtypes are Triton's names (harvest.dtypes.POINTER_DTYPES) -> (C++ type, bytes). "int"/"float" are
# untyped Python literals. Triton's fp8 types have no C++ type here: a kernel that uses them gets no twin.
CTYPES = {
    "i1": ("bool", 1), "i8": ("int8_t", 1), "i16": ("int16_t", 2), "i32": ("int32_t", 4), "i64": ("int64_t", 8),
    "u8": ("uint8_t", 1), "u16": ("uint16_t", 2), "u32": ("uint32_t", 4), "u64": ("uint64_t", 8),
    "fp16": ("__half", 2), "bf16": ("__nv_bfloat16", 2), "fp32": ("float", 4), "fp64": ("double", 8),
}  # fmt: skip

# torch name ("float32") -> the twin's dtype ("fp32"), for the dtypes the twin has a C++ type for
TWIN_DTYPE_OF_TORCH = {torch: triton for torch, triton in TRITON_POINTEE.items() if triton in CTYPES}
# `tl.` name ("float32", "int1") -> the twin's dtype
TWIN_DTYPE_OF_TL = {tl: TWIN_DTYPE_OF_TORCH[torch] for tl, torch in TL_DTYPES.items() if torch in TWIN_DTYPE_OF_TORCH}


# The calls through which a kernel writes memory that the twin translates.
WRITES = ("tl.store", "tl.atomic_add", "tl.atomic_max", "tl.atomic_min")

FLOATS = ("fp16", "bf16", "fp32", "fp64")
HALVES = ("fp16", "bf16")


@dataclass(frozen=True)
class ModuleFacts:
    """What the twin needs from an extracted kernel module."""

    name: str
    params: tuple[str, ...]  # runtime parameters in order (the def's, minus its tl.constexpr ones)
    constexprs: dict[str, int]  # CONFIG's block sizes and the body's `X: tl.constexpr = n`
    body: tuple[ast.stmt, ...]
    arg_dtypes: dict[str, str]  # pointer -> element dtype; scalar -> i32/i64/fp32
    grid: tuple[ast.expr | None, ...]  # per program axis: its numel (an expression in the launch parameters)
    stored: frozenset[str]  # pointers the kernel writes
    pointer_params: frozenset[str]  # parameters that are tensors
    counted_axes: frozenset[int] = frozenset()  # axes whose grid element is the run's count of programs, not a numel
    split_rows: bool = False  # a cooperative reduction or a split scan: the twin may split each row over several blocks
    combine_helpers: dict[str, ast.FunctionDef] = field(default_factory=dict)  # a scan's combine function, by name


@dataclass(frozen=True)
class TwinSource:
    """A translated kernel: the .cu text, the C++ launcher load_inline compiles with it, and a summary."""

    kernel_name: str
    cuda: str
    launcher: str
    declaration: str
    params: tuple[str, ...]
    shape: str  # "pointwise" or "reduction"
    notes: tuple[str, ...]


def read_module(text: str, label: str = "the module") -> ModuleFacts:
    """The kernel and its launch facts from an extracted module's text."""
    try:
        module = read_module_file(text, label)
    except ModuleFileError as exc:
        raise NoTwin(f"the module is not one harvest can read ({exc.detail})") from exc
    kernel = module.kernel
    constexprs = {k: v for k, v in module.constexpr_config.items() if isinstance(v, int)}
    params = module.runtime_params
    statements, launch_grid = list(kernel.body), module.grid
    split_rows = True  # a kernel whose rows Inductor split over programs: the twin splits them again, its way
    if is_cooperative(module.constexprs, launch_grid):
        statements, launch_grid = as_row_reduction(statements, launch_grid)
    elif is_split_scan(statements):
        statements, launch_grid = as_row_scan(statements, launch_grid, module.params)
    else:
        split_rows = False
    helpers = {h.name: h for h in module.helpers}
    rewritten = ast.Module(statements, [])
    combine_args = [node.args[2] for node in ast.walk(rewritten) if isinstance(node, ast.Call) and dotted(node.func) == "tl.associative_scan"
                    and len(node.args) > 2 and isinstance(node.args[2], ast.Name)]  # a scan's combine: the twin's lambda
    combines = {arg.id for arg in combine_args}
    called = sorted({n.id for n in ast.walk(rewritten) if isinstance(n, ast.Name) and n.id in helpers
                     and not any(n is arg for arg in combine_args)})
    if called:
        raise NoTwin(f"the kernel calls the @triton.jit helper(s) {', '.join(called)}, which the twin does not translate")
    body = []
    for stmt in statements:
        if isinstance(stmt, ast.AnnAssign) and is_constexpr_annotation(stmt.annotation) and isinstance(stmt.target, ast.Name):
            value = evaluate_node(stmt.value, constexprs)  # a literal, or one of the block sizes (`RBLOCK: tl.constexpr = R0_BLOCK`)
            if not isinstance(value, int) or isinstance(value, bool):
                raise NoTwin(f"constexpr {stmt.target.id} is not a literal")
            constexprs[stmt.target.id] = value
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):  # a docstring
            continue
        body.append(stmt)
    missing = set(module.constexprs) - set(constexprs)
    if missing:
        raise NoTwin(f"no value for constexpr {', '.join(sorted(missing))} in CONFIG")
    arg_dtypes = {name: _twin_dtype(name, value) for name, value in module.arguments.items()}
    pointers = frozenset(module.tensors)
    function = kernel_facts(text).named(kernel.name)
    stored = frozenset(a.pointer for a in function.accesses if a.call in WRITES) if function is not None else frozenset()
    grid, counted = _grid(launch_grid)
    combine_helpers = {name: helpers[name] for name in sorted(combines & set(helpers))}
    return ModuleFacts(kernel.name, params, constexprs, tuple(body), arg_dtypes, grid, stored, pointers, counted, split_rows,
                       combine_helpers)


def _twin_dtype(name: str, value: TensorArg | int | float | bool) -> str:
    """A tensor's element dtype, or a scalar's: bool i1, int i32 or i64 by value, float fp32."""
    if isinstance(value, TensorArg):
        if value.dtype not in TWIN_DTYPE_OF_TORCH:
            raise NoTwin(f"argument {name} has dtype {value.dtype}, which the twin does not handle")
        return TWIN_DTYPE_OF_TORCH[value.dtype]
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -(2**31) <= value < 2**31 else "i64"
    return "fp32"


def _grid(grid: tuple[ast.expr, ...]) -> tuple[tuple[ast.expr | None, ...], frozenset[int]]:
    """Per program axis of launch()'s grid: its numel (`triton.cdiv(numel, block)`, the numel a parameter or a
    number), a recorded count of programs, or None for 1; and the axes that are counts (program_numels resolves them)."""
    axes: list[ast.expr | None] = []
    counted = set()
    for axis, element in enumerate(grid):
        if isinstance(element, ast.Call) and dotted(element.func) == "triton.cdiv" and len(element.args) == 2:
            axes.append(element.args[0])
        elif isinstance(element, ast.Constant) and isinstance(element.value, int) and element.value > 1:
            axes.append(element)  # the run's own grid, recorded: a count of programs, resolved in program_numels
            counted.add(axis)
        elif isinstance(element, ast.Constant) and element.value == 1:
            axes.append(None)
        else:
            raise NoTwin(f"grid element {ast.unparse(element)} is not triton.cdiv(numel, block)")
    return tuple(axes), frozenset(counted)
