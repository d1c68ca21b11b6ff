"""Reading an extracted kernel module as data for `harvest ptx`: its kernel region (checked before anything runs), its
arguments, the signature Triton specialises on, and the target architecture. Pure: `ast` only."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harvest.dtypes import ITEMSIZE
from harvest.errors import ParseError, UsageError
from harvest.syntax import dotted

BEGIN_MARK = re.compile(r"^# >>> kernel.*$", re.M)
END_MARK = re.compile(r"^# <<< kernel.*$", re.M)

# torch dtype name -> the pointer element type Triton's launcher gives a tensor of that dtype
TRITON_POINTEE = {
    "float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64", "int64": "i64", "int32": "i32",
    "int16": "i16", "int8": "i8", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "i1",
    "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5",
}  # fmt: skip

# What a kernel body may name besides its parameters and its own variables.
KERNEL_MODULES = ("tl", "triton", "libdevice", "triton_helpers", "tl_math")
KERNEL_BUILTINS = ("range", "len", "float", "int", "min", "max", "print", "isinstance", "list")
# Statements a Triton kernel never needs; refused in a body so nothing is even handed to Triton's front end.
FORBIDDEN_IN_BODY = (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.ClassDef, ast.FunctionDef,
                     ast.AsyncFunctionDef, ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom)  # fmt: skip

TRITON_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
CHILD_PREFIX = "HARVEST-PTX "  # the child's result lines; anything else it prints (Triton's warnings) is not ours


# ---------------------------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class Pointer:
    """A tensor argument as ARGUMENTS records it: its dtype and storage offset (elements), which decide alignment."""

    dtype: str
    offset: int


@dataclass(frozen=True)
class KernelModule:
    """What `harvest ptx` needs from an extracted kernel module, read with `ast` (nothing imported or run)."""

    label: str  # the module's path as shown and as the PTX's .file (relative to the extraction, when known)
    name: str  # the kernel function's name
    region: str  # the text between the kernel markers
    first_line: int  # line number (1-based) of the region's first line in the module
    params: tuple[str, ...]
    constexpr_params: frozenset[str]
    do_not_specialize: frozenset[str]
    config: Mapping[str, Any]
    arguments: Mapping[str, Any]  # name -> Pointer | int | float | bool
    references: tuple[tuple[str, ...], ...]  # dotted names off a module the body uses, e.g. ("tl", "math", "exp")

    @property
    def padded_source(self) -> str:
        """The region at its own line numbers, so the PTX's .loc lines point into the module file."""
        return "\n" * (self.first_line - 1) + self.region


def kernel_region(text: str, label: str) -> tuple[str, int]:
    """The text between `# >>> kernel` and `# <<< kernel`, and the line number it starts on."""
    begin = BEGIN_MARK.search(text)
    end = END_MARK.search(text, begin.end()) if begin else None
    if begin is None or end is None:
        raise UsageError(f"{label} has no '# >>> kernel' ... '# <<< kernel' region: pass a kernel module written by `harvest extract`")
    start = begin.end() + 1
    return text[start : end.start()], text.count("\n", 0, start) + 1


def _chain(node: ast.AST) -> tuple[str, ...] | None:
    """("tl", "math", "exp") for `tl.math.exp`; None when the chain does not start at a plain name."""
    name = dotted(node)
    return tuple(name.split(".")) if name else None


def _is_constexpr_annotation(node: ast.expr | None) -> bool:
    return node is not None and _chain(node) == ("tl", "constexpr")


def _literal_names(node: ast.expr, label: str) -> frozenset[str]:
    if not isinstance(node, (ast.List, ast.Tuple)) or not all(
        isinstance(e, ast.Constant) and isinstance(e.value, (str, int)) and not isinstance(e.value, bool) for e in node.elts
    ):
        raise ParseError(f"{label}: do_not_specialize must be a literal list of parameter names; refusing to run the kernel's def")
    return frozenset(str(e.value) for e in node.elts)  # type: ignore[attr-defined]


def check_kernel_region(region: str, label: str) -> tuple[ast.FunctionDef, frozenset[str]]:
    """The region's one FunctionDef and its do_not_specialize names, or ParseError saying what else is there.

    Accepted: exactly one `def` decorated `@triton.jit` or `@triton.jit(do_not_specialize=[literals])`; positional
    parameters only, no defaults, annotations only `tl.constexpr`, no return annotation; a body in Triton's
    vocabulary (see the module docstring). Executing such a def runs no code from the file.
    """
    try:
        tree = ast.parse(region)
    except SyntaxError as exc:
        raise ParseError(f"{label}: the kernel region is not valid Python (line {exc.lineno}: {exc.msg})") from exc
    refuse = f"{label}: refusing to run the kernel region:"
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
        kinds = ", ".join(type(s).__name__ for s in tree.body) or "nothing"
        raise ParseError(f"{refuse} it must hold exactly one function definition and nothing else (found: {kinds})")
    fn = tree.body[0]
    if len(fn.decorator_list) != 1:
        raise ParseError(f"{refuse} {fn.name} must have exactly one decorator, @triton.jit")
    decorator = fn.decorator_list[0]
    do_not_specialize: frozenset[str] = frozenset()
    if isinstance(decorator, ast.Call) and _chain(decorator.func) == ("triton", "jit") and not decorator.args:
        for keyword in decorator.keywords:
            if keyword.arg != "do_not_specialize":
                raise ParseError(f"{refuse} @triton.jit may only take do_not_specialize=[...] here (found {keyword.arg or '**'})")
            do_not_specialize = _literal_names(keyword.value, label)
    elif _chain(decorator) != ("triton", "jit"):
        raise ParseError(f"{refuse} the decorator must be @triton.jit (found @{ast.unparse(decorator)})")
    args = fn.args
    if args.posonlyargs or args.vararg or args.kwonlyargs or args.kwarg or args.defaults or args.kw_defaults:
        raise ParseError(f"{refuse} {fn.name} may have plain parameters only (no defaults, *args, keyword-only or **kwargs)")
    for arg in args.args:
        if arg.annotation is not None and not _is_constexpr_annotation(arg.annotation):
            raise ParseError(f"{refuse} parameter {arg.arg} is annotated {ast.unparse(arg.annotation)}; only tl.constexpr is allowed")
    if fn.returns is not None:
        raise ParseError(f"{refuse} {fn.name} has a return annotation")
    _check_body(fn, label)
    return fn, do_not_specialize


def _check_body(fn: ast.FunctionDef, label: str) -> None:
    refuse = f"{label}: refusing to compile the kernel body:"
    stored = {a.arg for a in fn.args.args}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            stored.add(node.id)
    allowed = stored | set(KERNEL_MODULES) | set(KERNEL_BUILTINS)
    for stmt in fn.body:
        for node in ast.walk(stmt):
            if isinstance(node, FORBIDDEN_IN_BODY):
                raise ParseError(f"{refuse} line {node.lineno} holds a {type(node).__name__} statement, which a Triton kernel never needs")
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in allowed:
                raise ParseError(f"{refuse} line {node.lineno} uses {node.id!r}, which is neither a parameter, a variable of the kernel, nor one of {', '.join(KERNEL_MODULES + KERNEL_BUILTINS)}")
            if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
                raise ParseError(f"{refuse} line {node.lineno} reads attribute {node.attr!r} (names starting with _ are not Triton's API)")


def _module_references(fn: ast.FunctionDef) -> tuple[tuple[str, ...], ...]:
    """Every maximal dotted name in the body that starts at one of KERNEL_MODULES (and is not shadowed)."""
    shadowed = {a.arg for a in fn.args.args} | {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    inner: set[int] = set()
    chains: set[tuple[str, ...]] = set()
    for stmt in fn.body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Attribute) and id(node) not in inner:
                if isinstance(node.value, ast.Attribute):
                    inner.add(id(node.value))
                chain = _chain(node)
                if chain and chain[0] in KERNEL_MODULES and chain[0] not in shadowed:
                    chains.add(chain)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in KERNEL_MODULES and node.id not in shadowed:
                chains.add((node.id,))
    # a chain that is the prefix of a longer one was only seen as its inner node
    return tuple(sorted(c for c in chains if not any(len(o) > len(c) and o[: len(c)] == c for o in chains)))


def _assigned(tree: ast.Module, name: str) -> ast.expr | None:
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            return stmt.value
    return None


def _argument_value(node: ast.expr, name: str, label: str) -> Any:
    """A Pointer for `View(storage, shape, stride, offset, torch.<dtype>)`, else the scalar literal."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "View":
        fields = dict(zip(("storage", "shape", "stride", "offset", "dtype"), node.args))
        fields.update({k.arg: k.value for k in node.keywords if k.arg})
        dtype = _chain(fields["dtype"]) if "dtype" in fields else None
        if not dtype or len(dtype) != 2 or dtype[0] != "torch" or dtype[1] not in TRITON_POINTEE:
            raise ParseError(f"{label}: ARGUMENTS[{name!r}] has a dtype harvest ptx cannot map to Triton ({ast.unparse(fields.get('dtype', node))})")
        try:
            offset = ast.literal_eval(fields["offset"]) if "offset" in fields else 0
        except ValueError as exc:
            raise ParseError(f"{label}: ARGUMENTS[{name!r}] has a storage offset that is not a literal") from exc
        return Pointer(dtype[1], int(offset))
    try:
        value = ast.literal_eval(node)
    except ValueError as exc:
        raise ParseError(f"{label}: ARGUMENTS[{name!r}] is neither a View(...) nor a literal ({ast.unparse(node)})") from exc
    if not isinstance(value, (int, float, bool)):
        raise ParseError(f"{label}: ARGUMENTS[{name!r}] = {value!r}: a scalar argument must be a number or a bool")
    return value


def read_kernel_module(text: str, label: str) -> KernelModule:
    """The kernel, its CONFIG and ARGUMENTS of an extracted module's text (pure; ParseError says what is missing)."""
    region, first_line = kernel_region(text, label)
    fn, do_not_specialize = check_kernel_region(region, label)
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise ParseError(f"{label} is not valid Python (line {exc.lineno}: {exc.msg})") from exc
    config_node, arguments_node = _assigned(tree, "CONFIG"), _assigned(tree, "ARGUMENTS")
    if config_node is None or not isinstance(arguments_node, ast.Dict):
        missing = "CONFIG" if config_node is None else "ARGUMENTS"
        raise ParseError(f"{label} has no {missing} dict: pass a kernel module written by `harvest extract`")
    try:
        config = ast.literal_eval(config_node)
    except ValueError as exc:
        raise ParseError(f"{label}: CONFIG is not a literal dict") from exc
    if not isinstance(config, dict):
        raise ParseError(f"{label}: CONFIG is not a dict")
    arguments: dict[str, Any] = {}
    for key, value in zip(arguments_node.keys, arguments_node.values):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            raise ParseError(f"{label}: ARGUMENTS keys must be string literals")
        arguments[key.value] = _argument_value(value, key.value, label)
    params = tuple(a.arg for a in fn.args.args)
    unknown = sorted(do_not_specialize - set(params))
    if unknown:
        raise ParseError(f"{label}: do_not_specialize names {', '.join(unknown)}, which {fn.name} has no parameter for")
    return KernelModule(
        label=label,
        name=fn.name,
        region=region,
        first_line=first_line,
        params=params,
        constexpr_params=frozenset(a.arg for a in fn.args.args if _is_constexpr_annotation(a.annotation)),
        do_not_specialize=do_not_specialize,
        config=config,
        arguments=arguments,
        references=_module_references(fn),
    )


# -------------------------------------------------------------------------------------- specialization


@dataclass(frozen=True)
class CompileArgs:
    """ASTSource's signature, constexprs and attrs (≥ triton 3.3 form) and the compile options."""

    signature: dict[str, str]
    constexprs: dict[str, Any]
    attrs: dict[int, list[list[Any]]]  # parameter index -> [["tt.divisibility", 16]]
    options: dict[str, Any]

    def describe(self, params: tuple[str, ...]) -> list[str]:
        """One phrase per parameter, e.g. `a_ptr: *fp32, 16-byte aligned`, `BLOCK_SIZE = 1024`."""
        lines = []
        for index, name in enumerate(params):
            if self.signature[name] == "constexpr":
                lines.append(f"{name} = {self.constexprs[name]!r}")
                continue
            text = f"{name}: {self.signature[name]}"
            if index in self.attrs:
                text += ", 16-byte aligned" if self.signature[name].startswith("*") else ", divisible by 16"
            lines.append(text)
        return lines


def _int_type(value: int) -> str:
    if -(2**31) <= value < 2**31:
        return "i32"
    if -(2**63) <= value < 2**63:
        return "i64"
    return "u64"


def compile_args(module: KernelModule) -> CompileArgs:
    """What Triton's launcher would compile for the module's recorded launch (its specialization rules, ≥ 3.3).

    Pointers: `*<dtype>`, 16-byte aligned when the view's byte offset is (torch allocations are). Integers: i32/i64 by
    value; unless in do_not_specialize, 1 becomes a constant and multiples of 16 are marked divisible. Floats: fp32.
    Constexpr parameters take their value from CONFIG (or from ARGUMENTS when the launch passes them).
    """
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    attrs: dict[int, list[list[Any]]] = {}
    for index, name in enumerate(module.params):
        if name in module.constexpr_params:
            if name in module.config:
                value = module.config[name]
            elif name in module.arguments and not isinstance(module.arguments[name], Pointer):
                value = module.arguments[name]
            else:
                raise ParseError(f"{module.label}: constexpr {name} has no value in CONFIG or ARGUMENTS")
            signature[name], constexprs[name] = "constexpr", value
            continue
        if name not in module.arguments:
            raise ParseError(f"{module.label}: parameter {name} has no entry in ARGUMENTS")
        value = module.arguments[name]
        specialize = name not in module.do_not_specialize
        if isinstance(value, Pointer):
            signature[name] = "*" + TRITON_POINTEE[value.dtype]
            if value.offset * ITEMSIZE.get(value.dtype, 1) % 16 == 0:
                attrs[index] = [["tt.divisibility", 16]]
        elif isinstance(value, bool):
            signature[name] = "u1"
        elif isinstance(value, int):
            if specialize and value == 1:
                signature[name], constexprs[name] = "constexpr", 1
                continue
            signature[name] = _int_type(value)
            if specialize and value % 16 == 0:
                attrs[index] = [["tt.divisibility", 16]]
        else:
            signature[name] = "fp32"
    options = {key: value for key, value in module.config.items() if key not in module.params}
    unknown = sorted(set(options) - set(TRITON_OPTIONS))
    if unknown:
        raise ParseError(f"{module.label}: CONFIG holds {', '.join(unknown)}, which is neither a parameter nor a Triton option ({', '.join(TRITON_OPTIONS)})")
    return CompileArgs(signature, constexprs, attrs, options)


# ------------------------------------------------------------------------------------------------ arch


@dataclass(frozen=True)
class Arch:
    name: str  # as nvcc takes it: sm_90, sm_90a
    capability: int  # as Triton's GPUTarget takes it: 90


def parse_arch(text: str) -> Arch:
    """`sm_90`, `sm_90a`, `sm_100` or `90` -> Arch; UsageError otherwise."""
    match = re.fullmatch(r"(?:sm_)?(\d{2,3})([af]?)", text.strip())
    if not match:
        raise UsageError(f"--arch {text!r} is not a GPU architecture: use sm_80, sm_90, sm_100, ... (NVIDIA compute capability)")
    return Arch(f"sm_{match.group(1)}{match.group(2)}", int(match.group(1)))
