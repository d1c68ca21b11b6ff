"""What the twin reads from an extracted kernel module: the kernel, its launch grid and argument dtypes (ast only,
never imported), and the dtype tables of Triton, torch and C++."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from harvest.syntax import dotted


class NoTwin(Exception):
    """This kernel is outside what the CUDA twin translates; the message says why."""


# Triton dtype -> (C++ type, bytes). "int"/"float" are untyped Python literals.
CTYPES = {
    "i1": ("bool", 1), "i8": ("int8_t", 1), "i16": ("int16_t", 2), "i32": ("int32_t", 4), "i64": ("int64_t", 8),
    "u8": ("uint8_t", 1), "u16": ("uint16_t", 2), "u32": ("uint32_t", 4), "u64": ("uint64_t", 8),
    "fp16": ("__half", 2), "bf16": ("__nv_bfloat16", 2), "fp32": ("float", 4), "fp64": ("double", 8),
}


TL_DTYPES = {
    "int1": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16",
    "uint32": "u32", "uint64": "u64", "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64",
}


TORCH_DTYPES = {"bool": "i1", "int8": "i8", "uint8": "u8", "int16": "i16", "int32": "i32", "int64": "i64",
                "float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float32": "fp32", "float": "fp32",
                "float64": "fp64", "double": "fp64", "uint32": "u32", "uint16": "u16", "uint64": "u64"}


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


def read_module(text: str) -> ModuleFacts:
    """The kernel and its launch facts from an extracted module's text."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise NoTwin(f"the module does not parse (line {exc.lineno}: {exc.msg})") from exc
    kernel = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and any(_is_jit(d) for d in n.decorator_list)), None)
    if kernel is None:
        raise NoTwin("no @triton.jit kernel in the module")
    config = _literal_assign(tree, "CONFIG") or {}
    constexprs = {k: v for k, v in config.items() if isinstance(v, int) and k not in ("num_warps", "num_stages")}
    declared_constexpr = {a.arg for a in kernel.args.args if _is_constexpr(a.annotation)}
    params = tuple(a.arg for a in kernel.args.args if a.arg not in declared_constexpr)
    body = []
    for stmt in kernel.body:
        if isinstance(stmt, ast.AnnAssign) and _is_constexpr(stmt.annotation) and isinstance(stmt.target, ast.Name):
            try:
                constexprs[stmt.target.id] = ast.literal_eval(stmt.value)
            except ValueError as exc:
                raise NoTwin(f"constexpr {stmt.target.id} is not a literal") from exc
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):  # a docstring
            continue
        body.append(stmt)
    missing = declared_constexpr - set(constexprs)
    if missing:
        raise NoTwin(f"no value for constexpr {', '.join(sorted(missing))} in CONFIG")
    arg_dtypes, pointers = _argument_dtypes(tree, params)
    grid = _grid(tree)
    stored = frozenset(
        _pointer_of(call.args[0]) for call in ast.walk(kernel)
        if isinstance(call, ast.Call) and dotted(call.func) in ("tl.store", "tl.atomic_add", "tl.atomic_max", "tl.atomic_min") and call.args
    )
    return ModuleFacts(kernel.name, params, constexprs, tuple(body), arg_dtypes, grid, stored, pointers)


def _is_jit(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return dotted(target) in ("triton.jit", "jit")


def _is_constexpr(node: ast.expr | None) -> bool:
    return node is not None and dotted(node) in ("tl.constexpr", "constexpr", "triton.language.constexpr")


def _literal_assign(tree: ast.Module, name: str):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            try:
                return ast.literal_eval(node.value)
            except ValueError:
                return None
    return None


def _argument_dtypes(tree: ast.Module, params: tuple[str, ...]) -> tuple[dict[str, str], frozenset[str]]:
    arguments = next((n.value for n in tree.body if isinstance(n, ast.Assign)
                      and any(isinstance(t, ast.Name) and t.id == "ARGUMENTS" for t in n.targets)), None)
    if not isinstance(arguments, ast.Dict):
        raise NoTwin("the module has no ARGUMENTS table (made by an older harvest: extract again)")
    dtypes, pointers = {}, set()
    for key, value in zip(arguments.keys, arguments.values):
        if not isinstance(key, ast.Constant):
            continue
        name = key.value
        if isinstance(value, ast.Call) and dotted(value.func) == "View":
            dtype_node = value.args[4] if len(value.args) > 4 else next((k.value for k in value.keywords if k.arg == "dtype"), None)
            torch_name = dotted(dtype_node).removeprefix("torch.") if dtype_node is not None else ""
            if torch_name not in TORCH_DTYPES:
                raise NoTwin(f"argument {name} has dtype {torch_name or '?'}, which the twin does not handle")
            dtypes[name] = TORCH_DTYPES[torch_name]
            pointers.add(name)
        elif isinstance(value, ast.Constant) and isinstance(value.value, bool):
            dtypes[name] = "i1"
        elif isinstance(value, ast.Constant) and isinstance(value.value, int):
            dtypes[name] = "i32" if -(2**31) <= value.value < 2**31 else "i64"
        elif isinstance(value, ast.Constant) and isinstance(value.value, float):
            dtypes[name] = "fp32"
        else:
            raise NoTwin(f"argument {name} is neither a tensor view nor a number")
    for name in params:
        if name not in dtypes:
            raise NoTwin(f"ARGUMENTS has no entry for parameter {name}")
    return dtypes, frozenset(pointers)


def _grid(tree: ast.Module) -> tuple[ast.expr | None, ...]:
    launch = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "launch"), None)
    grid = None
    for node in ast.walk(launch) if launch else ():
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "grid" for t in node.targets):
            grid = node.value
    if not isinstance(grid, ast.Tuple):
        raise NoTwin("launch() has no grid = (...) tuple")
    axes = []
    for element in grid.elts:
        if isinstance(element, ast.Call) and dotted(element.func) == "triton.cdiv" and len(element.args) == 2:
            axes.append(element.args[0])
        elif isinstance(element, ast.Constant) and isinstance(element.value, int) and element.value > 1:
            axes.append(element)  # the run's own grid, recorded: a count of programs, resolved in program_numels
        elif isinstance(element, ast.Constant) and element.value == 1:
            axes.append(None)
        else:
            raise NoTwin(f"grid element {ast.unparse(element)} is not triton.cdiv(numel, block)")
    return tuple(axes)


def _pointer_of(address: ast.expr) -> str:
    while isinstance(address, ast.BinOp) and isinstance(address.op, ast.Add):
        address = address.left
    return address.id if isinstance(address, ast.Name) else ""

