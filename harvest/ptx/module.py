"""Reading an extracted kernel module as data for `harvest ptx`: its kernel region (checked before anything runs), its
arguments, the signature Triton specialises on, and the target architecture. Pure: `ast` only."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from harvest.dtypes import ITEMSIZE, TRITON_POINTEE
from harvest.errors import ParseError, UsageError
from harvest.module.file import ModuleFile, TensorArg, read_kernel_region, read_module_file
from harvest.syntax import dotted, is_constexpr_annotation

# What a kernel body may name besides its parameters, its own variables and the region's other defs.
KERNEL_MODULES = ("tl", "triton", "libdevice", "triton_helpers", "tl_math")
KERNEL_BUILTINS = ("range", "len", "float", "int", "min", "max", "print", "isinstance", "list")
# Statements a Triton kernel never needs; refused in a body so nothing is even handed to Triton's front end.
FORBIDDEN_IN_BODY = (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.ClassDef, ast.FunctionDef,
                     ast.AsyncFunctionDef, ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom)  # fmt: skip

TRITON_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
CHILD_PREFIX = "HARVEST-PTX "  # the child's result lines; anything else it prints (Triton's warnings) is not ours


# ---------------------------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class KernelModule:
    """What `harvest ptx` needs from an extracted kernel module, read with `ast` (nothing imported or run)."""

    label: str  # the module's path as shown and as the PTX's .file (relative to the extraction, when known)
    file: ModuleFile  # the module as harvest.module.file reads it
    references: tuple[tuple[str, ...], ...]  # dotted names off a module the bodies use, e.g. ("tl", "math", "exp")

    @property
    def name(self) -> str:
        """The kernel function's name."""
        return self.file.name

    @property
    def params(self) -> tuple[str, ...]:
        return self.file.params

    @property
    def padded_source(self) -> str:
        """The region at its own line numbers, so the PTX's .loc lines point into the module file."""
        return self.file.padded_region


def _chain(node: ast.AST) -> tuple[str, ...] | None:
    """("tl", "math", "exp") for `tl.math.exp`; None when the chain does not start at a plain name."""
    name = dotted(node)
    return tuple(name.split(".")) if name else None


def check_kernel_region(region: str, label: str) -> tuple[ast.FunctionDef, frozenset[str]]:
    """The region's kernel def and its do_not_specialize names, or ParseError saying what else is there.

    Accepted (besides what the module format itself requires, see harvest.module.file): every def decorated
    `@triton.jit` or `@triton.jit(do_not_specialize=[literals])` alone; plain parameters, no defaults, annotations
    only `tl.constexpr`, no return annotation; bodies in Triton's vocabulary (see the module docstring). Executing
    such defs runs no code from the file.
    """
    defs = read_kernel_region(region, label)
    _check_defs(defs.helpers, defs.kernel, label)
    return defs.kernel, frozenset(defs.do_not_specialize)


def _check_defs(helpers: tuple[ast.FunctionDef, ...], kernel: ast.FunctionDef, label: str) -> None:
    refuse = f"{label}: refusing to run the kernel region:"
    functions = (*helpers, kernel)
    for fn in functions:
        decorator = fn.decorator_list[0]
        if isinstance(decorator, ast.Call):
            if _chain(decorator.func) != ("triton", "jit"):
                raise ParseError(f"{refuse} the decorator of {fn.name} must be @triton.jit (found @{ast.unparse(decorator)})")
            for keyword in decorator.keywords:
                if keyword.arg != "do_not_specialize" or fn is not kernel:
                    raise ParseError(f"{refuse} @triton.jit may only take do_not_specialize=[...] here (found {keyword.arg or '**'} on {fn.name})")
        elif _chain(decorator) != ("triton", "jit"):
            raise ParseError(f"{refuse} the decorator of {fn.name} must be @triton.jit (found @{ast.unparse(decorator)})")
        args = fn.args
        if args.posonlyargs or args.vararg or args.kwonlyargs or args.kwarg or args.defaults or args.kw_defaults:
            raise ParseError(f"{refuse} {fn.name} may have plain parameters only (no defaults, *args, keyword-only or **kwargs)")
        for arg in args.args:
            if arg.annotation is not None and not _evaluable_constexpr(arg.annotation):
                raise ParseError(f"{refuse} parameter {arg.arg} is annotated {ast.unparse(arg.annotation)}; only tl.constexpr is allowed")
        if fn.returns is not None:
            raise ParseError(f"{refuse} {fn.name} has a return annotation")
    names = {fn.name for fn in functions}
    for fn in functions:
        _check_body(fn, names, label)


def _evaluable_constexpr(annotation: ast.expr) -> bool:
    """A constexpr annotation the compile process can evaluate: a string, or a spelling off `tl` or `triton`."""
    return is_constexpr_annotation(annotation) and (isinstance(annotation, ast.Constant) or dotted(annotation).split(".")[0] in ("tl", "triton"))


def _check_body(fn: ast.FunctionDef, defs: set[str], label: str) -> None:
    refuse = f"{label}: refusing to compile the kernel body:"
    stored = {a.arg for a in fn.args.args}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            stored.add(node.id)
    allowed = stored | defs | set(KERNEL_MODULES) | set(KERNEL_BUILTINS)
    for stmt in fn.body:
        for node in ast.walk(stmt):
            if isinstance(node, FORBIDDEN_IN_BODY):
                raise ParseError(f"{refuse} line {node.lineno} holds a {type(node).__name__} statement, which a Triton kernel never needs")
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in allowed:
                raise ParseError(f"{refuse} line {node.lineno} uses {node.id!r}, which is neither a parameter, a variable of the kernel, a def of the region, nor one of {', '.join(KERNEL_MODULES + KERNEL_BUILTINS)}")
            if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
                raise ParseError(f"{refuse} line {node.lineno} reads attribute {node.attr!r} (names starting with _ are not Triton's API)")


def _module_references(functions: tuple[ast.FunctionDef, ...]) -> tuple[tuple[str, ...], ...]:
    """Every maximal dotted name in the bodies that starts at one of KERNEL_MODULES (and is not shadowed there)."""
    inner: set[int] = set()
    chains: set[tuple[str, ...]] = set()
    for fn in functions:
        shadowed = {a.arg for a in fn.args.args} | {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
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


def read_kernel_module(text: str, label: str) -> KernelModule:
    """The kernel module as `harvest ptx` reads it (pure; ParseError says what is missing or refused)."""
    module = read_module_file(text, label)
    _check_defs(module.helpers, module.kernel, label)
    return KernelModule(label, module, _module_references((*module.helpers, module.kernel)))


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

    Pointers: `*<dtype>`, 16-byte aligned when the view's byte offset is (torch allocations are) and the pointer is
    not in do_not_specialize. Integers: i32/i64 by value; unless in do_not_specialize, 1 becomes a constant and
    multiples of 16 are marked divisible. Floats: fp32.
    Constexpr parameters take their value from CONFIG (or from ARGUMENTS when the launch passes them).
    """
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    attrs: dict[int, list[list[Any]]] = {}
    facts = module.file
    for index, name in enumerate(facts.params):
        if name in facts.constexprs:  # the reader made sure it has a value in CONFIG or ARGUMENTS
            value = facts.config[name] if name in facts.config else facts.arguments[name]
            if isinstance(value, TensorArg):
                raise ParseError(f"{module.label}: constexpr {name} is a Tensor in ARGUMENTS; a constexpr takes a value")
            signature[name], constexprs[name] = "constexpr", value
            continue
        value = facts.arguments[name]
        specialize = name not in facts.do_not_specialize
        if isinstance(value, TensorArg):
            signature[name] = "*" + TRITON_POINTEE[value.dtype]
            if specialize and value.offset * ITEMSIZE[value.dtype] % 16 == 0:
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
    options = facts.launch_options
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
