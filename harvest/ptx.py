"""`harvest ptx`: what a Triton kernel and its CUDA twin compile to, side by side, on a machine with no GPU.

    module = read_kernel_module(text, "g0_inference/square_kernel.py")  # pure: `ast` only, nothing is executed
    args = compile_args(module)                        # pure: the signature Triton's launcher would specialize
    [ptx] = compile_triton_ptx([module], arch)         # a child process runs triton.compile(ASTSource(...))
    twin = compile_twin_ptx(cu_path, arch, nvcc)       # nvcc -ptx
    norm = normalize_ptx(ptx.text)                     # pure: no comments/debug info, registers/labels renumbered
    mix = instruction_mix(norm)                        # pure: static instruction counts by kind
    run = ptx_command(Path("extracted/square_square"), "sm_90")   # `harvest ptx`: all of it, files and report

Safety: the kernel module is data. Its `def` is executed (that is how Triton gets a JITFunction) only after the text
between the kernel markers is checked to be exactly one function whose decorator is `triton.jit` (optionally with a
literal `do_not_specialize` list), whose parameters have no defaults and no annotation but `tl.constexpr`: running
such a `def` evaluates nothing but `triton.jit` and `tl.constexpr`. The body is only compiled, but Triton's front end
calls Python functions it reaches at compile time, so the body is held to Triton's own vocabulary too: its names are
its parameters, its own variables, `tl`, `libdevice`, `triton_helpers`, `tl_math` and a few builtins; no attribute
starts with `_`; and every dotted name off a module is resolved, before the def runs, to a Triton function, dtype or
constant. Compilation runs in a child process without TRITON_INTERPRET and with a throw-away Triton cache.

Output is deterministic for a given toolchain: no temporary paths and no timestamps in the files written.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harvest.dtypes import ITEMSIZE
from harvest.errors import HarvestError, ParseError, ToolchainError, UsageError
from harvest.report import manifest_problem
from harvest.syntax import dotted

Progress = Callable[[str], None]

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


# ------------------------------------------------------------------------------------------ normalising

_REGISTER = re.compile(r"%(rd|rs|rq|rb|r|p|fd|f|hh|h)(\d+)\b")
_LABEL = re.compile(r"\$L__\w+")
_PARAM = re.compile(r"\b[A-Za-z_$][\w$]*_param_(\d+)\b")


def _strip_comments_and_debug(text: str) -> list[str]:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    lines: list[str] = []
    section = ""  # "" outside a debug section, "open" after its .section line, "body" inside its braces
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if section == "open" and line.startswith("{"):
            section = "" if "}" in line else "body"
            continue
        if section == "body":
            section = "" if line == "}" else "body"
            continue
        if not line or line.startswith((".file", ".loc", "@@DWARF")):
            continue
        if line.startswith(".section") and ".debug" in line:
            rest = line.split("{", 1)[1] if "{" in line else None
            section = "open" if rest is None else ("" if "}" in rest else "body")
            continue
        section = ""
        lines.append(" ".join(line.split()))
    return lines


def _tidy(line: str) -> str:
    line = re.sub(r"\[\s*([^\]]*?)\s*\+\s*0\s*\]", r"[\1]", line)  # [ %rd1 + 0 ] -> [%rd1]
    line = re.sub(r"\[\s*([^\]]*?)\s*\]", r"[\1]", line)
    line = re.sub(r"\{\s*(%[^{}]*?)\s*\}", r"{\1}", line)  # { %r1, %r2 } -> {%r1, %r2}
    line = re.sub(r"^\.version\s+\S+$", ".version", line)
    line = re.sub(r"^\.target\s+(sm_\d+)[af]?\b", r".target \1", line)
    return _PARAM.sub(r"param_\1", line)


def normalize_ptx(text: str) -> str:
    """PTX reduced to what the two compilers decided (DESIGN #10).

    Dropped: comments, .file/.loc lines, debug sections, labels nothing jumps to, blank lines. Unified: whitespace,
    `[ %rd1 + 0 ]` addresses, the header (`.version` without its number, `.target sm_90a` -> `sm_90`), parameter
    names (`square_kernel_param_0` -> `param_0`). Registers (per kind: %r, %rd, %p, %f, ...) and labels are
    renumbered in order of first appearance, so equal code reads equal whichever compiler numbered it.
    """
    lines = [_tidy(line) for line in _strip_comments_and_debug(text)]
    used = Counter(label for line in lines for label in _LABEL.findall(line))
    lines = [line for line in lines if not (line.endswith(":") and _LABEL.fullmatch(line[:-1]) and used[line[:-1]] == 1)]
    numbers: dict[str, dict[str, int]] = {}

    def register(match: re.Match[str]) -> str:
        kind = numbers.setdefault(match.group(1), {})
        return f"%{match.group(1)}{kind.setdefault(match.group(2), len(kind) + 1)}"

    labels: dict[str, str] = {}
    out: list[str] = []
    depth = 0
    for line in lines:
        line = _REGISTER.sub(register, line)
        line = _LABEL.sub(lambda m: labels.setdefault(m.group(0), f"$L{len(labels) + 1}"), line)
        if line.startswith(("}", ")")):
            depth = max(depth - 1, 0)
        indent = max(depth - 1, 0) if line.endswith(":") else depth
        out.append("\t" * indent + line)
        if line.endswith(("{", "(")):
            depth += 1
    return "\n".join(out) + "\n"


def ptx_header(text: str) -> dict[str, str]:
    """.version, .target and .address_size of a PTX text (before normalising)."""
    header = {}
    for key in ("version", "target", "address_size"):
        match = re.search(rf"^\s*\.{key}\s+([^\s/]+)", text, re.M)
        header[key] = match.group(1).rstrip(",") if match else "?"
    return header


def entries(text: str) -> list[str]:
    """The kernel entry points a PTX text defines, in order."""
    return re.findall(r"\.entry\s+([\w$]+)", text)


def unified_diff(triton_norm: str, twin_norm: str, triton_name: str, twin_name: str) -> str:
    lines = difflib.unified_diff(triton_norm.splitlines(), twin_norm.splitlines(), triton_name, twin_name, lineterm="", n=3)
    text = "\n".join(lines)
    return text + "\n" if text else ""


def diff_counts(diff: str) -> tuple[int, int]:
    """(lines only in Triton's PTX, lines only in the twin's) of a unified diff."""
    removed = sum(1 for line in diff.splitlines() if line.startswith("-") and not line.startswith("---"))
    added = sum(1 for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++"))
    return removed, added


# ------------------------------------------------------------------------------------ instruction mix

# Rows of the instruction-mix table, in order; a row both sides have none of is left out of the table.
MIX_ROWS = (
    "instructions", "ld.global v1", "ld.global v2", "ld.global v4", "ld.global v8", "ld.global.nc", "st.global v1",
    "st.global v2", "st.global v4", "st.global v8", "ld.shared", "st.shared", "ld/st.local", "atom/red",
    "fma f32", "mul f32", "add/sub f32", "fma f16", "mul f16", "add/sub f16", "fma bf16", "mul bf16", "add/sub bf16",
    "fma f64", "mul f64", "add/sub f64", "min/max float", "div float", "int add/sub/mul/mad", "int div/rem",
    "cvt", "ex2", "lg2", "rsqrt", "sqrt", "rcp", "sin", "cos", "tanh", "shfl.sync", "redux.sync",
    "bar.sync / barrier", "fence / membar", "bra", "setp", "selp", "predicated (@p)", "call",
)  # fmt: skip

_FLOAT = {"f32": "f32", "f16": "f16", "f16x2": "f16", "bf16": "bf16", "bf16x2": "bf16", "f64": "f64"}
_SPECIAL = {"ex2", "lg2", "rsqrt", "sqrt", "rcp", "sin", "cos", "tanh"}


def instruction_kinds(opcode: str) -> list[str]:
    """The MIX_ROWS an opcode (`ld.global.nc.v4.b32`, `fma.rn.f32`, ...) counts in."""
    parts = opcode.split(".")
    op, mods = parts[0], set(parts[1:])
    width = next((w for w in ("v2", "v4", "v8") if w in mods), "v1")
    floats = [_FLOAT[m] for m in parts[1:] if m in _FLOAT]
    kinds: list[str] = []
    if op in ("ld", "st") and "global" in mods:
        kinds.append(f"{op}.global {width}")
        if op == "ld" and "nc" in mods:
            kinds.append("ld.global.nc")
    elif op in ("ld", "st") and "shared" in mods:
        kinds.append(f"{op}.shared")
    elif op in ("ld", "st") and "local" in mods:
        kinds.append("ld/st.local")
    elif op in ("atom", "red"):
        kinds.append("atom/red")
    elif op in ("fma", "mad", "mul", "add", "sub") and floats:
        group = {"fma": "fma", "mad": "fma", "mul": "mul"}.get(op, "add/sub")
        kinds.append(f"{group} {floats[0]}")
    elif op in ("mad", "mul", "add", "sub", "mul24", "mad24"):
        kinds.append("int add/sub/mul/mad")
    elif op in ("min", "max") and floats:
        kinds.append("min/max float")
    elif op == "div":
        kinds.append("div float" if floats else "int div/rem")
    elif op == "rem":
        kinds.append("int div/rem")
    elif op == "cvt":
        kinds.append("cvt")
    elif op in _SPECIAL:
        kinds.append(op)
    elif op == "shfl":
        kinds.append("shfl.sync")
    elif op == "redux":
        kinds.append("redux.sync")
    elif op in ("bar", "barrier"):
        kinds.append("bar.sync / barrier")
    elif op in ("fence", "membar"):
        kinds.append("fence / membar")
    elif op in ("bra", "brx", "setp", "selp", "call"):
        kinds.append("bra" if op == "brx" else op)
    return kinds


def instruction_mix(ptx: str) -> Counter[str]:
    """Static instruction counts of a PTX text by MIX_ROWS kind (an instruction inside a loop counts once)."""
    mix: Counter[str] = Counter()
    for raw in ptx.splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line.endswith(";") or line.startswith((".", "{", "}")):
            continue
        guard = re.match(r"@!?%\w+\s+", line)
        if guard:
            mix["predicated (@p)"] += 1
            line = line[guard.end() :]
        opcode = line.split(None, 1)[0].rstrip(";")
        mix["instructions"] += 1
        mix.update(instruction_kinds(opcode))
    return mix


# -------------------------------------------------------------------------------------- ptxas and SASS


@dataclass(frozen=True)
class Resources:
    """`ptxas -v` figures of one entry point."""

    registers: int
    spill_stores: int  # bytes
    spill_loads: int  # bytes
    stack: int  # bytes
    shared: int  # bytes of static shared memory

    def as_dict(self) -> dict[str, int]:
        return {"registers": self.registers, "spill_stores": self.spill_stores, "spill_loads": self.spill_loads, "stack": self.stack, "shared": self.shared}


def parse_ptxas_log(text: str) -> dict[str, Resources]:
    """entry -> Resources from `ptxas -v` output (its info lines, for every entry function it compiled)."""
    result: dict[str, Resources] = {}
    current: str | None = None
    frame: dict[str, int] = {}
    for line in text.splitlines():
        entry = re.search(r"Compiling entry function '([^']+)'", line)
        if entry:
            current, frame = entry.group(1), {}
            continue
        props = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if props and current:
            frame = {"stack": int(props.group(1)), "spill_stores": int(props.group(2)), "spill_loads": int(props.group(3))}
            continue
        used = re.search(r"Used (\d+) registers", line)
        if used and current:
            shared = re.search(r"(\d+) bytes smem", line)
            result[current] = Resources(
                registers=int(used.group(1)),
                spill_stores=frame.get("spill_stores", 0),
                spill_loads=frame.get("spill_loads", 0),
                stack=frame.get("stack", 0),
                shared=int(shared.group(1)) if shared else 0,
            )
            current = None
    return result


def sass_instruction_count(sass: str) -> int:
    """SASS instructions in nvdisasm/cuobjdump output, NOPs left out."""
    opcodes = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", sass)
    return sum(1 for op in opcodes if not op.startswith("NOP"))


# --------------------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class CompiledSide:
    """One side (Triton or twin) of the comparison: its PTX and what was measured of it."""

    label: str  # "Triton" or "twin"
    source: str  # what it was compiled from (module or .cu path, as shown)
    how: str  # the compiler and command, as shown
    ptx: str
    normalized: str
    mix: Counter[str]
    resources: dict[str, Resources] = field(default_factory=dict)  # entry -> ptxas -v; empty when ptxas failed
    ptxas_note: str = ""  # why resources are missing, or which ptxas
    sass: str = ""
    sass_note: str = ""

    @property
    def header(self) -> dict[str, str]:
        return ptx_header(self.ptx)

    def summary(self) -> dict[str, Any]:
        """The few figures the manifest keeps and report.md shows."""
        loads = [(w, self.mix[f"ld.global {w}"]) for w in ("v1", "v2", "v4", "v8") if self.mix[f"ld.global {w}"]]
        stores = [(w, self.mix[f"st.global {w}"]) for w in ("v1", "v2", "v4", "v8") if self.mix[f"st.global {w}"]]
        out: dict[str, Any] = {
            "instructions": self.mix["instructions"],
            "ld_global": ", ".join(f"{n}x {w}" for w, n in loads) or "none",
            "st_global": ", ".join(f"{n}x {w}" for w, n in stores) or "none",
        }
        if self.resources:
            out["registers"] = max(r.registers for r in self.resources.values())
            out["spill_bytes"] = sum(r.spill_stores + r.spill_loads for r in self.resources.values())
        if self.sass:
            out["sass_instructions"] = sass_instruction_count(self.sass)
        return out


@dataclass(frozen=True)
class KernelPtx:
    """Everything `harvest ptx` produced for one kernel module."""

    module: str  # the module's path, relative to the extraction when known
    kernel: str
    arch: Arch
    triton: CompiledSide
    twin: CompiledSide | None
    twin_note: str  # "" with a twin, else why there is none ("no twin: ...")
    launch: tuple[str, ...]  # the specialization, one phrase per parameter, and the options
    toolchain: dict[str, str | None] = field(default_factory=dict)  # {"triton": "3.9.0", "nvcc": "13.0" or None}
    files: dict[str, str] = field(default_factory=dict)  # relative path -> text (filled by plan_files)

    def diff(self) -> str:
        if self.twin is None:
            return ""
        stem = Path(self.module).stem
        return unified_diff(self.triton.normalized, self.twin.normalized, f"{stem}.triton.norm.ptx", f"{stem}.twin.norm.ptx")

    def manifest_entry(self, md_path: str) -> dict[str, Any]:
        entry: dict[str, Any] = {"arch": self.arch.name, "toolchain": self.toolchain, "tables": md_path, "triton": self.triton.summary()}
        if self.twin is not None:
            entry["twin"] = self.twin.summary()
            only_triton, only_twin = diff_counts(self.diff())
            entry["diff"] = {"only_triton": only_triton, "only_twin": only_twin}
        else:
            entry["twin"] = None
            entry["twin_note"] = self.twin_note
        return entry


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|")


def render_tables(result: KernelPtx) -> str:
    """`<kernel>.ptx.md`: how each side was compiled, the instruction mix side by side, registers and spills."""
    sides = [result.triton] + ([result.twin] if result.twin else [])
    stem = Path(result.module).stem
    lines = [f"# PTX of `{result.kernel}` for {result.arch.name}: Triton" + (" vs CUDA twin" if result.twin else ""), ""]
    for side in sides:
        header = side.header
        lines.append(f"- {side.label}: `{side.source}`, {side.how}; PTX `.version {header['version']}`, `.target {header['target']}`")
    if result.twin is None:
        lines.append(f"- {result.twin_note}")
    lines.append(f"- launch: {', '.join(result.launch)}")
    lines += ["", "## Instruction mix", "", "Static counts in the PTX text (an instruction inside a loop counts once); kinds neither side uses are left out.", ""]
    lines.append("| | " + " | ".join(s.label for s in sides) + " |")
    lines.append("|---|" + "--:|" * len(sides))
    for row in MIX_ROWS:
        if row == "instructions" or any(s.mix[row] for s in sides):
            lines.append(f"| {_cell(row)} | " + " | ".join(str(s.mix[row]) for s in sides) + " |")
    lines += ["", "## Registers and spills", ""]
    lines.append("| Entry | registers | spill stores | spill loads | stack frame | shared memory | SASS instructions |")
    lines.append("|---|--:|--:|--:|--:|--:|--:|")
    for side in sides:
        if not side.resources:
            lines.append(f"| {side.label} | {_cell(side.ptxas_note or 'no ptxas')} | | | | | |")
        sass_count = sass_instruction_count(side.sass) if side.sass else "n/a"
        for entry, r in side.resources.items():
            lines.append(
                f"| {side.label} `{entry}` | {r.registers} | {r.spill_stores} B | {r.spill_loads} B | {r.stack} B | {r.shared} B | {sass_count} |"
            )
    notes = [f"{s.label}: {s.ptxas_note}" for s in sides if s.resources and s.ptxas_note]
    notes += [f"{s.label} SASS: {s.sass_note}" for s in sides if s.sass_note]
    if notes:
        lines += [""] + [f"- {note}" for note in notes]
    lines += ["", "## Files", ""]
    for path in sorted(result.files):
        if not path.endswith(".ptx.md"):
            lines.append(f"- [{Path(path).name}]({Path(path).name})")
    if result.twin is not None:
        only_triton, only_twin = diff_counts(result.diff())
        lines.append(f"- {stem}.ptx.diff: {only_triton} lines only in Triton's normalised PTX, {only_twin} only in the twin's")
    return "\n".join(lines) + "\n"


def plan_files(result: KernelPtx) -> dict[str, str]:
    """Relative path (under the kernel's graph directory) -> text of every file written for a kernel."""
    stem = Path(result.module).stem
    files = {
        f"ptx/{stem}.triton.ptx": result.triton.ptx,
        f"ptx/{stem}.triton.norm.ptx": result.triton.normalized,
    }
    if result.triton.sass:
        files[f"ptx/{stem}.triton.sass"] = result.triton.sass
    if result.twin is not None:
        files[f"ptx/{stem}.twin.ptx"] = result.twin.ptx
        files[f"ptx/{stem}.twin.norm.ptx"] = result.twin.normalized
        files[f"ptx/{stem}.ptx.diff"] = result.diff()
        if result.twin.sass:
            files[f"ptx/{stem}.twin.sass"] = result.twin.sass
    result.files.clear()
    result.files.update(files)
    files[f"ptx/{stem}.ptx.md"] = render_tables(result)
    result.files[f"ptx/{stem}.ptx.md"] = files[f"ptx/{stem}.ptx.md"]
    return files


# --------------------------------------------------------------------------------------- tools (edges)


def _executable(path: Path) -> Path | None:
    return path if path.is_file() and os.access(path, os.X_OK) else None


def _site_dirs() -> list[Path]:
    """Where pip's `nvidia` namespace package lives (its cu13/bin holds nvcc when the CUDA wheels are installed)."""
    spec = importlib.util.find_spec("nvidia")
    return [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []


def find_nvcc(environ: Mapping[str, str] | None = None, nvidia_dirs: list[Path] | None = None) -> Path:
    """nvcc from PATH, else $CUDA_HOME/bin, else the pip wheels' nvidia/cu13/bin (DESIGN #9); ToolchainError if none."""
    environ = os.environ if environ is None else environ
    found = shutil.which("nvcc", path=environ.get("PATH", ""))
    if found:
        return Path(found)
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if environ.get(variable) and _executable(Path(environ[variable]) / "bin" / "nvcc"):
            return Path(environ[variable]) / "bin" / "nvcc"
    for base in _site_dirs() if nvidia_dirs is None else nvidia_dirs:
        for sub in ("cu13", "cu12", "cuda_nvcc"):
            if _executable(base / sub / "bin" / "nvcc"):
                return base / sub / "bin" / "nvcc"
    raise ToolchainError(
        "no nvcc to compile the twin: not on PATH, not in $CUDA_HOME/bin, no pip CUDA wheel "
        "(install a CUDA toolkit, set CUDA_HOME, or `pip install nvidia-cuda-nvcc`)"
    )


def toolchain_versions() -> dict[str, str | None]:
    """The Triton and nvcc versions `harvest ptx` would use here (what its output depends on); None when absent."""
    from importlib import metadata

    try:
        triton = metadata.version("triton")
    except metadata.PackageNotFoundError:
        triton = None
    try:
        nvcc: str | None = _tool_version(find_nvcc())
    except ToolchainError:
        nvcc = None
    return {"triton": triton, "nvcc": nvcc}


def _triton_bin() -> Path | None:
    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "backends" / "nvidia" / "bin"


def tool_candidates(name: str, nvcc: Path | None = None) -> list[Path]:
    """Where a CUDA tool (ptxas, nvdisasm, cuobjdump) may be: Triton's wheel first, then beside nvcc, then PATH."""
    names = ["ptxas-blackwell", "ptxas"] if name == "ptxas" else [name]
    found: list[Path] = []
    if name == "ptxas" and os.environ.get("TRITON_PTXAS_PATH"):
        found.append(Path(os.environ["TRITON_PTXAS_PATH"]))
    bins = [_triton_bin(), nvcc.parent if nvcc else None]
    for directory in bins:
        for candidate in names:
            if directory and _executable(directory / candidate):
                found.append(directory / candidate)
    on_path = shutil.which(name)
    if on_path:
        found.append(Path(on_path))
    unique: list[Path] = []
    for path in found:
        if path.resolve() not in [u.resolve() for u in unique]:
            unique.append(path)
    return unique


def _first_error(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower() or "fatal" in line.lower()]
    return (errors or lines or ["(no output)"])[0]


def _tool_version(tool: Path) -> str:
    try:
        out = subprocess.run([str(tool), "--version"], capture_output=True, text=True, timeout=60).stdout
    except OSError:
        return "?"
    match = re.search(r"release (\d+\.\d+)", out)
    return match.group(1) if match else "?"


def assemble(ptx: str, scratch: Path, stem: str, nvcc: Path | None = None) -> tuple[dict[str, Resources], str, str, str]:
    """Run `ptxas -v` on a PTX text for the PTX's own .target: (resources, note, sass, sass note).

    Tries each ptxas candidate until one accepts the PTX's .version (Triton's ptxas may be older or newer than
    nvcc's). SASS comes from the cubin through nvdisasm, else cuobjdump; missing tools give a note, not an error.
    """
    target = ptx_header(ptx)["target"]
    source = scratch / f"{stem}.ptx"
    source.write_text(ptx, encoding="utf-8")
    cubin = scratch / f"{stem}.cubin"
    failures = []
    for ptxas in tool_candidates("ptxas", nvcc):
        run = subprocess.run([str(ptxas), "-v", f"-arch={target}", source.name, "-o", cubin.name], cwd=scratch, capture_output=True, text=True, timeout=600)
        if run.returncode == 0:
            break
        failures.append(f"{ptxas.name} {_tool_version(ptxas)}: {_first_error(run.stderr + run.stdout)}")
    else:
        note = "; ".join(failures) if failures else "no ptxas found (Triton's wheel ships one under triton/backends/nvidia/bin)"
        return {}, f"ptxas could not assemble it ({note})", "", "skipped: no cubin"
    resources = parse_ptxas_log(run.stderr + run.stdout)
    note = f"`ptxas -v -arch={target}` (ptxas {_tool_version(ptxas)})"
    for tool, args in (("nvdisasm", ["-c"]), ("cuobjdump", ["-sass"])):
        for path in tool_candidates(tool, nvcc):
            disasm = subprocess.run([str(path), *args, cubin.name], cwd=scratch, capture_output=True, text=True, timeout=600)
            if disasm.returncode == 0 and disasm.stdout.strip():
                return resources, note, disasm.stdout, ""
    return resources, note, "", "skipped: neither nvdisasm nor cuobjdump is installed (Triton's wheel ships both)"


def compile_twin_ptx(cu: Path, arch: Arch, nvcc: Path, label: str | None = None) -> str:
    """`nvcc -ptx -arch=<arch>` of a twin .cu file (run in its directory, so no absolute path reaches the PTX)."""
    with tempfile.TemporaryDirectory(prefix="harvest-ptx-") as scratch:
        out = Path(scratch) / (cu.stem + ".ptx")
        run = subprocess.run(
            [str(nvcc), "-ptx", f"-arch={arch.name}", cu.name, "-o", str(out)], cwd=cu.parent, capture_output=True, text=True, timeout=600
        )
        if run.returncode != 0:
            detail = _first_error(run.stderr + run.stdout).replace(str(cu.parent) + os.sep, "")
            raise ToolchainError(f"nvcc could not compile {label or cu} for {arch.name}: {detail}")
        return out.read_text(encoding="utf-8")


# ------------------------------------------------------------------------------ Triton (a child process)


@dataclass(frozen=True)
class TritonPtx:
    ptx: str
    triton_version: str


def _job(module: KernelModule, arch: Arch) -> dict[str, Any]:
    args = compile_args(module)
    return {
        "label": module.label,
        "name": module.name,
        "source": module.padded_source,
        "signature": args.signature,
        "constexprs": args.constexprs,
        "attrs": [[index, value] for index, value in sorted(args.attrs.items())],
        "options": args.options,
        "capability": arch.capability,
        "references": [list(chain) for chain in module.references],
    }


def compile_triton_ptx(modules: list[KernelModule], arch: Arch) -> Iterator[TritonPtx | HarvestError]:
    """Each module's PTX from `triton.compile(ASTSource(...), target=GPUTarget("cuda", cc, 32))`, in order.

    One child process for all of them (Triton and, when a kernel needs triton_helpers, torch are imported once), run
    without TRITON_INTERPRET and with a fresh Triton cache; yields a result or the error for each module as it is done.
    """
    jobs = [_job(m, arch) for m in modules]
    if not jobs:
        return
    root = str(Path(__file__).resolve().parent.parent)
    with tempfile.TemporaryDirectory(prefix="harvest-ptx-") as scratch:
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        env["TRITON_CACHE_DIR"] = str(Path(scratch) / "cache")
        env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Inductor compiles with FP fusion on; says so, silences 3.9's warning
        stderr_path = Path(scratch) / "stderr"
        with open(stderr_path, "w") as stderr, subprocess.Popen(
            [sys.executable, "-m", "harvest.ptx"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env, text=True, cwd=scratch
        ) as child:
            assert child.stdin is not None and child.stdout is not None
            child.stdin.write(json.dumps(jobs))
            child.stdin.close()
            done = 0
            for line in child.stdout:
                if not line.startswith(CHILD_PREFIX):
                    continue
                reply = json.loads(line[len(CHILD_PREFIX) :])
                done += 1
                if "ptx" in reply:
                    yield TritonPtx(reply["ptx"], reply["triton_version"])
                elif reply.get("kind") == "refused":
                    yield ParseError(reply["error"])
                else:
                    yield ToolchainError(reply["error"])
            child.wait()
        if done < len(jobs):
            detail = _first_error(stderr_path.read_text(encoding="utf-8", errors="replace"))
            for _ in range(len(jobs) - done):
                yield ToolchainError(f"the Triton compile process stopped (exit {child.returncode}): {detail}")


def _compile_error_line(exc: BaseException) -> str:
    """Triton's CompilationError spans lines (location, source, caret, cause): keep the location and the cause."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    if len(lines) > 1 and lines[0].startswith("at "):
        return f"{lines[-1]} ({lines[0].rstrip(':')})"
    return lines[0] if type(exc).__name__ in lines[0] else f"{type(exc).__name__}: {lines[0]}"


def _child_namespace(references: list[list[str]]) -> dict[str, Any]:
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice

    namespace: dict[str, Any] = {"__name__": "harvest_ptx_kernel", "__builtins__": {}, "triton": triton, "tl": tl, "libdevice": libdevice}
    if any(chain[0] in ("triton_helpers", "tl_math") for chain in references):
        from torch._inductor.runtime import triton_helpers

        namespace["triton_helpers"] = triton_helpers
        namespace["tl_math"] = getattr(triton_helpers, "math", tl.math)
    return namespace


def _check_references(references: list[list[str]], namespace: dict[str, Any], label: str) -> None:
    """Every dotted name the body reads off a module must end at a Triton function, dtype, constant or module."""
    import triton.language as tl
    from triton.runtime import jit

    callables = tuple(c for c in (getattr(jit, "JITCallable", None), jit.JITFunction) if c is not None)
    helpers = namespace.get("triton_helpers")

    def triton_module(value: Any) -> bool:
        name = getattr(value, "__name__", "") if type(value).__name__ == "module" else None
        return name is not None and (name.startswith("triton.language") or value is helpers)

    def device_side(value: Any) -> bool:
        return (
            triton_module(value)
            or isinstance(value, (tl.dtype, tl.constexpr) + callables)
            or getattr(value, "__triton_builtin__", False)
            or str(getattr(value, "__module__", "")).startswith("triton.language")
        )

    for chain in references:
        value = namespace.get(chain[0])
        for depth, attr in enumerate(chain[1:], start=1):
            if not (triton_module(value) or (depth == 1 and chain[0] == "triton" and attr == "language")):
                raise PermissionError(f"{label}: refusing to compile the kernel body: {'.'.join(chain)} reaches outside Triton's language ({'.'.join(chain[:depth])} is not a Triton module)")
            value = getattr(value, attr, None)
            if value is None:
                break  # not there: Triton's own error says so
        if value is not None and len(chain) > 1 and not device_side(value):
            raise PermissionError(f"{label}: refusing to compile the kernel body: {'.'.join(chain)} is not a Triton function, dtype or constant")


def _child_compile(job: dict[str, Any]) -> dict[str, Any]:
    import linecache

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    label = job["label"]
    major, minor = (int(part) for part in re.findall(r"\d+", triton.__version__)[:2])
    if (major, minor) < (3, 3):  # ASTSource took an AttrsDescriptor and integer-keyed constants before 3.3
        raise ToolchainError(f"harvest ptx needs triton >= 3.3 to compile offline; this Python has triton {triton.__version__}")
    check_kernel_region(job["source"].lstrip("\n"), label)  # the parent checked it; so does the process that runs it
    namespace = _child_namespace(job["references"])
    try:
        _check_references(job["references"], namespace, label)
    except PermissionError as exc:
        return {"error": str(exc), "kind": "refused"}
    source = job["source"]
    linecache.cache[label] = (len(source), None, source.splitlines(True), label)  # JITFunction reads its source here
    exec(compile(source, label, "exec"), namespace)  # only the checked def: decorator triton.jit, tl.constexpr annotations
    fn = namespace[job["name"]]
    attrs = {(index,): value for index, value in job["attrs"]}
    source_ast = ASTSource(fn, job["signature"], {(fn.arg_names.index(k),): v for k, v in job["constexprs"].items()}, attrs)
    compiled = triton.compile(source_ast, target=GPUTarget("cuda", job["capability"], 32), options=job["options"])
    return {"ptx": compiled.asm["ptx"], "triton_version": triton.__version__}


def _child_main() -> int:
    """The child side of compile_triton_ptx: JSON jobs on stdin, one result line per job on stdout."""
    jobs = json.load(sys.stdin)
    for job in jobs:
        try:
            reply = _child_compile(job)
        except ParseError as exc:
            reply = {"error": str(exc), "kind": "refused"}
        except HarvestError as exc:
            reply = {"error": str(exc)}
        except Exception as exc:  # Triton's compile errors: reported per kernel, the others still compile
            reply = {"error": f"Triton could not compile {job['label']} for sm_{job['capability']}: {_compile_error_line(exc)}"}
        sys.stdout.write(CHILD_PREFIX + json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0


# ------------------------------------------------------------------------------------ the command (edges)


@dataclass
class PtxRun:
    """What `harvest ptx` did: per kernel its result or error, and the files it wrote."""

    extraction: Path | None
    arch: Arch
    kernels: int = 0  # how many kernel modules were asked for
    results: list[KernelPtx] = field(default_factory=list)
    errors: list[tuple[str, HarvestError]] = field(default_factory=list)  # (module, error)
    written: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _manifest(directory: Path) -> dict | None:
    path = directory / "manifest.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ParseError(f"{path} is not valid JSON ({exc}); re-run `harvest extract` to rewrite it") from exc
    problem = manifest_problem(data) if isinstance(data, dict) else ""
    if problem:
        raise ParseError(f"{path} is not a manifest harvest wrote ({problem}); run `harvest extract {directory}` to rewrite it from raw/")
    return data if isinstance(data, dict) else None


def resolve_targets(target: Path) -> tuple[Path | None, list[Path]]:
    """(extraction directory or None, kernel modules) for KERNEL, OUT or OUT/<graph>."""
    if not target.exists():
        raise UsageError(f"{target} does not exist: pass a kernel module (OUT/<graph>/<kernel>.py), an extraction OUT or OUT/<graph>")
    if target.is_file():
        if target.suffix != ".py":
            raise UsageError(f"{target} is not a kernel module: pass OUT/<graph>/<kernel>.py written by `harvest extract`")
        out = target.resolve().parent.parent
        return (out if (out / "manifest.json").is_file() else None), [target]
    if (target / "manifest.json").is_file():
        out, graph = target, None
    elif (target.parent / "manifest.json").is_file():
        out, graph = target.parent, target.name
    else:
        raise UsageError(f"{target} holds no manifest.json and neither does its parent: pass a directory written by `harvest extract`")
    manifest = _manifest(out) or {}
    modules = [
        out / k["module"]
        for g in manifest.get("graphs", [])
        if graph is None or g.get("name") == graph
        for k in g.get("kernels", [])
        if k.get("module") and (out / k["module"]).is_file()
    ]
    if not modules:
        where = f"graph {graph} of {out}" if graph else str(out)
        raise UsageError(f"no kernel modules in {where}: nothing to compile")
    return out, modules


def _kernel_entry(manifest: dict | None, module: str) -> dict | None:
    for graph in (manifest or {}).get("graphs", []):
        for kernel in graph.get("kernels", []):
            if kernel.get("module") == module:
                return kernel
    return None


def _twin_note(entry: dict | None, cu: Path, label: str) -> str:
    twin = (entry or {}).get("twin")
    if isinstance(twin, dict) and twin.get("status") not in (None, "ok"):
        return f"no twin: {twin.get('reason') or twin.get('status')}"
    if isinstance(twin, dict) and twin.get("status") == "ok":
        return f"no twin: the manifest says there is one, but {label} is missing (re-run `harvest twin`)"
    return f"no twin: {label} does not exist (`harvest twin` writes it)"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def ptx_command(target: Path, arch_text: str = "sm_90", on_progress: Progress | None = None) -> PtxRun:
    """`harvest ptx TARGET --arch ARCH`: compile, compare and write, for one kernel module or every one in OUT[/graph].

    Errors of one kernel (a refused region, a Triton compile error) are collected in `run.errors` and the others go
    on; a missing nvcc (with a twin to compile) stops the command.
    """
    progress = on_progress or (lambda _message: None)
    arch = parse_arch(arch_text)
    out, paths = resolve_targets(Path(target))
    manifest = _manifest(out) if out else None
    run = PtxRun(out, arch, kernels=len(paths))
    modules: list[tuple[Path, str, KernelModule | None]] = []
    for path in paths:
        label = path.resolve().relative_to(out.resolve()).as_posix() if out else path.name
        try:
            module = read_kernel_module(path.read_text(encoding="utf-8"), label)
            compile_args(module)  # a module whose launch cannot be specialized is this kernel's error, before any compile
            modules.append((path, label, module))
        except HarvestError as exc:
            run.errors.append((label, exc))
            modules.append((path, label, None))
    readable = [m for _, _, m in modules if m is not None]
    compiled = compile_triton_ptx(readable, arch)
    try:
        _compare_and_write(modules, compiled, arch, manifest, run, progress)
    finally:
        compiled.close()  # a stop on the way (no nvcc) ends the Triton child too
    if out is not None and manifest is not None and run.results:
        run.notes += _update_manifest(out, manifest, run)
    return run


def _compare_and_write(modules, compiled, arch: Arch, manifest: dict | None, run: PtxRun, progress: Progress) -> None:
    """For each module in order: its Triton PTX (from `compiled`), its twin's, the comparison, the files."""
    nvcc: Path | None = None
    with tempfile.TemporaryDirectory(prefix="harvest-ptx-") as scratch_dir:
        scratch = Path(scratch_dir)
        for index, (path, label, module) in enumerate(modules, start=1):
            prefix = f"[{index}/{len(modules)}] {label}"
            if module is None:
                if len(modules) > 1:  # one kernel: its error is the command's one line
                    progress(f"{prefix}: error: {next(str(e) for m, e in run.errors if m == label)}")
                continue
            triton_ptx = next(compiled)
            if isinstance(triton_ptx, HarvestError):
                run.errors.append((label, triton_ptx))
                if len(modules) > 1:
                    progress(f"{prefix}: error: {triton_ptx}")
                continue
            cu = path.parent / "twin" / f"{path.stem}.cu"
            cu_label = (Path(label).parent / "twin" / cu.name).as_posix()
            triton_side = _side("Triton", label, f"Triton {triton_ptx.triton_version}, offline for GPUTarget(\"cuda\", {arch.capability}, 32)", triton_ptx.ptx, scratch, f"{path.stem}.triton")
            twin_side, twin_note = None, ""
            if cu.is_file():
                nvcc = nvcc or find_nvcc()
                try:
                    twin_text = compile_twin_ptx(cu, arch, nvcc, cu_label)
                except ToolchainError as exc:  # this kernel's twin is broken: say so, keep its Triton side, go on
                    run.errors.append((label, exc))
                    twin_note = f"twin not compiled: {exc}"
                else:
                    how = f"`nvcc -ptx -arch={arch.name}` (nvcc {_tool_version(nvcc)})"
                    twin_side = _side("twin", cu_label, how, twin_text, scratch, f"{path.stem}.twin", nvcc)
            else:
                twin_note = _twin_note(_kernel_entry(manifest, label), cu, cu_label)
            args = compile_args(module)
            launch = tuple(args.describe(module.params)) + tuple(f"{k}={v}" for k, v in args.options.items())
            toolchain = {"triton": triton_ptx.triton_version, "nvcc": _tool_version(nvcc) if twin_side and nvcc else None}
            result = KernelPtx(label, module.name, arch, triton_side, twin_side, twin_note, launch, toolchain)
            files = plan_files(result)
            stale = [p for p in (path.parent / "ptx").glob(f"{path.stem}.*") if f"ptx/{p.name}" not in files and _is_ours(p, path.stem)]
            for p in stale:
                p.unlink()
            for relative, text in files.items():
                _write(path.parent / relative, text)
                run.written.append(path.parent / relative)
            run.results.append(result)
            progress(f"{prefix}: {_one_line(result)}")


def _is_ours(path: Path, stem: str) -> bool:
    """A file `harvest ptx` writes for this kernel stem (so a stale one may be removed)."""
    return path.name in {f"{stem}.{suffix}" for suffix in ("triton.ptx", "triton.norm.ptx", "triton.sass", "twin.ptx", "twin.norm.ptx", "twin.sass", "ptx.diff", "ptx.md")}


def _side(label: str, source: str, how: str, ptx: str, scratch: Path, stem: str, nvcc: Path | None = None) -> CompiledSide:
    normalized = normalize_ptx(ptx)
    resources, note, sass, sass_note = assemble(ptx, scratch, stem, nvcc)
    return CompiledSide(label, source, how, ptx, normalized, instruction_mix(normalized), resources, note, sass, sass_note)


def _one_line(result: KernelPtx) -> str:
    def side(s: CompiledSide) -> str:
        summary = s.summary()
        regs = f", {summary['registers']} registers, {summary['spill_bytes']} B spilled" if "registers" in summary else ""
        return f"{s.label} {summary['instructions']} instructions{regs}, ld.global {summary['ld_global']}"

    text = side(result.triton)
    if result.twin is not None:
        only_triton, only_twin = diff_counts(result.diff())
        return f"{text} | {side(result.twin)} | diff -{only_triton} +{only_twin}"
    return f"{text} | {result.twin_note}"


def _update_manifest(out: Path, manifest: dict, run: PtxRun) -> list[str]:
    """Each compiled kernel's summary under its manifest entry's "ptx"; the files in generated_files; report.md again."""
    from harvest.report import render_report

    notes: list[str] = []
    generated = manifest.setdefault("generated_files", {})
    for result in run.results:
        entry = _kernel_entry(manifest, result.module)
        if entry is None:
            continue
        graph_dir = Path(result.module).parent
        md = next(p for p in result.files if p.endswith(".ptx.md"))
        entry["ptx"] = result.manifest_entry((graph_dir / md).as_posix())
        for relative in [p for p in generated if p.startswith((graph_dir / "ptx").as_posix() + "/") and Path(p).name.startswith(Path(result.module).stem + ".")]:
            del generated[relative]
        for relative, text in result.files.items():
            generated[(graph_dir / relative).as_posix()] = _sha256(text)
    report_path = out / "report.md"
    report = render_report(manifest)
    recorded = generated.get("report.md")
    if report_path.exists() and recorded and _sha256(report_path.read_text(encoding="utf-8")) != recorded:
        notes.append(f"kept your edited {report_path} (`harvest report {out}` re-renders it, with the PTX section)")
    else:
        _write(report_path, report)
        generated["report.md"] = _sha256(report)
        run.written.append(report_path)
    manifest["generated_files"] = dict(sorted(generated.items()))
    _write(out / "manifest.json", json.dumps(manifest, indent=2, sort_keys=False) + "\n")
    run.written.append(out / "manifest.json")
    return notes


if __name__ == "__main__":
    sys.exit(_child_main())
