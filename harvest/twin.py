"""The CUDA C++ twin of an extracted Triton kernel: the same computation, one element (or one row) per CUDA thread.

Input is the text of an extracted kernel module, read as data with `ast` (never imported): the kernel between its
`# >>> kernel` markers, CONFIG, ARGUMENTS (dtypes of the pointers, values of the scalars) and the grid of launch().
Output is CUDA C++ source (`extern "C" __global__`, only CUDA headers) and the C++ launcher that load_inline builds.

How a Triton program maps onto CUDA threads:
- pointwise (one or two program axes): one thread per element, grid-stride loop; flat 1-D kernels whose loads and
  stores are at the element's own index move 16 bytes per access when the pointers allow it (aligned fast path,
  scalar tail).
- reductions (rows x reduction axis): one thread block per row, its threads stride over the row. Inductor's own
  reduction loops become the threads' loops (each thread folds its share of every accumulator); a persistent
  reduction gets one loop per reduction, recomputing the row's values it needs. Per-thread partials are combined
  with warp shuffles and a block-wide pass through shared memory.
A kernel outside the subset raises NoTwin with the reason; there is never a twin that computes something else.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field, replace

from harvest.resources import load_template


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

# Math functions: Triton name -> CUDA function for fp32 (fp64 uses the name without the f suffix).
# libdevice.* are libdevice's accurate functions, like CUDA's; tl.* / tl.math.* exp, log, sin, cos are Triton's
# fast approximations (ex2.approx, lg2.approx, ...), like CUDA's __expf intrinsics.
ACCURATE = {
    "exp": "expf", "exp2": "exp2f", "expm1": "expm1f", "log": "logf", "log2": "log2f", "log10": "log10f",
    "log1p": "log1pf", "sqrt": "sqrtf", "rsqrt": "rsqrtf", "tanh": "tanhf", "erf": "erff", "erfc": "erfcf",
    "erfinv": "erfinvf", "sin": "sinf", "cos": "cosf", "tan": "tanf", "asin": "asinf", "acos": "acosf",
    "atan": "atanf", "sinh": "sinhf", "cosh": "coshf", "asinh": "asinhf", "acosh": "acoshf", "atanh": "atanhf",
    "floor": "floorf", "ceil": "ceilf", "trunc": "truncf", "nearbyint": "rintf", "rint": "rintf", "round": "roundf",
    "abs": "fabsf", "fabs": "fabsf", "pow": "powf", "atan2": "atan2f", "fmod": "fmodf", "copysign": "copysignf",
    "lgamma": "lgammaf", "hypot": "hypotf", "cbrt": "cbrtf", "fma": "fmaf", "sqrt_rn": "sqrtf", "div_rn": "__fdiv_rn",
}
FAST = {"exp": "__expf", "log": "__logf", "sin": "__sinf", "cos": "__cosf"}
PREDICATES = {"isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite", "isfinited": "isfinite", "signbit": "signbit"}

# Reductions over the row: name -> (combine functor, identity kind)
REDUCTIONS = {
    "sum": ("hv::Sum", "zero"), "max2": ("hv::MaxNan", "lowest"), "min2": ("hv::MinNan", "highest"),
    "max": ("hv::Max", "lowest"), "min": ("hv::Min", "highest"), "prod": ("hv::Prod", "one"), "any": ("hv::Any", "zero"),
}
# How each accumulator of an Inductor reduction loop is updated, and the reduction that must end it.
LOOP_COMBINES = {"+": ("sum",), "maximum": ("max2", "max"), "minimum": ("min2", "min"), "*": ("prod",),
                 "|": ("any",), "welford_reduce": ("welford",), "online_softmax_combine": ("online_softmax_reduce",),
                 "maximum_with_index": ("max_with_index",), "minimum_with_index": ("min_with_index",)}
CPP_KEYWORDS = {"auto", "bool", "break", "case", "char", "class", "const", "continue", "default", "delete", "do",
                "double", "else", "enum", "extern", "float", "for", "goto", "if", "int", "long", "new", "operator",
                "private", "public", "register", "return", "short", "signed", "sizeof", "static", "struct", "switch",
                "template", "this", "throw", "typedef", "union", "unsigned", "virtual", "void", "volatile", "while",
                "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "hv", "std", "row", "half"}
WARP = 32


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


@dataclass
class Value:
    code: str
    dtype: str  # a CTYPES key, or "int"/"float" for a Python literal
    tuple_fields: tuple[str, ...] = ()


@dataclass
class Var:
    cname: str
    dtype: str
    depth: int  # the C++ scope it was declared in


@dataclass
class Uses:
    """Which helpers of the .cu template a twin needs (only those are written)."""

    half: bool = False
    bf16: bool = False
    cast: bool = False
    bitcast: bool = False
    vector: bool = False
    reduce: bool = False
    welford: bool = False
    argminmax: bool = False
    softmax: bool = False
    random: bool = False
    maximum: bool = False
    assert_: bool = False


# ---------------------------------------------------------------------------------------------------------------
# Reading the module (data: ast only)


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
        if isinstance(call, ast.Call) and _dotted(call.func) in ("tl.store", "tl.atomic_add", "tl.atomic_max", "tl.atomic_min") and call.args
    )
    return ModuleFacts(kernel.name, params, constexprs, tuple(body), arg_dtypes, grid, stored, pointers)


def _is_jit(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return _dotted(target) in ("triton.jit", "jit")


def _is_constexpr(node: ast.expr | None) -> bool:
    return node is not None and _dotted(node) in ("tl.constexpr", "constexpr", "triton.language.constexpr")


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


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
        if isinstance(value, ast.Call) and _dotted(value.func) == "View":
            dtype_node = value.args[4] if len(value.args) > 4 else next((k.value for k in value.keywords if k.arg == "dtype"), None)
            torch_name = _dotted(dtype_node).removeprefix("torch.") if dtype_node is not None else ""
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
        if isinstance(element, ast.Call) and _dotted(element.func) == "triton.cdiv" and len(element.args) == 2:
            axes.append(element.args[0])
        elif isinstance(element, ast.Constant) and isinstance(element.value, int) and element.value > 1:
            axes.append(element)  # the run's own grid, recorded: a count of programs, resolved in _program_numels
        elif isinstance(element, ast.Constant) and element.value == 1:
            axes.append(None)
        else:
            raise NoTwin(f"grid element {ast.unparse(element)} is not triton.cdiv(numel, block)")
    return tuple(axes)


def _pointer_of(address: ast.expr) -> str:
    while isinstance(address, ast.BinOp) and isinstance(address.op, ast.Add):
        address = address.left
    return address.id if isinstance(address, ast.Name) else ""


# ---------------------------------------------------------------------------------------------------------------
# Types and literals


def promote(a: str, b: str) -> str:
    """Triton's result type of a binary arithmetic operation."""
    if a == b:
        return "i32" if a == "int" else "fp32" if a == "float" else a
    if a in ("int", "float"):
        a, b = b, a
    if b == "int":
        return "i32" if a in ("i1", "float") and a != "float" else a if a != "float" else "fp32"
    if b == "float":
        return a if a in FLOATS else "fp32"
    if a in FLOATS or b in FLOATS:
        if "fp64" in (a, b):
            return "fp64"
        if a in FLOATS and b in FLOATS:
            return "fp32"  # fp16 with bf16, or either with fp32
        return a if a in FLOATS else b
    if a == "i1":
        return b
    if b == "i1":
        return a
    size_a, size_b = CTYPES[a][1], CTYPES[b][1]
    if size_a != size_b:
        return a if size_a > size_b else b
    return a if a.startswith("u") else b


def literal(value, dtype: str) -> str:
    """A C++ literal of `value` typed as `dtype`."""
    if dtype == "i1":
        return "true" if value else "false"
    if dtype in FLOATS:
        number = float(value)
        if math.isnan(number):
            text = "NAN"
        elif math.isinf(number):
            text = "INFINITY" if number > 0 else "-INFINITY"
        else:
            text = repr(number)
            if "e" not in text and "." not in text:
                text += ".0"
        if dtype == "fp32":
            return f"{text}f" if text[0].isdigit() or text[0] == "-" and text[1].isdigit() else f"float({text})"
        if dtype == "fp64":
            return text
        return f"hv::cast<{CTYPES[dtype][0]}>({text}f)" if text[0].isdigit() or text[:2].replace("-", "").isdigit() else f"hv::cast<{CTYPES[dtype][0]}>(float({text}))"
    number = int(value)
    suffix = {"i64": "LL", "u64": "ULL", "u32": "u"}.get(dtype, "")
    if dtype == "i32" and number == -(2**31):
        return "(-2147483647 - 1)"
    return f"{number}{suffix}" if dtype in ("i32", "i64", "u32", "u64") else f"{CTYPES[dtype][0]}({number})"


# ---------------------------------------------------------------------------------------------------------------
# Translation


@dataclass
class Emitter:
    facts: ModuleFacts
    uses: Uses = field(default_factory=Uses)
    lines: list[str] = field(default_factory=list)
    scopes: list[dict[str, Var]] = field(default_factory=lambda: [{}])
    taken: set[str] = field(default_factory=set)
    mutable: set[str] = field(default_factory=set)  # names the kernel assigns more than once
    indent: int = 1

    # -- scopes
    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def open(self, line: str) -> None:
        self.emit(line)
        self.indent += 1
        self.scopes.append({})

    def close(self, line: str = "}") -> None:
        self.indent -= 1
        self.scopes.pop()
        self.emit(line)

    def lookup(self, name: str) -> Var | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def fresh(self, name: str) -> str:
        """A C++ name for `name`: not a keyword, and not declared in this scope or one around it (sibling scopes,
        such as the vector path and the tail loop, reuse the Triton names)."""
        base = name + "_" if name in CPP_KEYWORDS else name
        visible = {var.cname for scope in self.scopes for var in scope.values()} | self.taken
        candidate, n = base, 1
        while candidate in visible:
            candidate, n = f"{base}_{n}", n + 1
        return candidate

    def declare(self, name: str, dtype: str, code: str, const: bool = True) -> Var:
        ctype = self.ctype(dtype)
        var = Var(self.fresh(name), dtype, len(self.scopes))
        self.emit(f"{'const ' if const else ''}{ctype} {var.cname} = {code};")
        self.scopes[-1][name] = var
        return var

    def bind(self, name: str, var: Var) -> None:
        self.scopes[-1][name] = var

    def ctype(self, dtype: str) -> str:
        if dtype == "int":
            dtype = "i32"
        if dtype == "float":
            dtype = "fp32"
        self.uses.half |= dtype == "fp16"
        self.uses.bf16 |= dtype == "bf16"
        return CTYPES[dtype][0]

    def cast(self, value: Value, dtype: str) -> str:
        if value.dtype == dtype:
            return value.code
        if value.dtype in ("int", "float"):
            text = value.code.lstrip("-")
            sign = -1 if value.code.startswith("-") else 1
            if text in ("inf", "nan"):
                return literal(sign * float(text), dtype)
            try:
                return literal(ast.literal_eval(value.code), dtype)
            except (ValueError, SyntaxError):
                pass
        self.uses.cast = True
        return f"hv::cast<{self.ctype(dtype)}>({value.code})"


@dataclass
class Axes:
    """The roles of the kernel's index variables, found from how they are defined."""

    program: dict[int, str] = field(default_factory=dict)  # program axis -> its index variable
    offsets: dict[str, int] = field(default_factory=dict)  # `tl.program_id(k) * BLOCK` variables -> k
    blocks: dict[int, str] = field(default_factory=dict)  # program axis -> its BLOCK constexpr
    reduction_base: str | None = None  # `tl.arange(0, R_BLOCK)` (looped) or the reduction index (persistent)
    reduction_block: str | None = None


def translate(facts: ModuleFacts) -> TwinSource:
    """The CUDA twin of a kernel, or NoTwin with the reason."""
    axes = _find_axes(facts)
    facts = _program_numels(facts, axes)
    has_loop = any(isinstance(s, ast.For) for s in facts.body)
    if axes.reduction_base is None and not has_loop:
        return _translate_pointwise(facts, axes)
    if len(axes.program) != 1 or 0 not in axes.program:
        raise NoTwin("a reduction over more than one program axis")
    return _translate_reduction(facts, axes, has_loop)


def _find_axes(facts: ModuleFacts) -> Axes:
    axes = Axes()
    for stmt in facts.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            continue
        name, value = stmt.targets[0].id, stmt.value
        axis = _program_offset(value)
        if axis is not None:
            axes.offsets[name] = axis
            if isinstance(value.right, ast.Name):
                axes.blocks[axis] = value.right.id
            continue
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
            left, right = value.left, value.right
            if isinstance(left, ast.Name) and left.id in axes.offsets and _arange_block(right):
                axes.program[axes.offsets[left.id]] = name
                continue
        block = _arange_block(value)
        if block is not None:
            if axes.reduction_base is not None:
                raise NoTwin("more than one reduction axis")
            axes.reduction_base, axes.reduction_block = name, block
    for stmt in facts.body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and _dotted(node.func) in ("tl.num_programs", "tl.make_block_ptr", "tl.advance",
                                                                       "tl.reshape", "tl.view", "tl.trans", "tl.permute",
                                                                       "tl.dot", "tl.cumsum", "tl.associative_scan", "tl.reduce",
                                                                       "tl.sort", "tl.histogram", "tl.gather", "tl.split", "tl.join"):
                raise NoTwin(f"uses {_dotted(node.func)}")
            if isinstance(node, ast.Call) and _dotted(node.func) == "tl.program_id" and not _inside_offset(stmt, node, axes):
                raise NoTwin("uses tl.program_id outside the block-offset pattern")
    return axes


def _program_numels(facts: ModuleFacts, axes: Axes) -> ModuleFacts:
    """A launch with the run's literal grid (N programs) covers N * BLOCK indices along that axis; the kernel's own
    masks keep the overshoot out, as they do in Triton."""
    grid = list(facts.grid)
    for axis, element in enumerate(grid):
        if isinstance(element, ast.Constant) and isinstance(element.value, int):
            block = axes.blocks.get(axis)
            if block not in facts.constexprs:
                raise NoTwin(f"the launch grid's axis {axis} is a literal {element.value} and the kernel's block size is unknown")
            grid[axis] = ast.Constant(element.value * facts.constexprs[block])
    return replace(facts, grid=tuple(grid))


def _program_offset(value: ast.expr) -> int | None:
    """`tl.program_id(k) * BLOCK` (optionally `.to(tl.int64)`) -> k."""
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
        call = value.left
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "to":
            call = call.func.value
        if isinstance(call, ast.Call) and _dotted(call.func) == "tl.program_id" and call.args and isinstance(call.args[0], ast.Constant):
            return int(call.args[0].value)
    return None


def _inside_offset(stmt: ast.stmt, node: ast.Call, axes: Axes) -> bool:
    return (isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id in axes.offsets)


def _arange_block(value: ast.expr) -> str | None:
    """`tl.arange(0, B)[...]` -> B."""
    while isinstance(value, ast.Subscript):
        value = value.value
    if isinstance(value, ast.Call) and _dotted(value.func) == "tl.arange" and len(value.args) == 2:
        block = value.args[1]
        if isinstance(block, ast.Name):
            return block.id
        if isinstance(block, ast.Constant):
            return str(block.value)
    return None


# -- expressions


class Expressions:
    """Translates Triton expressions into C++ expressions of known dtype, in the emitter's current scope."""

    def __init__(self, emitter: Emitter, axes: Axes, special: dict[str, Value] | None = None):
        self.out = emitter
        self.axes = axes
        self.special = special or {}

    def __call__(self, node: ast.expr) -> Value:
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise NoTwin(f"cannot translate {ast.unparse(node)!r}")
        return method(node)

    def _Constant(self, node: ast.Constant) -> Value:
        if isinstance(node.value, bool):
            return Value("true" if node.value else "false", "i1")
        if isinstance(node.value, int):
            return Value(str(node.value), "int")
        if isinstance(node.value, float):
            return Value(repr(node.value), "float")
        raise NoTwin(f"constant {node.value!r}")

    def _Name(self, node: ast.Name) -> Value:
        if node.id in self.special:
            return self.special[node.id]
        var = self.out.lookup(node.id)
        if var is not None:
            return Value(var.cname, var.dtype)
        if node.id in self.out.facts.constexprs:
            return Value(str(self.out.facts.constexprs[node.id]), "int")
        raise NoTwin(f"{node.id} is used where the twin has no value for it")

    def _Subscript(self, node: ast.Subscript) -> Value:
        # x[:, None], x[None, :]: broadcasting, which one thread per element does not need
        return self(node.value)

    def _UnaryOp(self, node: ast.UnaryOp) -> Value:
        operand = self(node.operand)
        if isinstance(node.op, ast.USub):
            if operand.dtype in ("int", "float"):
                return Value(f"-{operand.code}", operand.dtype)
            return Value(f"(-{operand.code})", operand.dtype)
        if isinstance(node.op, (ast.Invert, ast.Not)):
            if operand.dtype == "i1" or isinstance(node.op, ast.Not):
                return Value(f"(!{operand.code})", "i1")
            return Value(f"(~{operand.code})", operand.dtype)
        if isinstance(node.op, ast.UAdd):
            return operand
        raise NoTwin(f"unary operator in {ast.unparse(node)!r}")

    def _BinOp(self, node: ast.BinOp) -> Value:
        left, right = self(node.left), self(node.right)
        op = node.op
        if isinstance(op, ast.Div):
            dtype = promote(left.dtype, right.dtype)
            if dtype not in FLOATS:
                dtype = "fp32"
            return Value(f"({self.out.cast(left, dtype)} / {self.out.cast(right, dtype)})", dtype)
        dtype = promote(left.dtype, right.dtype)
        if isinstance(op, (ast.BitAnd, ast.BitOr, ast.BitXor)) and dtype in FLOATS:
            raise NoTwin(f"bitwise operator on floats in {ast.unparse(node)!r}")
        if isinstance(op, ast.FloorDiv):
            if dtype in FLOATS:
                raise NoTwin(f"floor division of floats in {ast.unparse(node)!r}")
            symbol = "/"  # Triton's // on integers truncates, as C++ does
        elif isinstance(op, ast.Mod):
            if dtype in FLOATS:
                return Value(f"{'fmod' if dtype == 'fp64' else 'fmodf'}({self.out.cast(left, dtype)}, {self.out.cast(right, dtype)})", dtype)
            symbol = "%"  # C remainder, as Triton's % on integers
        else:
            symbol = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
                      ast.LShift: "<<", ast.RShift: ">>"}.get(type(op))
            if symbol is None:
                raise NoTwin(f"operator in {ast.unparse(node)!r}")
        if dtype in ("fp16", "bf16") and symbol in "+-*":
            pass  # cuda_fp16/cuda_bf16 define these operators (sm_53+/sm_80+) with Triton's rounding
        code = f"({self.out.cast(left, dtype)} {symbol} {self.out.cast(right, dtype)})"
        if dtype == "i1" and symbol in "&|^":
            code = f"static_cast<bool>{code}"
        return Value(code, dtype)

    def _Compare(self, node: ast.Compare) -> Value:
        if len(node.ops) != 1:
            raise NoTwin(f"chained comparison {ast.unparse(node)!r}")
        left, right = self(node.left), self(node.comparators[0])
        dtype = promote(left.dtype, right.dtype)
        symbol = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}.get(type(node.ops[0]))
        if symbol is None:
            raise NoTwin(f"comparison {ast.unparse(node)!r}")
        return Value(f"({self.out.cast(left, dtype)} {symbol} {self.out.cast(right, dtype)})", "i1")

    def _Attribute(self, node: ast.Attribute) -> Value:
        raise NoTwin(f"attribute {ast.unparse(node)!r} used as a value")

    def _Call(self, node: ast.Call) -> Value:
        name = _dotted(node.func)
        args = node.args
        kwargs = {k.arg: k.value for k in node.keywords}
        if isinstance(node.func, ast.Attribute) and node.func.attr == "to" and not name.startswith(("tl.", "libdevice", "triton_helpers")):
            value = self(node.func.value)
            dtype = self.dtype_of(args[0] if args else kwargs["dtype"])
            bitcast = kwargs.get("bitcast")
            if bitcast is not None and isinstance(bitcast, ast.Constant) and bitcast.value:
                self.out.uses.bitcast = True
                return Value(f"hv::bitcast<{self.out.ctype(dtype)}>({value.code})", dtype)
            return Value(self.out.cast(value, dtype), dtype)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "broadcast_to" and not name.startswith("tl."):
            return self(node.func.value)
        if name == "float" and len(args) == 1 and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
            return Value(repr(float(args[0].value)), "float")
        short = name.split(".")[-1]
        if name in ("tl.broadcast_to", "tl.expand_dims"):
            return self(args[0])
        if name in ("tl.full", "tl.zeros", "tl.full_like", "tl.zeros_like"):
            return self._full(name, node)
        if name == "tl.where":
            cond, a, b = (self(x) for x in args)
            dtype = promote(a.dtype, b.dtype)
            return Value(f"({self.out.cast(cond, 'i1')} ? {self.out.cast(a, dtype)} : {self.out.cast(b, dtype)})", dtype)
        if name == "tl.load":
            return self.load(node)
        if name in ("triton_helpers.maximum", "triton_helpers.minimum", "tl.maximum", "tl.minimum"):
            a, b = self(args[0]), self(args[1])
            dtype = promote(a.dtype, b.dtype)
            self.out.uses.maximum = True
            nan = "Nan" if name.startswith("triton_helpers") else ""
            function = ("hv::maximum" if "max" in short else "hv::minimum") + nan
            return Value(f"{function}({self.out.cast(a, dtype)}, {self.out.cast(b, dtype)})", dtype)
        if name in ("tl.sigmoid", "tl.math.sigmoid"):
            x = self.float_arg(args[0], name)
            one = literal(1, x.dtype)
            exp = "exp" if x.dtype == "fp64" else "__expf"
            return Value(f"({one} / ({one} + {exp}(-{x.code})))", x.dtype)
        if name in ("tl.fma", "libdevice.fma", "tl.math.fma"):
            values = [self.float_arg(a, name) for a in args]
            dtype = values[0].dtype
            return Value(f"{'fma' if dtype == 'fp64' else 'fmaf'}({', '.join(self.out.cast(v, dtype) for v in values)})", dtype)
        if short in PREDICATES and name.startswith(("libdevice.", "tl.math.", "tl.")):
            x = self.float_arg(args[0], name)
            return Value(f"static_cast<bool>({PREDICATES[short]}({x.code}))", "i1")
        if short == "abs" and name.startswith(("tl.", "libdevice.")):
            x = self(args[0])
            if x.dtype not in FLOATS:
                return Value(f"(({x.code}) < 0 ? -({x.code}) : ({x.code}))", x.dtype)
        if name.startswith(("libdevice.", "tl.math.", "tl.")) and (short in ACCURATE or short in FAST):
            return self.math(name, short, args)
        if name in ("tl.rand", "tl.randn"):
            self.out.uses.random = True
            seed, offset = self(args[0]), self(args[1])
            return Value(f"hv::{short}(static_cast<uint64_t>({seed.code}), static_cast<uint32_t>({offset.code}))", "fp32")
        raise NoTwin(f"{name or ast.unparse(node.func)}() has no CUDA twin translation")

    # -- pieces

    def dtype_of(self, node: ast.expr) -> str:
        text = _dotted(node)
        if text.startswith(("tl.", "triton.language.")):
            key = text.split(".")[-1]
            if key in TL_DTYPES:
                return TL_DTYPES[key]
        if isinstance(node, ast.Attribute) and node.attr == "dtype":
            return self(node.value).dtype if not isinstance(node.value, ast.Name) or self.out.lookup(node.value.id) else self(node.value).dtype
        raise NoTwin(f"dtype {ast.unparse(node)!r}")

    def _full(self, name: str, node: ast.Call) -> Value:
        args = list(node.args)
        kwargs = {k.arg: k.value for k in node.keywords}
        if name == "tl.zeros":
            dtype = self.dtype_of(args[1] if len(args) > 1 else kwargs["dtype"])
            return Value(literal(0, dtype), dtype)
        if name == "tl.zeros_like":
            dtype = self(args[0]).dtype
            return Value(literal(0, dtype), dtype)
        if name == "tl.full_like":
            dtype = self(args[0]).dtype
            return Value(self.out.cast(self(args[1]), dtype), dtype)
        value_node = args[1] if len(args) > 1 else kwargs["value"]
        dtype = self.dtype_of(args[2] if len(args) > 2 else kwargs["dtype"])
        if isinstance(value_node, ast.Call) and _dotted(value_node.func) == "float" and value_node.args:
            value = float(ast.literal_eval(value_node.args[0]))
            return Value(literal(value, dtype), dtype)
        value = self(value_node)
        return Value(self.out.cast(value, dtype), dtype)

    def float_arg(self, node: ast.expr, name: str) -> Value:
        x = self(node)
        if x.dtype in ("int", "float"):
            x = Value(self.out.cast(x, "fp32"), "fp32")
        if x.dtype not in ("fp32", "fp64"):
            raise NoTwin(f"{name} on a {x.dtype} value (Triton's libdevice calls are fp32/fp64)")
        return x

    def math(self, name: str, short: str, args: list[ast.expr]) -> Value:
        values = [self.float_arg(a, name) for a in args]
        dtype = "fp64" if any(v.dtype == "fp64" for v in values) else "fp32"
        fast = not name.startswith("libdevice.") and short in FAST and dtype == "fp32"
        function = FAST[short] if fast else ACCURATE[short]
        if dtype == "fp64":
            function = function.lstrip("_").removesuffix("f") if not function.startswith("__fdiv") else "__ddiv_rn"
        return Value(f"{function}({', '.join(self.out.cast(v, dtype) for v in values)})", dtype)

    def address(self, node: ast.expr) -> tuple[str, Value]:
        """`ptr + offset` -> (pointer's C++ name, offset value)."""
        terms = []
        while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and not (isinstance(node.left, ast.Name) and node.left.id in self.out.facts.arg_dtypes):
            terms.append(node.right)
            node = node.left
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            terms.append(node.right)
            node = node.left
        if not (isinstance(node, ast.Name) and node.id in self.out.facts.arg_dtypes and node.id in self.out.facts.params):
            raise NoTwin(f"address {ast.unparse(node)!r} is not a kernel pointer plus an offset")
        var = self.out.lookup(node.id)
        if not terms:
            return var.cname, Value("0", "int")
        offsets = [self(t) for t in reversed(terms)]
        total = offsets[0]
        for extra in offsets[1:]:
            dtype = promote(total.dtype, extra.dtype)
            total = Value(f"({self.out.cast(total, dtype)} + {self.out.cast(extra, dtype)})", dtype)
        return var.cname, total

    def load(self, node: ast.Call) -> Value:
        kwargs = {k.arg: k.value for k in node.keywords}
        pointer_node = node.args[0]
        mask = node.args[1] if len(node.args) > 1 else kwargs.get("mask")
        other = node.args[2] if len(node.args) > 2 else kwargs.get("other")
        pointer, offset = self.address(pointer_node)
        dtype = self.out.facts.arg_dtypes[_pointer_of(pointer_node)]
        vector = self.special.get(f"hv_vector_load:{ast.unparse(node)}")
        if vector is not None:
            return vector
        access = f"{pointer}[{offset.code}]"
        if mask is None or (isinstance(mask, ast.Constant) and mask.value is None):
            return Value(access, dtype)
        condition = self(mask)
        fallback = self.out.cast(self(other), dtype) if other is not None else literal(0, dtype)
        return Value(f"({self.out.cast(condition, 'i1')} ? {access} : {fallback})", dtype)


# -- statements


class Statements:
    """Emits Triton statements as C++ statements."""

    def __init__(self, emitter: Emitter, exprs: Expressions, row_level_stores: bool = False):
        self.out = emitter
        self.x = exprs
        self.row_level_stores = row_level_stores  # in a reduction, row-level stores are made by thread 0 only

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Assign):
            self.assign(stmt)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            self.call(stmt.value)
        elif isinstance(stmt, ast.Pass):
            pass
        else:
            raise NoTwin(f"statement {ast.unparse(stmt).splitlines()[0]!r}")

    def assign(self, stmt: ast.Assign) -> None:
        if len(stmt.targets) != 1:
            raise NoTwin(f"chained assignment {ast.unparse(stmt)!r}")
        target = stmt.targets[0]
        if isinstance(target, ast.Tuple):
            self.assign_tuple(target, stmt.value)
            return
        if not isinstance(target, ast.Name):
            raise NoTwin(f"assignment to {ast.unparse(target)!r}")
        value = self.x(stmt.value)
        self.store_name(target.id, value)

    def store_name(self, name: str, value: Value) -> None:
        existing = self.out.lookup(name)
        if existing is not None and value.code == existing.cname:
            return  # `tmp2 = tmp2[:, None]`
        dtype = "i32" if value.dtype == "int" else "fp32" if value.dtype == "float" else value.dtype
        mutable = name in self.out.mutable
        if existing is not None and mutable:
            if existing.dtype == dtype:
                self.out.emit(f"{existing.cname} = {self.out.cast(value, dtype)};")
                return
            if existing.depth < len(self.out.scopes):
                raise NoTwin(f"{name} changes type from {existing.dtype} to {dtype} inside a loop")
        self.out.declare(name, dtype, self.out.cast(value, dtype), const=not mutable)

    def assign_tuple(self, target: ast.Tuple, value_node: ast.expr) -> None:
        names = [t.id if isinstance(t, ast.Name) else None for t in target.elts]
        if None in names:
            raise NoTwin(f"tuple assignment {ast.unparse(target)!r}")
        if isinstance(value_node, ast.Tuple) and len(value_node.elts) == len(names):
            values = [self.x(v) for v in value_node.elts]
            for name, value in zip(names, values):
                self.store_name(name, value)
            return
        if not isinstance(value_node, ast.Call):
            raise NoTwin(f"tuple assignment from {ast.unparse(value_node)!r}")
        fields = self.combine_call(value_node)
        for name, value in zip(names, fields, strict=True):
            self.store_name(name, value)

    def combine_call(self, node: ast.Call) -> list[Value]:
        """A per-thread combine step of a reduction loop (welford_reduce, online_softmax_combine, *_with_index)."""
        name = _dotted(node.func).split(".")[-1]
        args = [self.x(a) for a in node.args]
        if name == "welford_reduce":
            self.out.uses.welford = True
            value, mean, m2, weight, first = args
            state = self.temp("welford", f"hv::welford_reduce({self.out.cast(value, 'fp32')}, {mean.code}, {m2.code}, {weight.code}, {self.out.cast(first, 'i1')})", "hv::Welford")
            return [Value(f"{state}.mean", "fp32"), Value(f"{state}.m2", "fp32"), Value(f"{state}.weight", "fp32")]
        if name == "online_softmax_combine":
            self.out.uses.softmax = True
            lhs_max, lhs_sum, rhs_max, fast = args
            fast_flag = "true" if fast.code in ("True", "true", "1") else "false"
            state = self.temp("softmax", f"hv::online_softmax_combine<{fast_flag}>({lhs_max.code}, {lhs_sum.code}, {self.out.cast(rhs_max, 'fp32')})", "hv::SoftmaxState")
            return [Value(f"{state}.max", "fp32"), Value(f"{state}.sum", "fp32")]
        if name in ("maximum_with_index", "minimum_with_index"):
            self.out.uses.argminmax = True
            a_value, a_index, b_value, b_index = args
            vtype = promote(a_value.dtype, b_value.dtype)
            itype = promote(a_index.dtype, b_index.dtype)
            ctype = f"hv::ValueIndex<{self.out.ctype(vtype)}, {self.out.ctype(itype)}>"
            combine = "hv::ArgMax" if name.startswith("maximum") else "hv::ArgMin"
            state = self.temp("pick", f"{combine}()({ctype}{{{self.out.cast(a_value, vtype)}, {self.out.cast(a_index, itype)}}}, {ctype}{{{self.out.cast(b_value, vtype)}, {self.out.cast(b_index, itype)}}})", ctype)
            return [Value(f"{state}.value", vtype), Value(f"{state}.index", itype)]
        raise NoTwin(f"{_dotted(node.func)}() returning several values")

    def temp(self, stem: str, code: str, ctype: str) -> str:
        cname = self.out.fresh(f"hv_{stem}")
        self.out.emit(f"const {ctype} {cname} = {code};")
        self.out.bind(f" {cname}", Var(cname, "", len(self.out.scopes)))  # reserve the name in this scope
        return cname

    def call(self, node: ast.Call) -> None:
        name = _dotted(node.func)
        kwargs = {k.arg: k.value for k in node.keywords}
        if name == "tl.store":
            self.store(node)
        elif name in ("tl.atomic_add", "tl.atomic_max", "tl.atomic_min"):
            pointer, offset = self.x.address(node.args[0])
            dtype = self.out.facts.arg_dtypes[_pointer_of(node.args[0])]
            value = self.x(node.args[1])
            mask = node.args[2] if len(node.args) > 2 else kwargs.get("mask")
            function = {"tl.atomic_add": "atomicAdd", "tl.atomic_max": "atomicMax", "tl.atomic_min": "atomicMin"}[name]
            if function != "atomicAdd" and dtype in FLOATS:
                raise NoTwin(f"{name} on floats")
            line = f"{function}(&{pointer}[{offset.code}], {self.out.cast(value, dtype)});"
            self.guarded(line, mask)
        elif name == "tl.device_assert":
            self.out.uses.assert_ = True
            self.out.emit(f"assert({self.out.cast(self.x(node.args[0]), 'i1')});")
        elif name == "tl.debug_barrier":
            if self.row_level_stores:
                self.out.emit("__syncthreads();")
        elif name in ("tl.static_print", "tl.device_print", "print", "tl.static_assert"):
            pass
        else:
            raise NoTwin(f"call {name or ast.unparse(node.func)}() as a statement")

    def store(self, node: ast.Call) -> None:
        kwargs = {k.arg: k.value for k in node.keywords}
        pointer, offset = self.x.address(node.args[0])
        dtype = self.out.facts.arg_dtypes[_pointer_of(node.args[0])]
        mask = node.args[2] if len(node.args) > 2 else kwargs.get("mask")
        vector = self.x.special.get(f"hv_vector_store:{ast.unparse(node)}")
        value = self.x(node.args[1])
        if vector is not None:
            self.out.emit(f"{vector.code} = {self.out.cast(value, dtype)};")
            return
        self.guarded(f"{pointer}[{offset.code}] = {self.out.cast(value, dtype)};", mask)

    def guarded(self, line: str, mask: ast.expr | None) -> None:
        conditions = []
        if self.row_level_stores:
            conditions.append("threadIdx.x == 0")
        if mask is not None and not (isinstance(mask, ast.Constant) and mask.value is None):
            conditions.append(self.out.cast(self.x(mask), "i1"))
        if conditions:
            self.out.emit(f"if ({' && '.join(conditions)}) {line}")
        else:
            self.out.emit(line)


# ---------------------------------------------------------------------------------------------------------------
# Kernel shapes


def _assigned_names(body: tuple[ast.stmt, ...]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for stmt in body:
        for node in ast.walk(stmt):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.For) else []
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        counts[name.id] = counts.get(name.id, 0) + 1
    return counts


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _defines(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, ast.Assign):
        return {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _uses(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, ast.Assign):
        return _names_in(stmt.value)
    return _names_in(stmt)


def _split_prologue(facts: ModuleFacts, axes: Axes) -> tuple[list[ast.stmt], list[ast.stmt], dict[str, int]]:
    """Leading constant assignments (`xnumel = 1024`, `rnumel = r0_numel`) and the rest; known integer constants."""
    known = dict(facts.constexprs)
    allowed = set(facts.params) | set(facts.constexprs)
    prologue = []
    index = 0
    for index, stmt in enumerate(facts.body):
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            break
        name = stmt.targets[0].id
        if name in axes.offsets or any(isinstance(n, ast.Call) for n in ast.walk(stmt.value)) or not _names_in(stmt.value) <= allowed:
            break
        prologue.append(stmt)
        allowed.add(name)
        try:
            known[name] = int(eval(compile(ast.Expression(stmt.value), "<constant>", "eval"), {"__builtins__": {}}, dict(known)))  # noqa: S307 - names are only known ints
        except Exception:  # a runtime parameter: not a known constant
            known.pop(name, None)
    else:
        index = len(facts.body)
    return prologue, list(facts.body[index:]) if index < len(facts.body) else [], known


def _host_expr(node: ast.expr, known: dict[str, int], params: tuple[str, ...]) -> str:
    """A numel expression of launch() in C++ over the launcher's int64_t scalars."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return f"int64_t({node.value})"
    if isinstance(node, ast.Name):
        if node.id in params:
            return node.id
        if node.id in known:
            return f"int64_t({known[node.id]})"
    if isinstance(node, ast.BinOp):
        symbol = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "/"}.get(type(node.op))
        if symbol:
            return f"({_host_expr(node.left, known, params)} {symbol} {_host_expr(node.right, known, params)})"
    raise NoTwin(f"launch size {ast.unparse(node)!r} is not an integer expression of the launch arguments")


def _start(facts: ModuleFacts, shadowed: set[str]) -> tuple[Emitter, list[str], list[str]]:
    """An emitter with the kernel parameters bound, the parameter list and the launcher's arguments."""
    out = Emitter(facts)
    out.mutable = {name for name, count in _assigned_names(facts.body).items() if count > 1}
    signature, launcher_args = [], []
    for name in facts.params:
        dtype = facts.arg_dtypes[name]
        cname = out.fresh(name + "_param" if name in shadowed else name)
        out.taken.add(cname)
        ctype = out.ctype(dtype)
        if _is_pointer(facts, name):
            const = "" if name in facts.stored else "const "
            signature.append(f"{const}{ctype}* {cname}")
            launcher_args.append(f"reinterpret_cast<{const}{ctype}*>({name}.data_ptr())")
            out.bind(name, Var(cname, dtype, 1))
        else:
            signature.append(f"{ctype} {cname}")
            launcher_args.append(f"static_cast<{ctype}>({name})")
            out.bind(name, Var(cname, dtype, 1))
    return out, signature, launcher_args


def _is_pointer(facts: ModuleFacts, name: str) -> bool:
    return name in facts.pointer_params


def _launcher_params(facts: ModuleFacts) -> list[str]:
    return [f"torch::Tensor {n}" if _is_pointer(facts, n) else ("double " if facts.arg_dtypes[n] in FLOATS else "int64_t ") + n
            for n in facts.params]


def _index_dtype(facts: ModuleFacts, offset_name: str) -> str:
    stmt = next(s for s in facts.body if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) and s.targets[0].id == offset_name)
    return "i64" if ".to(tl.int64)" in ast.unparse(stmt.value) else "i32"


def _aliases(body: list[ast.stmt], name: str) -> set[str]:
    """`name` and every variable assigned as a plain copy of it (`x0 = xindex`)."""
    names = {name}
    for stmt in body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Name) and stmt.value.id in names:
            names.add(stmt.targets[0].id)
    return names


def _full_true(value: ast.expr) -> bool:
    while isinstance(value, ast.Subscript):
        value = value.value
    return (isinstance(value, ast.Call) and _dotted(value.func) == "tl.full" and len(value.args) > 1
            and isinstance(value.args[1], ast.Constant) and value.args[1].value is True)


def _axis_masks(body: list[ast.stmt], index_names: set[str]) -> set[str]:
    masks = set()
    for stmt in body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
            value = stmt.value
            if _full_true(value) or (isinstance(value, ast.Compare) and isinstance(value.left, ast.Name)
                                     and value.left.id in index_names and isinstance(value.ops[0], ast.Lt)):
                masks.add(stmt.targets[0].id)
    return masks


def _contiguous_accesses(body: list[ast.stmt], index_names: set[str], masks: set[str], facts: ModuleFacts) -> list[tuple[str, ast.Call, str]]:
    """Loads and stores at the element's own index with no mask but the axis mask: ("load"/"store", call, pointer)."""
    found = []
    for stmt in body:
        call = stmt.value if isinstance(stmt, (ast.Assign, ast.Expr)) else None
        if not isinstance(call, ast.Call) or _dotted(call.func) not in ("tl.load", "tl.store"):
            continue
        kind = "load" if _dotted(call.func) == "tl.load" else "store"
        if kind == "load" and not (isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)):
            continue
        address = call.args[0]
        kwargs = {k.arg: k.value for k in call.keywords}
        mask = call.args[1 if kind == "load" else 2] if len(call.args) > (1 if kind == "load" else 2) else kwargs.get("mask")
        if not (isinstance(address, ast.BinOp) and isinstance(address.op, ast.Add) and isinstance(address.left, ast.Name)
                and isinstance(address.right, ast.Name) and address.right.id in index_names):
            continue
        if mask is not None and not (isinstance(mask, ast.Name) and mask.id in masks) and not (isinstance(mask, ast.Constant) and mask.value is None):
            continue
        pointer = address.left.id
        if pointer in facts.params and _is_pointer(facts, pointer):
            found.append((kind, call, pointer))
    return found


def _translate_pointwise(facts: ModuleFacts, axes: Axes) -> TwinSource:
    if not axes.program:
        raise NoTwin("no `tl.program_id(0) * BLOCK + tl.arange(...)` index found")
    if set(axes.program) - {0, 1} or len(axes.program) != len([g for g in facts.grid if g is not None]):
        raise NoTwin("program axes do not match the launch grid")
    prologue, body, known = _split_prologue(facts, axes)
    shadowed = {s.targets[0].id for s in facts.body if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)} & set(facts.params)
    out, signature, launcher_args = _start(facts, shadowed)
    exprs = Expressions(out, axes)
    statements = Statements(out, exprs)
    for stmt in prologue:
        statements.statement(stmt)
    numels = {k: exprs(facts.grid[k]) for k in axes.program}
    host_numels = {k: _host_expr(facts.grid[k], known, facts.params) for k in axes.program}
    body = [s for s in body if not (_defines(s) & set(axes.offsets))]
    index_names = {axes.program[k] for k in axes.program}
    index_dtypes = {k: _index_dtype(facts, next(n for n, a in axes.offsets.items() if a == k)) for k in axes.program}
    body = [s for s in body if not (_defines(s) & index_names)]
    for name in list(axes.offsets):
        if any(name in _uses(s) for s in body):
            raise NoTwin(f"the block offset {name} is used beyond the element index")
    total = " * ".join(f"static_cast<int64_t>({numels[k].code})" for k in sorted(axes.program))
    host_total = " * ".join(host_numels[k] for k in sorted(axes.program))
    out.emit(f"const int64_t hv_numel = {total};")
    notes = []

    def bind_indices(linear: str) -> None:
        if len(axes.program) == 1:
            (k, name), = axes.program.items()
            out.declare(name, index_dtypes[k], f"static_cast<{CTYPES[index_dtypes[k]][0]}>({linear})")
        else:
            inner = numels[0].code
            out.declare(axes.program[1], index_dtypes[1], f"static_cast<{CTYPES[index_dtypes[1]][0]}>({linear} / {inner})")
            out.declare(axes.program[0], index_dtypes[0], f"static_cast<{CTYPES[index_dtypes[0]][0]}>({linear} % {inner})")

    contiguous = []
    if len(axes.program) == 1:
        (only,) = axes.program.values()
        names = _aliases(body, only)
        contiguous = _contiguous_accesses(body, names, _axis_masks(body, names), facts)
    if not contiguous:
        elements = 1
        out.open("for (int64_t hv_linear = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; hv_linear < hv_numel; "
                 "hv_linear += static_cast<int64_t>(gridDim.x) * blockDim.x) {")
        bind_indices("hv_linear")
        for stmt in body:
            statements.statement(stmt)
        out.close()
        notes.append("one element per thread, grid-stride loop")
    else:
        out.uses.vector = True
        elements = min(16, 16 // min(CTYPES[facts.arg_dtypes[p]][1] for _, _, p in contiguous))
        aligned = " && ".join(sorted({f"hv::aligned16({out.lookup(p).cname})" for _, _, p in contiguous}))
        out.emit(f"const bool hv_aligned = {aligned};")
        out.open(f"for (int64_t hv_base = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * {elements}; hv_base < hv_numel; "
                 f"hv_base += static_cast<int64_t>(gridDim.x) * blockDim.x * {elements}) {{")
        out.open(f"if (hv_aligned && hv_base + {elements} <= hv_numel) {{")
        out.emit(f"// fast path: {elements} elements per thread, 16-byte vector loads and stores")
        special: dict[str, Value] = {}
        stores = []
        for kind, call, pointer in contiguous:
            dtype = facts.arg_dtypes[pointer]
            ctype = CTYPES[dtype][0]
            array = out.fresh(f"{pointer}_vec")
            out.bind(f" {array}", Var(array, dtype, len(out.scopes)))
            if kind == "load":
                out.emit(f"{ctype} {array}[{elements}];")
                out.emit(f"hv::load_vector({out.lookup(pointer).cname} + hv_base, {array});")
                special[f"hv_vector_load:{ast.unparse(call)}"] = Value(f"{array}[hv_e]", dtype)
            else:
                out.emit(f"{ctype} {array}[{elements}];")
                special[f"hv_vector_store:{ast.unparse(call)}"] = Value(f"{array}[hv_e]", dtype)
                stores.append((pointer, array))
        out.emit("#pragma unroll")
        out.open(f"for (int hv_e = 0; hv_e < {elements}; ++hv_e) {{")
        bind_indices("hv_base + hv_e")
        vector_exprs = Expressions(out, axes, special)
        vector_statements = Statements(out, vector_exprs)
        for stmt in body:
            vector_statements.statement(stmt)
        out.close()
        for pointer, array in stores:
            out.emit(f"hv::store_vector({out.lookup(pointer).cname} + hv_base, {array});")
        out.indent -= 1
        out.scopes.pop()
        out.open("} else {")
        out.emit("// the tail, or pointers not 16-byte aligned: one element at a time")
        out.open(f"for (int64_t hv_linear = hv_base; hv_linear < hv_numel && hv_linear < hv_base + {elements}; ++hv_linear) {{")
        bind_indices("hv_linear")
        for stmt in body:
            statements.statement(stmt)
        out.close()
        out.close()
        out.close()
        notes.append(f"{elements} elements per thread with 16-byte vector accesses where aligned, grid-stride loop")
    per_block = 256
    launch_lines = [
        f"const int64_t hv_numel = {host_total};",
        "if (hv_numel <= 0) return;",
        f"const int hv_threads = {per_block};",
        f"const int64_t hv_blocks = std::min<int64_t>((hv_numel + hv_threads * {elements} - 1) / (hv_threads * {elements}), 2147483647);",
    ]
    return _finish(facts, out, signature, launcher_args, launch_lines, "pointwise", notes)


def _finish(facts: ModuleFacts, out: Emitter, signature: list[str], launcher_args: list[str], launch_lines: list[str],
            shape: str, notes: list[str]) -> TwinSource:
    uses = out.uses
    cuda = load_template("twin.cu.j2").render( kernel_name=facts.name, signature=",\n    ".join(signature), body="\n".join(out.lines), uses=uses,
        shape=shape, notes=notes,
    )
    params = _launcher_params(facts)
    declaration = f"void launch({', '.join(params)});"
    launcher = load_template("twin_launcher.cu.j2").render( kernel_name=facts.name, params=", ".join(params), launch_lines=launch_lines,
        arguments=",\n        ".join(launcher_args),
    )
    return TwinSource(facts.name, cuda, launcher, declaration, facts.params, shape, tuple(notes))


# -- reductions

ROW_REDUCTIONS = {"tl.sum": "sum", "tl.max": "max", "tl.min": "min", "triton_helpers.max2": "max2", "triton_helpers.min2": "min2",
                  "triton_helpers.prod": "prod", "triton_helpers.any": "any", "triton_helpers.welford": "welford",
                  "triton_helpers.max_with_index": "max_with_index", "triton_helpers.min_with_index": "min_with_index",
                  "triton_helpers.online_softmax_reduce": "online_softmax_reduce"}
ARITY = {"welford": 3, "max_with_index": 2, "min_with_index": 2, "online_softmax_reduce": 2}


def _reduction_call(value: ast.expr) -> tuple[str, list[ast.expr], ast.Call] | None:
    """`tl.sum(x, 1)[:, None]` (optionally `.to(dtype)`) and friends -> (kind, reduced arguments, call)."""
    while isinstance(value, ast.Subscript) or (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                                               and value.func.attr == "to" and isinstance(value.func.value, (ast.Subscript, ast.Call))):
        value = value.value if isinstance(value, ast.Subscript) else value.func.value
    if not isinstance(value, ast.Call) or _dotted(value.func) not in ROW_REDUCTIONS:
        return None
    kind = ROW_REDUCTIONS[_dotted(value.func)]
    count = ARITY.get(kind, 1)
    axis = value.args[count] if len(value.args) > count else next((k.value for k in value.keywords if k.arg in ("axis", "dim")), None)
    if not (isinstance(axis, ast.Constant) and axis.value in (1, -1)):
        raise NoTwin(f"a reduction over axis {ast.unparse(axis) if axis is not None else '?'} (the twin reduces rows: axis 1)")
    return kind, value.args[:count], value


def _identity(kind: str, dtype: str) -> str:
    if kind in ("sum", "any"):
        return literal(0, dtype)
    if kind == "prod":
        return literal(1, dtype)
    big = float("inf") if dtype in FLOATS else (2 ** (8 * CTYPES[dtype][1] - (0 if dtype.startswith("u") else 1)) - 1)
    small = float("-inf") if dtype in FLOATS else (0 if dtype.startswith("u") else -(2 ** (8 * CTYPES[dtype][1] - 1)))
    return literal(small if kind in ("max", "max2", "max_with_index") else big, dtype)


class RowReductions:
    """Block-wide combination of per-thread partials, and the per-thread folding that feeds it."""

    def __init__(self, out: Emitter):
        self.out = out

    def state(self, kind: str, values: list[Value], fast: str = "false") -> tuple[str, str, list[tuple[str, str]]]:
        """(C++ type of the partial, its value from `values`, [(field, dtype)] of the result)."""
        out = self.out
        if kind == "welford":
            out.uses.welford = True
            return "hv::Welford", f"hv::Welford{{{', '.join(out.cast(v, 'fp32') for v in values)}}}", [(".mean", "fp32"), (".m2", "fp32"), (".weight", "fp32")]
        if kind == "online_softmax_reduce":
            out.uses.softmax = True
            return "hv::SoftmaxState", f"hv::SoftmaxState{{{', '.join(out.cast(v, 'fp32') for v in values)}}}", [(".max", "fp32"), (".sum", "fp32")]
        if kind in ("max_with_index", "min_with_index"):
            out.uses.argminmax = True
            value, index = values
            vtype, itype = _concrete(value.dtype), _concrete(index.dtype)
            ctype = f"hv::ValueIndex<{out.ctype(vtype)}, {out.ctype(itype)}>"
            return ctype, f"{ctype}{{{out.cast(value, vtype)}, {out.cast(index, itype)}}}", [(".value", vtype), (".index", itype)]
        (value,) = values
        dtype = _concrete(value.dtype)
        return out.ctype(dtype), out.cast(value, dtype), [("", dtype)]

    def combiner(self, kind: str, fast: str = "false") -> str:
        if kind == "welford":
            return "hv::WelfordCombine()"
        if kind == "online_softmax_reduce":
            return f"hv::SoftmaxCombine<{fast}>()"
        if kind == "max_with_index":
            return "hv::ArgMax()"
        if kind == "min_with_index":
            return "hv::ArgMin()"
        return REDUCTIONS[kind][0] + "()"

    def identity(self, kind: str, ctype: str, fields: list[tuple[str, str]]) -> str:
        if kind == "welford":
            return "hv::Welford{0.0f, 0.0f, 0.0f}"
        if kind == "online_softmax_reduce":
            return "hv::SoftmaxState{-INFINITY, 0.0f}"
        if kind in ("max_with_index", "min_with_index"):
            (_, vtype), (_, itype) = fields
            index = literal(2 ** (8 * CTYPES[itype][1] - 1) - 1, itype)
            return f"{ctype}{{{_identity('max' if kind == 'max_with_index' else 'min', vtype)}, {index}}}"
        return _identity(kind, fields[0][1])


def _concrete(dtype: str) -> str:
    return "i32" if dtype == "int" else "fp32" if dtype == "float" else dtype


def _softmax_fast(call: ast.Call) -> str:
    flag = call.args[3] if len(call.args) > 3 else next((k.value for k in call.keywords if k.arg == "use_fast_math"), None)
    return "true" if isinstance(flag, ast.Constant) and flag.value else "false"


def _targets(stmt: ast.Assign) -> list[str]:
    target = stmt.targets[0]
    elements = target.elts if isinstance(target, ast.Tuple) else [target]
    if not all(isinstance(e, ast.Name) for e in elements):
        raise NoTwin(f"assignment to {ast.unparse(target)!r}")
    return [e.id for e in elements]


def _bind_result(out: Emitter, statements: "Statements", stmt: ast.Assign, result: str, fields: list[tuple[str, str]]) -> None:
    names = _targets(stmt)
    if len(names) != len(fields):
        raise NoTwin(f"{len(names)} names for a reduction with {len(fields)} results")
    cast = _final_cast(stmt.value)
    for name, (suffix, dtype) in zip(names, fields):
        value = Value(f"{result}{suffix}", dtype)
        if cast is not None:
            target = statements.x.dtype_of(cast)
            value = Value(out.cast(value, target), target)
        statements.store_name(name, value)


def _final_cast(value: ast.expr) -> ast.expr | None:
    """The dtype of a trailing `.to(dtype)` around a reduction, if any."""
    while isinstance(value, ast.Subscript):
        value = value.value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "to" and value.args:
        return value.args[0]
    return None


def _check_loop(loop: ast.For, after: list[ast.stmt], outer: set[str]) -> None:
    """Every accumulator a reduction loop carries must be folded by a combine that its final reduction undoes
    (sum then tl.sum, maximum then max2, welford_reduce then welford, ...): only then may each CUDA thread fold its
    own share of the row first."""
    assigned = {n for s in loop.body for n in _defines(s)}
    carried = sorted(assigned & outer)
    definitions = {}
    for stmt in loop.body:
        if isinstance(stmt, ast.Assign):
            for name in _defines(stmt):
                definitions[name] = stmt.value
    for acc in carried:
        update = definitions[acc]
        if isinstance(update, ast.Call) and _dotted(update.func) == "tl.where" and len(update.args) == 3 \
                and isinstance(update.args[2], ast.Name) and update.args[2].id == acc:
            update = update.args[1]
        kind = None
        if isinstance(update, ast.Name) and update.id in definitions:
            source = definitions[update.id]
            if isinstance(source, ast.BinOp) and acc in _names_in(source) and type(source.op) in (ast.Add, ast.Mult, ast.BitOr):
                kind = {ast.Add: "+", ast.Mult: "*", ast.BitOr: "|"}[type(source.op)]
            elif isinstance(source, ast.Call) and _dotted(source.func).split(".")[-1] in LOOP_COMBINES and acc in _names_in(source):
                kind = _dotted(source.func).split(".")[-1]
        if kind is None:
            # tuple combines: `acc_next, ... = welford_reduce(...)` then `acc = tl.where(mask, acc_next, acc)`
            for stmt in loop.body:
                if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Tuple) and isinstance(update, ast.Name) \
                        and update.id in _defines(stmt) and isinstance(stmt.value, ast.Call):
                    name = _dotted(stmt.value.func).split(".")[-1]
                    if name in LOOP_COMBINES and acc in _names_in(stmt.value):
                        kind = name
        if kind is None:
            raise NoTwin(f"accumulator {acc} is updated in a way the twin cannot split across threads")
        finals = LOOP_COMBINES[kind]
        for stmt in after:
            if acc in _uses(stmt):
                call = _reduction_call(stmt.value) if isinstance(stmt, ast.Assign) else None
                if call is None or call[0] not in finals:
                    raise NoTwin(f"accumulator {acc} is used after its loop other than by its reduction ({', '.join(finals)})")


def _translate_reduction(facts: ModuleFacts, axes: Axes, looped: bool) -> TwinSource:
    prologue, body, known = _split_prologue(facts, axes)
    shadowed = {s.targets[0].id for s in facts.body if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)} & set(facts.params)
    out, signature, launcher_args = _start(facts, shadowed)
    out.uses.reduce = True
    exprs = Expressions(out, axes)
    row_statements = Statements(out, exprs, row_level_stores=True)
    lane_statements = Statements(out, exprs)
    reductions = RowReductions(out)
    for stmt in prologue:
        row_statements.statement(stmt)
    row_name = axes.program[0]
    offset_name = next(n for n, k in axes.offsets.items() if k == 0)
    row_dtype = _index_dtype(facts, offset_name)
    body = [s for s in body if not (_defines(s) & {offset_name, row_name})]
    if any(offset_name in _uses(s) for s in body):
        raise NoTwin(f"the block offset {offset_name} is used beyond the row index")
    loops = [s for s in body if isinstance(s, ast.For)]
    if looped:
        rnumel_node = _loop_range(loops[0], axes)[1]
    else:
        rnumel_node = _persistent_numel(body, axes, facts)
    rows = exprs(facts.grid[0])
    rnumel = exprs(rnumel_node)
    out.emit(f"const int64_t hv_rows = {rows.code};")
    out.emit(f"// one thread block per row; its threads stride over the row's {ast.unparse(rnumel_node)} elements")
    out.open("for (int64_t hv_row = blockIdx.x; hv_row < hv_rows; hv_row += gridDim.x) {")
    out.declare(row_name, row_dtype, f"static_cast<{CTYPES[row_dtype][0]}>(hv_row)")
    if looped:
        _emit_looped(out, body, axes, exprs, row_statements, lane_statements, reductions)
    else:
        _emit_persistent(out, body, axes, exprs, row_statements, lane_statements, reductions, rnumel)
    out.close()
    launch_lines = [
        f"const int64_t hv_rows = {_host_expr(facts.grid[0], known, facts.params)};",
        f"const int64_t hv_rnumel = {_host_expr(rnumel_node, known, facts.params)};",
        "if (hv_rows <= 0) return;",
        "int hv_threads = 32;  // a power of two from 32 to 512, about one element per thread per pass",
        "while (hv_threads < hv_rnumel && hv_threads < 512) hv_threads *= 2;",
        "const int64_t hv_blocks = std::min<int64_t>(hv_rows, 2147483647);",
    ]
    notes = ["one thread block per row (grid-stride over rows), threads stride over the row",
             "per-thread partials combined by warp shuffles and shared memory"]
    if not looped:
        notes.append("each reduction is its own pass over the row (the row's values are recomputed, not kept in registers)")
    return _finish(facts, out, signature, launcher_args, launch_lines, "reduction", notes)


def _loop_range(loop: ast.For, axes: Axes) -> tuple[ast.expr, ast.expr]:
    call = loop.iter
    if not (isinstance(call, ast.Call) and _dotted(call.func) in ("range", "tl.range", "tl.static_range") and len(call.args) == 3):
        raise NoTwin(f"loop over {ast.unparse(call)!r}")
    start, stop, step = call.args
    if not (isinstance(start, ast.Constant) and start.value == 0 and isinstance(step, ast.Name) and step.id == axes.reduction_block):
        raise NoTwin(f"loop {ast.unparse(call)!r} is not `range(0, numel, R_BLOCK)`")
    if not isinstance(loop.target, ast.Name) or loop.orelse:
        raise NoTwin("loop target is not a name")
    return start, stop


def _persistent_numel(body: list[ast.stmt], axes: Axes, facts: ModuleFacts) -> ast.expr:
    names = _aliases(body, axes.reduction_base)
    for stmt in body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Compare) and isinstance(stmt.value.left, ast.Name) \
                and stmt.value.left.id in names and isinstance(stmt.value.ops[0], ast.Lt):
            return stmt.value.comparators[0]
    block = axes.reduction_block
    if block in facts.constexprs:
        return ast.Constant(facts.constexprs[block])
    raise NoTwin("cannot tell how long a row is")


def _emit_looped(out, body, axes, exprs, row_statements, lane_statements, reductions) -> None:
    defined: set[str] = set()
    for position, stmt in enumerate(body):
        if isinstance(stmt, ast.For):
            _check_loop(stmt, body[position + 1 :], defined)
            _, stop = _loop_range(stmt, axes)
            stop_code = exprs(stop)
            variable = stmt.target.id
            cname = out.fresh(variable)
            out.open(f"for (int32_t {cname} = 0; {cname} < {stop_code.code}; {cname} += blockDim.x) {{")
            out.bind(variable, Var(cname, "i32", len(out.scopes)))
            out.open(f"if ({cname} + static_cast<int32_t>(threadIdx.x) < {stop_code.code}) {{")
            for inner in stmt.body:
                if isinstance(inner, ast.For):
                    raise NoTwin("a loop inside a reduction loop")
                lane_statements.statement(inner)
            out.close()
            out.close()
            continue
        if _defines(stmt) == {axes.reduction_base}:
            out.declare(axes.reduction_base, "i32", "static_cast<int32_t>(threadIdx.x)")
            defined.add(axes.reduction_base)
            continue
        reduction = _reduction_call(stmt.value) if isinstance(stmt, ast.Assign) else None
        if reduction is not None:
            kind, arguments, call = reduction
            values = [exprs(a) for a in arguments]
            fast = _softmax_fast(call) if kind == "online_softmax_reduce" else "false"
            ctype, partial, fields = reductions.state(kind, values, fast)
            result = out.fresh("hv_" + kind.replace("_", ""))
            out.emit(f"const {ctype} {result} = hv::block_reduce({partial}, {reductions.combiner(kind, fast)});")
            out.bind(f" {result}", Var(result, "", len(out.scopes)))
            _bind_result(out, row_statements, stmt, result, fields)
        else:
            row_statements.statement(stmt)
        defined |= _defines(stmt)


def _emit_persistent(out, body, axes, exprs, row_statements, lane_statements, reductions, rnumel: Value) -> None:
    lane_level = {axes.reduction_base}
    for stmt in body:
        if isinstance(stmt, ast.Assign) and _reduction_call(stmt.value) is None and _uses(stmt) & lane_level:
            lane_level |= _defines(stmt)
    pending: list[ast.stmt] = []  # lane-level definitions, computed inside the passes that need them
    effects = [i for i, s in enumerate(body) if isinstance(s, ast.Expr) and _uses(s) & lane_level]
    last_effect = effects[-1] if effects else -1
    deferred: list[ast.stmt] = []

    def closure(needed: set[str]) -> list[ast.stmt]:
        chosen = []
        for stmt in reversed(pending):
            if _defines(stmt) & needed:
                chosen.append(stmt)
                needed |= _uses(stmt)
        return list(reversed(chosen))

    def lane_pass(statements_needed: list[ast.stmt], then) -> None:
        out.open(f"for (int32_t hv_r0 = 0; hv_r0 < {rnumel.code}; hv_r0 += blockDim.x) {{")
        out.emit("const int32_t hv_r = hv_r0 + static_cast<int32_t>(threadIdx.x);")
        out.open(f"if (hv_r < {rnumel.code}) {{")
        out.declare(axes.reduction_base, "i32", "hv_r")
        for stmt in statements_needed:
            lane_statements.statement(stmt)
        then()
        out.close()
        out.close()

    for position, stmt in enumerate(body):
        if _defines(stmt) == {axes.reduction_base}:
            continue
        reduction = _reduction_call(stmt.value) if isinstance(stmt, ast.Assign) else None
        if reduction is not None:
            kind, arguments, call = reduction
            fast = _softmax_fast(call) if kind == "online_softmax_reduce" else "false"
            needed = set().union(*(_names_in(a) for a in arguments))
            start = len(out.lines)
            partial = out.fresh("hv_partial")
            holder = {}

            def fold() -> None:
                values = [exprs(a) for a in arguments]
                ctype, value, fields = reductions.state(kind, values, fast)
                holder.update(ctype=ctype, fields=fields)
                out.emit(f"{partial} = {reductions.combiner(kind, fast)}({partial}, {value});")

            lane_pass(closure(needed), fold)
            identity = reductions.identity(kind, holder["ctype"], holder["fields"])
            out.lines.insert(start, "    " * out.indent + f"{holder['ctype']} {partial} = {identity};")
            out.bind(f" {partial}", Var(partial, "", len(out.scopes)))
            result = out.fresh("hv_" + kind.replace("_", ""))
            out.emit(f"const {holder['ctype']} {result} = hv::block_reduce({partial}, {reductions.combiner(kind, fast)});")
            out.bind(f" {result}", Var(result, "", len(out.scopes)))
            _bind_result(out, row_statements, stmt, result, holder["fields"])
            continue
        if _defines(stmt) & lane_level:
            pending.append(stmt)
            continue
        if isinstance(stmt, ast.Expr) and _uses(stmt) & lane_level:
            deferred.append(stmt)
            if position == last_effect:
                lane_pass(closure(set().union(*(_uses(s) for s in deferred))) + deferred, lambda: None)
            continue
        row_statements.statement(stmt)
