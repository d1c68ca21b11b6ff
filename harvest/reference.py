"""Eager PyTorch reference for one Triton kernel, built from its own `# Graph fragment:` comment.

`build_reference(kernel, launch, graph)` returns the source of `def reference(in_ptr0, ...) -> dict[str, Tensor]`
that recomputes the kernel's stored outputs with `torch.ops.aten.*`, so `--check` compares the kernel against
something that does not trust the kernel.

The hard part is binding fragment names to kernel parameters:

* inputs: a parameter the kernel reads (`tl.load(in_ptrK ...)` before any store to it) is bound to a fragment
  placeholder by name (the launch passes `primals_3` and the fragment reads `%primals_3`), else by tensor meta
  (the launch passes `buf5`, an allocation whose shape/stride/dtype is that of `%addmm`), else by order when the
  remaining parameters and placeholders agree pairwise (Inductor numbers `in_ptrK` in read order).
* outputs: the value a parameter finally holds (its last `tl.store`) is matched to a fragment node by the bound
  buffer's meta, narrowed by the stored expression's outermost operation (`libdevice.rsqrt` -> aten.rsqrt,
  `sum(..) / n` -> a mean), preferring nodes named in `return`.

Whatever cannot be bound without guessing is reported in `unchecked` with a reason; this module never raises.
"""

from __future__ import annotations

import ast
import itertools
import keyword
import re
from dataclasses import dataclass, field

from harvest.model import FxNode, Graph, Kernel, Launch, TensorMeta
from harvest.ops import SAME_VALUES, torch_ops_target
from harvest.syntax import dotted, kernel_ast


@dataclass(frozen=True)
class Reference:
    """The generated eager reference of one kernel launch, and what it can and cannot check."""

    source: str  # `def reference(...)` source, formatted; compiles
    params: tuple[str, ...]  # kernel parameters it takes, in kernel order
    checked: tuple[str, ...]  # output parameters whose expected value it returns
    unchecked: tuple[tuple[str, str], ...]  # (output parameter, reason)
    warnings: tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------------------------------
# Reading the Triton kernel: which parameters it loads, what it finally stores, and what that value's top op is.


@dataclass
class _Access:
    first: dict[str, str] = field(default_factory=dict)  # param -> "load" | "store" (first access in source order)
    last_store: dict[str, ast.expr] = field(default_factory=dict)  # param -> value of its last tl.store
    assigns: dict[str, ast.expr | None] = field(default_factory=dict)  # name -> last assigned expr (None: unknown)
    stored: set[str] = field(default_factory=set)  # params written by tl.store or an atomic
    loaded: set[str] = field(default_factory=set)  # params read by tl.load or an atomic


def _base_param(node: ast.expr, params: set[str]) -> str | None:
    """`in_ptr0 + (x0 + 16*r0_1)` -> "in_ptr0" (the leftmost name of a pointer expression)."""
    while isinstance(node, ast.BinOp):
        node = node.left
    if isinstance(node, ast.Name) and node.id in params:
        return node.id
    return None


class _KernelScanner(ast.NodeVisitor):
    def __init__(self, params: set[str]):
        self.params = params
        self.access = _Access()

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        for target in node.targets:
            if isinstance(target, ast.Name):
                self.access.assigns[target.id] = node.value
            elif isinstance(target, ast.Tuple):
                for elt in target.elts:
                    if isinstance(elt, ast.Name):
                        self.access.assigns[elt.id] = None

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.generic_visit(node)
        if isinstance(node.target, ast.Name):
            self.access.assigns[node.target.id] = node.value

    def visit_Call(self, node: ast.Call) -> None:
        # Arguments first: `tl.store(p, tl.load(q))` reads q before it writes p.
        self.generic_visit(node)
        func = dotted(node.func)
        if func.startswith("tl.atomic_") and node.args:
            param = _base_param(node.args[0], self.params)
            if param is not None:
                self.access.stored.add(param)
                self.access.loaded.add(param)
            return
        if func not in ("tl.load", "tl.store") or not node.args:
            return
        param = _base_param(node.args[0], self.params)
        if param is None:
            return
        (self.access.loaded if func == "tl.load" else self.access.stored).add(param)
        kind = "load" if func == "tl.load" else "store"
        self.access.first.setdefault(param, kind)
        if kind == "store" and len(node.args) >= 2:
            self.access.last_store[param] = node.args[1]


def _scan_kernel(kernel: Kernel) -> _Access:
    tree = kernel_ast(kernel.source)
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    named = [f for f in functions if f.name == kernel.name]
    function = named[0] if named else functions[-1]
    params = {a.arg for a in function.args.args}
    scanner = _KernelScanner(params)
    for statement in function.body:
        scanner.visit(statement)
    return scanner.access


_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv", ast.Mod: "mod"}
_CMPOPS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
# Calls that only move or convert a value; the operation that made it is underneath.
_TRANSPARENT_CALLS = {"tl.broadcast_to", "tl.reshape", "tl.view"}


def _top_op(expr: ast.expr | None, assigns: dict[str, ast.expr | None]) -> str | None:
    """The outermost real operation of a stored value: "add", "rsqrt", "sum", "mean", ... (None when unknown)."""
    seen: set[str] = set()
    while expr is not None:
        if isinstance(expr, ast.Name):
            if expr.id in seen or expr.id not in assigns:
                return None
            seen.add(expr.id)
            expr = assigns[expr.id]
        elif isinstance(expr, ast.Subscript):
            expr = expr.value
        elif isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Attribute) and func.attr == "to":
                expr = func.value
            elif dotted(func) in _TRANSPARENT_CALLS and expr.args:
                expr = expr.args[0]
            elif isinstance(func, ast.Attribute):
                return func.attr
            else:
                return None
        elif isinstance(expr, ast.BinOp):
            op = _BINOPS.get(type(expr.op))
            # Inductor writes a mean as `sum / n`; tell it apart from a plain division.
            if op == "div" and _top_op(expr.left, assigns) == "sum":
                return "mean"
            return op
        elif isinstance(expr, ast.Compare) and len(expr.ops) == 1:
            right = expr.comparators[0]
            if isinstance(expr.ops[0], ast.Eq) and isinstance(right, ast.Constant) and right.value in (0, False):
                return "eq0"  # also how Inductor writes a bool's bitwise_not/logical_not: `tmp1 == 0`
            return _CMPOPS.get(type(expr.ops[0]))
        elif isinstance(expr, ast.UnaryOp):
            return "neg" if isinstance(expr.op, ast.USub) else None
        else:
            return None
    return None


# Triton top op -> the aten op families (or getitem tags) that can produce it.
_OP_FAMILIES: dict[str, set[str]] = {
    "add": {"add"},
    "sub": {"sub", "rsub"},
    "mul": {"mul"},
    "div": {"div"},
    "mean": {"mean", "var_mean[1]"},
    "neg": {"neg"},
    "rsqrt": {"rsqrt"},
    "sqrt": {"sqrt"},
    "exp": {"exp"},
    "log": {"log"},
    "erf": {"erf"},
    "tanh": {"tanh"},
    "sigmoid": {"sigmoid"},
    "abs": {"abs"},
    "sum": {"sum"},
    "max2": {"amax", "max"},
    "min2": {"amin", "min"},
    "any": {"any"},
    "where": {"where"},
    "maximum": {"relu", "maximum", "clamp_min"},
    "minimum": {"minimum", "clamp_max"},
    "eq": {"eq"},
    "eq0": {"eq", "bitwise_not", "logical_not"},
    "ne": {"ne"},
    "lt": {"lt"},
    "le": {"le"},
    "gt": {"gt"},
    "ge": {"ge"},
}


# ---------------------------------------------------------------------------------------------------------------
# Reading FX argument text: `(%arg0_1, [2], 1e-05)`, `{correction: 0, keepdim: True, device: cuda:0}`.


@dataclass(frozen=True)
class _Ref:
    name: str  # an FX node: `%name`


@dataclass(frozen=True)
class _Code:
    text: str  # Python source of a literal or a size expression
    symbols: tuple[str, ...] = ()  # size symbols it uses (s0, ks0)


@dataclass(frozen=True)
class _Device:
    pass


_Value = _Ref | _Code | _Device | list | tuple | dict

_TOKEN = re.compile(
    r"\s*(?:(?P<ref>%[A-Za-z_]\w*)|(?P<num>\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)"
    r"|(?P<str>'[^']*'|\"[^\"]*\")|(?P<ident>[A-Za-z_][\w.]*)|(?P<punct>//|\*\*|[\[\](){}:,+\-*/]))"
)
_DEVICE_TYPES = {"cpu", "cuda", "xpu", "mps", "meta", "hip", "mtia"}
_SPECIAL_FLOATS = {"inf": 'float("inf")', "nan": 'float("nan")'}
_PLAIN_NAMES = {"True", "False", "None"}


class FxArgError(ValueError):
    """The argument text of a fragment node is not in a form this module understands."""


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise FxArgError(f"cannot read {text[pos:pos + 20]!r}")
        kind = match.lastgroup or ""
        tokens.append((kind, match.group(kind)))
        pos = match.end()
    return tokens


class _FxArgParser:
    def __init__(self, text: str):
        self.tokens = _tokenize(text)
        self.pos = 0

    def peek(self, offset: int = 0) -> tuple[str, str]:
        index = self.pos + offset
        return self.tokens[index] if index < len(self.tokens) else ("end", "")

    def take(self) -> tuple[str, str]:
        token = self.peek()
        self.pos += 1
        return token

    def expect(self, text: str) -> None:
        kind, value = self.take()
        if value != text:
            raise FxArgError(f"expected {text!r}, found {value!r}")

    def sequence(self, close: str) -> list[_Value]:
        items: list[_Value] = []
        while self.peek()[1] != close:
            items.append(self.value())
            if self.peek()[1] == ",":
                self.take()
            elif self.peek()[1] != close:
                raise FxArgError(f"expected ',' or {close!r}, found {self.peek()[1]!r}")
        self.take()
        return items

    def mapping(self, close: str) -> dict[str, _Value]:
        items: dict[str, _Value] = {}
        while self.peek()[1] != close:
            kind, key = self.take()
            if kind not in ("ident", "str"):
                raise FxArgError(f"expected a keyword name, found {key!r}")
            self.expect(":")
            items[key.strip("'\"")] = self.value()
            if self.peek()[1] == ",":
                self.take()
        self.take()
        return items

    def value(self) -> _Value:
        kind, text = self.peek()
        if text == "[":
            self.take()
            return self.sequence("]")
        if text == "(":
            self.take()
            return tuple(self.sequence(")"))
        if text == "{":
            self.take()
            return self.mapping("}")
        if kind == "ident" and text in _DEVICE_TYPES:
            self.take()
            if self.peek()[1] == ":" and self.peek(1)[0] == "num":
                self.take()
                self.take()
            return _Device()
        if kind == "ref" and self.peek(1)[1] in (",", ")", "]", "}", ""):
            self.take()
            return _Ref(text[1:])
        return self.scalar_expression()

    def scalar_expression(self) -> _Code:
        parts: list[str] = []
        symbols: list[str] = []
        depth = 0
        while True:
            kind, text = self.peek()
            if kind == "end" or (depth == 0 and text in (",", ")", "]", "}")):
                break
            self.take()
            if text == "(":
                depth += 1
            elif text == ")":
                depth -= 1
            if kind == "ident":
                if text in _SPECIAL_FLOATS:
                    text = _SPECIAL_FLOATS[text]
                elif text.startswith("torch.") or text in _PLAIN_NAMES:
                    pass
                elif "." not in text and not keyword.iskeyword(text):
                    symbols.append(text)
                else:
                    raise FxArgError(f"unknown name {text!r}")
            elif kind == "ref":
                raise FxArgError(f"node {text} inside an expression")
            parts.append(text)
        if not parts:
            raise FxArgError("empty value")
        joined = " ".join(parts) if len(parts) > 1 else parts[0]
        # `- 1` -> `-1`: unary minus reads better attached.
        joined = re.sub(r"^- (?=\S)", "-", joined)
        return _Code(joined, tuple(dict.fromkeys(symbols)))


def parse_fx_args(text: str) -> tuple[_Value, ...]:
    """`%arg0_1, [2], 1e-05` (the inside of `args = (...)`) -> values. Raises FxArgError."""
    parser = _FxArgParser(text + ")")
    return tuple(parser.sequence(")"))


def parse_fx_kwargs(text: str) -> dict[str, _Value]:
    """`correction: 0, keepdim: True` (the inside of `kwargs = {...}`) -> values by name. Raises FxArgError."""
    parser = _FxArgParser(text + "}")
    return parser.mapping("}")


def _refs(value: _Value) -> list[str]:
    if isinstance(value, _Ref):
        return [value.name]
    if isinstance(value, (list, tuple)):
        return [name for item in value for name in _refs(item)]
    if isinstance(value, dict):
        return [name for item in value.values() for name in _refs(item)]
    return []


def _symbols(value: _Value) -> list[str]:
    if isinstance(value, _Code):
        return list(value.symbols)
    if isinstance(value, (list, tuple)):
        return [s for item in value for s in _symbols(item)]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _symbols(item)]
    return []


def _render(value: _Value, names: dict[str, str]) -> str:
    if isinstance(value, _Ref):
        return names[value.name]
    if isinstance(value, _Code):
        return value.text
    if isinstance(value, _Device):
        return "device"
    if isinstance(value, list):
        return "[" + ", ".join(_render(v, names) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(_render(v, names) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    raise FxArgError(f"cannot render {value!r}")


# ---------------------------------------------------------------------------------------------------------------
# The fragment as a small program.


@dataclass(frozen=True)
class _Op:
    name: str
    target: str  # normalized: "torch.ops.aten.add.Tensor" or "operator.getitem"
    args: tuple[_Value, ...]
    kwargs: dict[str, _Value]
    meta: TensorMeta | None
    inferred: bool = False  # not in the fragment; deduced (getitem = var_mean[0])

    @property
    def family(self) -> str:
        if self.target == "operator.getitem":
            return ""
        parts = self.target.split(".")
        return parts[3] if len(parts) > 3 else parts[-1]


# Ops that return a tuple, with how many outputs.
_TUPLE_ARITY = {"var_mean": 2, "max": 2, "min": 2, "sort": 2, "topk": 2, "aminmax": 2, "native_layer_norm": 3}


def _target_exists(target: str) -> bool:
    """Whether `torch.ops.<ns>.<op>.<overload>` resolves in this torch."""
    if target in ("operator.getitem", "torch.ops.prims.fma.default"):
        return True
    parts = target.split(".")
    if len(parts) != 5 or parts[:2] != ["torch", "ops"]:
        return False
    try:
        import torch

        packet = getattr(getattr(torch.ops, parts[2]), parts[3])
        getattr(packet, parts[4])
    except (AttributeError, RuntimeError, ImportError):
        return False
    return True


@dataclass
class _Fragment:
    ops: dict[str, _Op] = field(default_factory=dict)  # defined nodes in order (call_function + inferred getitems)
    placeholders: dict[str, FxNode] = field(default_factory=dict)
    broken: dict[str, str] = field(default_factory=dict)  # node name -> why it cannot be rendered
    returns: tuple[str, ...] = ()
    warnings: list[str] = field(default_factory=list)


def _read_fragment(kernel: Kernel) -> _Fragment:
    fragment = _Fragment(returns=tuple(kernel.comment.fragment_return))
    for node in kernel.comment.fragment:
        if node.op in ("placeholder", "PlaceHolder"):
            fragment.placeholders.setdefault(node.name, node)
            continue
        if node.op != "call_function":
            fragment.broken[node.name] = f"{node.name} is a {node.op} node"
            continue
        target = torch_ops_target(node.target)
        # A node that cannot be rendered stays in `ops` (its meta still identifies the output that stores it).
        fragment.ops[node.name] = _Op(node.name, target, (), {}, node.meta)
        if not _target_exists(target):
            fragment.broken[node.name] = f"{node.name} calls {node.target}, which this torch does not have"
            continue
        try:
            args = parse_fx_args(node.args)
            kwargs = parse_fx_kwargs(node.kwargs) if node.kwargs.strip() else {}
        except FxArgError as exc:
            fragment.broken[node.name] = f"cannot read the arguments of {node.name}: {exc}"
            continue
        fragment.ops[node.name] = _Op(node.name, target, args, kwargs, node.meta)
    _infer_getitems(fragment)
    return fragment


def _getitem_index(name: str) -> int:
    return 0 if name == "getitem" else int(name.rsplit("_", 1)[1])


def _infer_getitems(fragment: _Fragment) -> None:
    """Define `getitem_K` names the fragment uses but does not define, when only one assignment is possible.

    A missing getitem is inferred only when the fragment has exactly one tuple-returning node and the indices of
    that node not yet taken are exactly as many as the missing names; they are then assigned in FX naming order
    (getitem < getitem_1 < ...), the order in which FX created them.
    """
    used = {name for op in fragment.ops.values() for value in (*op.args, *op.kwargs.values()) for name in _refs(value)}
    missing = sorted(
        (n for n in used | set(fragment.returns) if re.fullmatch(r"getitem(_\d+)?", n) and n not in fragment.ops),
        key=_getitem_index,
    )
    if not missing:
        return
    tuples = [op for op in fragment.ops.values() if op.family in _TUPLE_ARITY and op.meta is None]
    if len(tuples) != 1:
        for name in missing:
            fragment.broken.setdefault(name, f"fragment does not define {name} (no single tuple node it can come from)")
        return
    source = tuples[0]
    taken = {
        op.args[1].text
        for op in fragment.ops.values()
        if op.target == "operator.getitem" and op.args and op.args[0] == _Ref(source.name) and isinstance(op.args[1], _Code)
    }
    free = [i for i in range(_TUPLE_ARITY[source.family]) if str(i) not in taken]
    if len(free) != len(missing):
        for name in missing:
            fragment.broken.setdefault(name, f"fragment does not define {name}, and {source.name} has {len(free)} "
                                             f"unused outputs for {len(missing)} missing getitems")
        return
    ops = dict(fragment.ops)
    for name, index in zip(missing, free):
        placeholder = fragment.placeholders.get(name)
        ops[name] = _Op(name, "operator.getitem", (_Ref(source.name), _Code(str(index))), {},
                        placeholder.meta if placeholder else None, inferred=True)
        fragment.warnings.append(f"inferred {name} = {source.name}[{index}] (the fragment uses it but does not define it)")
    # Keep definition order valid: inferred getitems go right after their tuple node.
    ordered: dict[str, _Op] = {}
    for name, op in fragment.ops.items():
        ordered[name] = op
        if name == source.name:
            for m in missing:
                ordered[m] = ops[m]
    fragment.ops = ordered


def _family(fragment: _Fragment, name: str) -> str:
    """The op family that made a node's value, looking through views and conversions."""
    seen: set[str] = set()
    while name in fragment.ops and name not in seen:
        seen.add(name)
        op = fragment.ops[name]
        if op.target == "operator.getitem":
            source = op.args[0]
            if isinstance(source, _Ref) and source.name in fragment.ops and isinstance(op.args[1], _Code):
                return f"{fragment.ops[source.name].family}[{op.args[1].text}]"
            return ""
        if op.family in SAME_VALUES and op.args and isinstance(op.args[0], _Ref):
            name = op.args[0].name
            continue
        return op.family
    return ""


# ---------------------------------------------------------------------------------------------------------------
# Metas.


def _numel(shape: tuple[int | str, ...]) -> int | None:
    total = 1
    for size in shape:
        if not isinstance(size, int):
            return None
        total *= size
    return total


def _norm_dtype(dtype: str) -> str:
    return {"bool": "bool", "b8": "bool"}.get(dtype, dtype)


def _same_shape(a: TensorMeta, b: TensorMeta) -> bool:
    return tuple(str(s) for s in a.shape) == tuple(str(s) for s in b.shape) and _norm_dtype(a.dtype) == _norm_dtype(b.dtype)


def _same_numel(a: TensorMeta, b: TensorMeta) -> bool:
    numel = _numel(a.shape)
    return numel is not None and numel == _numel(b.shape) and _norm_dtype(a.dtype) == _norm_dtype(b.dtype)


def _buffer_meta(graph: Graph, name: str | None) -> TensorMeta | None:
    buffer = graph.buffers.get(name or "")
    return buffer.meta if buffer else None


def _arg_buffer(expr: str, buffer: str | None) -> str | None:
    """The tensor a launch argument names: `buf0`, or `arg3_1` in `arg3_1.item()`."""
    if buffer:
        return buffer
    try:
        node = ast.parse(expr, mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "item":
        node = node.func.value
    return node.id if isinstance(node, ast.Name) else None


# ---------------------------------------------------------------------------------------------------------------
# Binding and generation.


@dataclass
class _Binding:
    inputs: dict[str, str] = field(default_factory=dict)  # fragment name -> kernel param
    input_meta: dict[str, TensorMeta | None] = field(default_factory=dict)  # fragment name -> its placeholder meta
    scalar_inputs: set[str] = field(default_factory=set)  # params passed by value (`arg3_1.item()`)
    outputs: dict[str, str] = field(default_factory=dict)  # param -> fragment name
    unchecked: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    partial_outputs: dict[str, _Split] = field(default_factory=dict)  # param -> how it holds outputs[param] in parts
    from_partials: dict[str, tuple[str, _Split]] = field(default_factory=dict)  # node -> (partial input, split)


# ---------------------------------------------------------------------------------------------------------------
# Split reductions. Inductor splits a long reduction in two kernels: stage 1 reduces chunks and stores a partial
# buffer (`buf9` f32[1, 512, 16]: the node's shape plus a split dimension, and no FX node of its own); stage 2
# reduces that buffer over the split dimension into the node (`sum_3` f32[1, 512]).

# Triton top op of the stored value -> the aten family of the reduction node and the torch reduction that
# combines partials exactly like the whole (sum of sums, max of maxes). Welford/mean/var partials are not here.
_SPLIT_REDUCTIONS = {"sum": "sum", "max2": "amax", "min2": "amin"}
_SPLIT_TARGETS = {"sum": "torch.ops.aten.sum.dim_IntList", "amax": "torch.ops.aten.amax.default",
                  "amin": "torch.ops.aten.amin.default"}

# Aten reductions: a buffer of one's shape that a kernel reads is its accumulator, not a split partial.
_REDUCTION_FAMILIES = {"sum", "mean", "amax", "amin", "max", "min", "var", "var_mean", "std", "std_mean", "prod",
                       "any", "all", "argmax", "argmin", "logsumexp", "native_layer_norm"}

_SPLIT_WORDS = {"sum": ("partial sums", "sums"), "amax": ("partial maxima", "takes the max of"),
                "amin": ("partial minima", "takes the min of")}


@dataclass(frozen=True)
class _Split:
    reduce: str  # "sum" | "amax" | "amin"
    dims: tuple[int, ...]  # the partial buffer's split dimensions
    terms: int | None = None  # how many values the whole reduction combines (stage 1; sets the sum's tolerance)


def _split_dims(partial: tuple[int | str, ...], whole: tuple[int | str, ...]) -> tuple[int, ...] | None:
    """The dimensions of `partial` that, removed, leave `whole`; None when there is no such set or several."""
    extra = len(partial) - len(whole)
    if extra < 1:
        return None
    wanted = tuple(map(str, whole))
    found = [dims for dims in itertools.combinations(range(len(partial)), extra)
             if tuple(str(s) for i, s in enumerate(partial) if i not in dims) == wanted]
    return found[0] if len(found) == 1 else None


def _reductions(fragment: _Fragment, family: str | None = None) -> list[str]:
    """Nodes that are sums/amaxes/amins (of `family` when given), in fragment order."""
    return [n for n, op in fragment.ops.items() if op.family in _SPLIT_TARGETS and (family is None or op.family == family)
            and op.meta is not None and n not in fragment.broken]


def _partial_of(fragment: _Fragment, meta: TensorMeta | None, family: str | None = None) -> dict[str, tuple[int, ...]]:
    """Reduction nodes a buffer of `meta` can be the split partial of, with the split dimensions of each."""
    found: dict[str, tuple[int, ...]] = {}
    if meta is None:
        return found
    for name in _reductions(fragment, family):
        node = fragment.ops[name].meta
        dims = _split_dims(meta.shape, node.shape)
        if dims is not None and _norm_dtype(node.dtype) == _norm_dtype(meta.dtype):
            found[name] = dims
    return found


def _reduction_terms(fragment: _Fragment, name: str) -> int | None:
    """How many values the reduction node `name` combines into each of its outputs (None when unknown)."""
    op = fragment.ops[name]
    source = op.args[0] if op.args else None
    if not isinstance(source, _Ref):
        return None
    node = fragment.ops.get(source.name) or fragment.placeholders.get(source.name)
    whole = _numel(node.meta.shape) if node is not None and node.meta is not None else None
    part = _numel(op.meta.shape) if op.meta is not None else None
    if not whole or not part or whole % part:
        return None
    return whole // part


def _bind_inputs(kernel: Kernel, launch: Launch, graph: Graph, access: _Access, fragment: _Fragment,
                 binding: _Binding) -> None:
    by_param = {arg.param: arg for arg in launch.args}
    reads: list[str] = []
    for param in kernel.params:
        kind = kernel.signature.get(param, "")
        if access.first.get(param) == "load" or (param.startswith("in_ptr") and kind and not kind.startswith("*")
                                                 and kind != "constexpr"):
            reads.append(param)
    used = {ref for op in fragment.ops.values() for v in (*op.args, *op.kwargs.values()) for ref in _refs(v)}
    # Names the kernel can read: placeholders, and nodes the ops use without defining (`%div` in a backward
    # graph is the forward's output, passed under that name).
    readable = set(fragment.placeholders) | (used - set(fragment.ops))
    unbound: list[str] = []
    for param in reads:
        arg = by_param.get(param)
        name = _arg_buffer(arg.expr, arg.buffer) if arg else None
        if name is not None and name in readable and name not in binding.inputs:
            binding.inputs[name] = param
        else:
            unbound.append(param)
        if not kernel.signature.get(param, "*").startswith("*"):
            binding.scalar_inputs.add(param)
    # Placeholders the kernel computes itself (also defined in the fragment) are a last resort: an in-place
    # consumer may read a node the fragment re-lists (`%add_4` placeholder and definition), but a fused
    # reduction lists its own intermediates as placeholders too.
    # Only placeholders some op uses can feed the reference; the rest (reduction buffers like %buf0) are noise.
    external = [n for n in fragment.placeholders if n not in binding.inputs and n in used and n not in fragment.ops]
    internal = [n for n in fragment.placeholders if n not in binding.inputs and n in used and n in fragment.ops]
    # A stage-2 kernel reads a split-reduction partial (`%buf9`) that no op uses: bind it too, so the reduction
    # node can be computed from it.
    partials = [n for n in fragment.placeholders if n not in binding.inputs and n not in used and n not in fragment.ops
                and _partial_of(fragment, fragment.placeholders[n].meta)]
    metas = {param: _buffer_meta(graph, _arg_buffer(by_param[param].expr, by_param[param].buffer))
             for param in unbound if param in by_param}

    def matches(param: str, names: list[str], same) -> list[str]:
        meta = metas.get(param)
        return [n for n in names if meta is not None and fragment.placeholders[n].meta is not None
                and same(fragment.placeholders[n].meta, meta)]

    remaining = list(unbound)
    for pool in (external, internal, partials):
        for same in (_same_shape, _same_numel):
            for param in list(remaining):
                free = [n for n in pool if n not in binding.inputs]
                found = matches(param, free, same)
                others = [p for p in remaining if p != param and set(matches(p, free, same)) & set(found)]
                if len(found) == 1 and not others:
                    binding.inputs[found[0]] = param
                    remaining.remove(param)
        # Several parameters with the same meta: Inductor numbers in_ptrK in the order the fragment reads them.
        free = [n for n in pool if n not in binding.inputs]
        if remaining and len(free) == len(remaining) and all(
            matches(p, [n], _same_shape) for p, n in zip(remaining, free)
        ):
            for param, name in zip(remaining, free):
                binding.inputs[name] = param
                binding.warnings.append(f"bound {param} to {name} by read order (same meta as another input)")
            remaining = []
    for name in binding.inputs:
        placeholder = fragment.placeholders.get(name)
        binding.input_meta[name] = placeholder.meta if placeholder else None
    for param in remaining:
        binding.warnings.append(f"kernel reads {param} ({by_param[param].expr if param in by_param else '?'}), "
                                f"which matches no fragment placeholder")


def _bind_outputs(kernel: Kernel, launch: Launch, graph: Graph, access: _Access, fragment: _Fragment,
                  binding: _Binding) -> None:
    by_param = {arg.param: arg for arg in launch.args}
    returns = set(fragment.returns)
    opaque = [r for r in fragment.returns if r not in fragment.ops]
    ambiguous: dict[str, tuple[str, ...]] = {}  # param -> returned nodes it could be, in return order
    split: dict[str, dict[str, tuple[int, ...]]] = {}  # param -> reduction nodes it may hold partials of
    for param in kernel.params:
        if param not in access.last_store:
            continue
        arg = by_param.get(param)
        buffer = _arg_buffer(arg.expr, arg.buffer) if arg else None
        meta = _buffer_meta(graph, buffer)
        if meta is None:
            binding.unchecked[param] = f"no shape/stride/dtype is known for {param} ({arg.expr if arg else 'unbound'})"
            continue
        candidates = [n for n, op in fragment.ops.items() if op.meta is not None and _same_shape(op.meta, meta)]
        if not candidates:
            candidates = [n for n, op in fragment.ops.items() if op.meta is not None and _same_numel(op.meta, meta)]
        top = _top_op(access.last_store[param], access.assigns)
        by_op = [n for n in candidates if _family(fragment, n) in _OP_FAMILIES.get(top or "", set())]
        returned = [n for n in (by_op or candidates) if n in returns]
        compatible_opaque = [
            r for r in opaque
            if r not in fragment.placeholders or fragment.placeholders[r].meta is None
            or _same_numel(fragment.placeholders[r].meta, meta) or _same_shape(fragment.placeholders[r].meta, meta)
        ]
        chosen: str | None = None
        if len(returned) == 1 and (by_op or not compatible_opaque):
            chosen = returned[0]
        elif by_op and not returned and len(by_op) == 1 and opaque:
            # The return names a view or buffer of it (`%expand_2` for `%div`); the stored op and meta single it out.
            chosen = by_op[0]
        if chosen is not None:
            binding.outputs[param] = chosen
            continue
        pool = returned or by_op or candidates
        if buffer in opaque:
            why = f"{param} stores buffer {buffer}, which the fragment names without an FX node"
            if not candidates:
                why += " (a split-reduction partial or an internal buffer)"
        elif not candidates:
            why = f"no fragment node has the shape/dtype of {buffer} {list(meta.shape)} {meta.dtype}"
        elif len(pool) > 1 or compatible_opaque:
            names = ", ".join(dict.fromkeys(pool + compatible_opaque))
            why = f"cannot tell which of {names} {param} stores"
        else:
            why = f"{param} stores a value the fragment's return does not name"
        binding.unchecked[param] = why
        if len(returned) > 1 and not compatible_opaque:
            ambiguous[param] = tuple(returned)
        if not candidates and top in _SPLIT_REDUCTIONS:
            split[param] = _partial_of(fragment, meta, _SPLIT_REDUCTIONS[top])
    _bind_by_store_order(binding, ambiguous, fragment)
    _bind_partial_outputs(binding, split, fragment)
    seen: dict[str, list[str]] = {}
    for param, name in binding.outputs.items():
        seen.setdefault(name, []).append(param)
    for name, params in seen.items():
        if len(params) > 1:
            for param in params:
                del binding.outputs[param]
                binding.unchecked[param] = f"{' and '.join(params)} both match {name}"


def _bind_by_store_order(binding: _Binding, ambiguous: dict[str, tuple[str, ...]], fragment: _Fragment) -> None:
    """`out_ptr0`, `out_ptr1` both match `sum_7`, `sum_8` (same op, same meta): Inductor numbers out_ptrN in the
    order the fused nodes store, which is the order of the fragment's return, so pair them in that order."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for param, names in ambiguous.items():
        if param.startswith("out_ptr"):
            groups.setdefault(names, []).append(param)
    for names, params in groups.items():
        if len(names) != len(params) or any(n in binding.outputs.values() for n in names):
            continue
        params.sort(key=lambda p: int(p[len("out_ptr"):]))
        ordered = [n for n in fragment.returns if n in names]
        for param, name in zip(params, ordered):
            binding.outputs[param] = name
            del binding.unchecked[param]
            binding.warnings.append(f"bound {param} to {name} by store order ({', '.join(ordered)} look alike)")


def _bind_partial_outputs(binding: _Binding, split: dict[str, dict[str, tuple[int, ...]]], fragment: _Fragment) -> None:
    """Stage 1 of a split reduction: `out_ptr0` stores `buf9` f32[1, 512, 16], partial sums of `sum_3` f32[1, 512].

    The buffer is the node's shape plus the split dimension(s); the stored value's reduction (`tl.sum`) must be the
    node's. Several partial outputs of look-alike nodes (`sum_7`, `sum_8`, both f32[512]) pair by store order, as
    Inductor numbers out_ptrN in the order the fused nodes store, which is fragment order.
    """
    groups: dict[tuple[str, ...], list[str]] = {}
    for param, options in split.items():
        if options:
            groups.setdefault(tuple(options), []).append(param)
        else:
            binding.unchecked[param] += ("; it is a reduction's partial, but no sum/amax/amin node of the fragment has "
                                         "its shape less one set of split dimensions")
    for names, params in groups.items():
        if len(names) != len(params):
            for param in params:
                binding.unchecked[param] = (f"{param} stores split-reduction partials, but of which of "
                                            f"{', '.join(names)} cannot be told ({len(params)} partial outputs)")
            continue
        params.sort(key=lambda p: (not p.startswith("out_ptr"), int(re.sub(r"\D", "", p) or 0)))
        for param, name in zip(params, names):
            terms = _reduction_terms(fragment, name)
            if terms is None:
                binding.unchecked[param] = (f"{param} stores split-reduction partials of {name}, but how many values "
                                            f"{name} reduces is not known (a symbolic size)")
                continue
            binding.outputs[param] = name
            binding.partial_outputs[param] = _Split(fragment.ops[name].family, split[param][name], terms)
            del binding.unchecked[param]
        if len(params) > 1:
            binding.warnings.append(f"bound {', '.join(params)} to partials of {', '.join(names)} by store order "
                                    f"(look-alike split reductions)")


def _bind_partial_inputs(fragment: _Fragment, binding: _Binding) -> None:
    """Stage 2 of a split reduction: the kernel reads `buf9` f32[1, 512, 16] (no FX node) and stores `sum_3`
    f32[1, 512]; `sum_3` is then the same reduction of `buf9` over its split dimension. Only when the pairing is
    one to one: a partial that could belong to two nodes, or a node with two partials, is left alone."""
    pairs: dict[str, list[tuple[str, tuple[int, ...]]]] = {}
    # A partial buffer has no FX node: an input that a fragment op reads (mul(div, 2)) is real data, not partials.
    consumed = {ref for op in fragment.ops.values() for v in (*op.args, *op.kwargs.values()) for ref in _refs(v)}
    # A buffer with the shape of one of the fragment's reductions is that reduction's unfinished accumulator, which
    # this kernel finishes (x.mean(-1, keepdim=True).sum(): buf0 f32[4, 1] holds the row sums, the kernel divides by
    # the row length, then sums): summing it as partials of the last reduction would leave out the division.
    reduced = {(tuple(map(str, op.meta.shape)), _norm_dtype(op.meta.dtype)) for name, op in fragment.ops.items()
               if _family(fragment, name).split("[")[0] in _REDUCTION_FAMILIES and op.meta is not None}
    for name in binding.inputs:
        if name in fragment.ops or name in binding.scalar_inputs or name in consumed:
            continue
        meta = binding.input_meta.get(name)
        if meta is not None and (tuple(map(str, meta.shape)), _norm_dtype(meta.dtype)) in reduced:
            continue
        options = _partial_of(fragment, binding.input_meta.get(name))
        if len(options) == 1:
            (node, dims), = options.items()
            pairs.setdefault(node, []).append((name, dims))
    for node, found in pairs.items():
        if len(found) == 1:
            partial, dims = found[0]
            binding.from_partials[node] = (partial, _Split(fragment.ops[node].family, dims))


def _needed(name: str, fragment: _Fragment, binding: _Binding, symbols: dict[str, str], order: list[str],
            visiting: set[str]) -> str | None:
    """Add `name` and what it needs to `order`; return why it cannot be computed, or None."""
    if name in binding.inputs or name in order:
        return None
    if name in binding.from_partials:
        order.append(name)  # computed from the partial buffer the kernel reads, not from the node's own inputs
        return None
    if name in fragment.broken:
        return fragment.broken[name]
    op = fragment.ops.get(name)
    if op is None:
        if name in fragment.placeholders:
            return f"the kernel reads {name}, but no kernel parameter could be bound to it"
        return f"fragment does not define {name}"
    if name in visiting:
        return f"{name} depends on itself"
    visiting.add(name)
    for value in (*op.args, *op.kwargs.values()):
        for symbol in _symbols(value):
            if symbol not in symbols:
                return f"symbolic size {symbol} in {name} cannot be bound from the kernel's inputs"
        for ref in _refs(value):
            why = _needed(ref, fragment, binding, symbols, order, visiting)
            if why is not None:
                return why
    order.append(name)
    return None


def _identifier(name: str, taken: set[str]) -> str:
    if keyword.iskeyword(name) or name in taken or name in {"torch", "operator", "device"}:
        return name + "_"
    return name


def _dtype_text(dtype: str) -> str:
    return f"torch.{dtype}"


def _shape_text(shape: tuple[int | str, ...]) -> str:
    inner = ", ".join(str(s) for s in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


def _generate(kernel: Kernel, fragment: _Fragment, binding: _Binding, graph: Graph, launch: Launch) -> Reference:
    by_param = {arg.param: arg for arg in launch.args}
    # Size symbols: from the shapes of bound inputs first, else from integer kernel arguments passed as the symbol.
    symbols: dict[str, str] = {}
    symbol_params: list[str] = []
    for name in binding.inputs:
        meta = binding.input_meta.get(name)
        for dim, size in enumerate(meta.shape if meta else ()):
            if isinstance(size, str) and re.fullmatch(r"[A-Za-z_]\w*", size) and size not in symbols:
                symbols[size] = f"{name}.shape[{dim}]"
    for arg in launch.args:
        if arg.expr in symbols or not re.fullmatch(r"[A-Za-z_]\w*", arg.expr) or arg.param.endswith("numel"):
            continue
        if kernel.signature.get(arg.param, "").startswith("i"):
            symbols[arg.expr] = arg.param
            symbol_params.append(arg.param)

    order: list[str] = []
    checked: list[str] = []
    unchecked = dict(binding.unchecked)
    for param, name in binding.outputs.items():
        attempt = list(order)
        why = _needed(name, fragment, binding, symbols, attempt, set())
        if why is None and name in binding.inputs:
            why = f"{param} stores {name} unchanged from its input"
        if why is not None:
            unchecked[param] = why
            continue
        order = attempt
        checked.append(param)

    position = {name: index for index, name in enumerate(fragment.ops)}
    order.sort(key=position.__getitem__)  # fragment order is topological and reads like the original
    computed = [n for n in order if n not in binding.from_partials]
    used_names = {ref for n in computed for v in (*fragment.ops[n].args, *fragment.ops[n].kwargs.values())
                  for ref in _refs(v)}
    used_names |= {binding.from_partials[n][0] for n in order if n in binding.from_partials}
    used_inputs = {name: binding.inputs[name] for name in binding.inputs
                   if name in used_names or name in {binding.outputs[p] for p in checked}}
    used_symbols = {s for n in computed for v in (*fragment.ops[n].args, *fragment.ops[n].kwargs.values())
                    for s in _symbols(v)}
    params = [p for p in kernel.params if p in used_inputs.values()
              or (p in symbol_params and any(symbols[s] == p for s in used_symbols))]

    taken = set(kernel.params)
    names = {n: _identifier(n, taken) for n in [*used_inputs, *order]}
    lines = [f"def reference({', '.join(params)}):"]
    for name, param in sorted(used_inputs.items(), key=lambda item: kernel.params.index(item[1])):
        meta = binding.input_meta.get(name)
        if param in binding.scalar_inputs:
            dtype = f", dtype={_dtype_text(meta.dtype)}" if meta else ""
            lines.append(f"    {names[name]} = torch.as_tensor({param}{dtype})")
            continue
        buffer_meta = _buffer_meta(graph, _arg_buffer(by_param[param].expr, by_param[param].buffer))
        # Inductor loads fp16/bf16 values into fp32, computes in fp32 and rounds once, at the store: so does the
        # reference (rounding after every op, as eager would, makes it differ from a correct kernel).
        upcast = ".float()" if (meta and _norm_dtype(meta.dtype) in ("bfloat16", "float16")) else ""
        if meta and buffer_meta and not _same_shape(meta, buffer_meta) and _numel(meta.shape) is not None:
            lines.append(f"    {names[name]} = {param}.reshape{_shape_text(meta.shape)}{upcast}")
        else:
            lines.append(f"    {names[name]} = {param}{upcast}")
    for symbol in sorted(used_symbols):
        source = symbols[symbol]
        if "." in source:
            base, rest = source.split(".", 1)
            source = f"{names.get(base, base)}.{rest}"
        lines.append(f"    {symbol} = {source}")
    if any(isinstance(v, _Device) for n in order for v in fragment.ops[n].kwargs.values()):
        first = next((p for p in params if p not in binding.scalar_inputs and p not in symbol_params), None)
        device = f"{first}.device" if first else f'torch.device("{kernel.device_str or "cpu"}")'
        lines.append(f"    device = {device}")
    for name in order:
        op = fragment.ops[name]
        if name in binding.from_partials:
            partial, split = binding.from_partials[name]
            parts, verb = _SPLIT_WORDS[split.reduce]
            lines.append(f"    # Split reduction, stage 2: {names[partial]} holds {parts} of {names[name]} along dim "
                         f"{list(split.dims)}; the kernel {verb} them.")
            call = f"{_SPLIT_TARGETS[split.reduce]}({names[partial]}, {list(split.dims)})"
        elif op.target == "operator.getitem":
            call = f"{_render(op.args[0], names)}[{_render(op.args[1], names)}]"
        elif op.target == "torch.ops.prims.fma.default" and len(op.args) == 3:
            # Inductor's own prim (registered only once Inductor is imported): a * b + c.
            a, b, c = (_render(v, names) for v in op.args)
            call = f"torch.ops.aten.add.Tensor(torch.ops.aten.mul.Tensor({a}, {b}), {c})"
        else:
            parts = [_render(v, names) for v in op.args]
            parts += [f"{k}={_render(v, names)}" for k, v in op.kwargs.items()]
            call = f"{op.target}({', '.join(parts)})"
        lines.append(f"    {names[name]} = {call}")

    warnings = list(fragment.warnings) + binding.warnings
    results: list[str] = []
    for param in list(checked):
        name = binding.outputs[param]
        arg = by_param[param]
        meta = _buffer_meta(graph, _arg_buffer(arg.expr, arg.buffer))
        node_meta = fragment.ops[name].meta
        expr = names[name]
        split = binding.partial_outputs.get(param)
        if split is not None:
            chunks = _numel(tuple(meta.shape[d] for d in split.dims)) if meta is not None else None
            parts, verb = _SPLIT_WORDS[split.reduce]
            lines.append(f"    # Split reduction, stage 1: the kernel stores {expr} as {chunks or 'several'} {parts} "
                         f"along dim {list(split.dims)};")
            lines.append(f"    # check() {verb} them over that dim and compares with {expr} ({split.terms} values per element).")
            results.append(f'"{param}": {{"reduce": "{split.reduce}", "dims": {list(split.dims)}, '
                           f'"terms": {split.terms}, "expected": {expr}}}')
            continue
        if meta is not None and node_meta is not None:
            if tuple(map(str, node_meta.shape)) != tuple(map(str, meta.shape)):
                if _numel(node_meta.shape) is None or _numel(node_meta.shape) != _numel(meta.shape):
                    checked.remove(param)
                    unchecked[param] = (f"{name} has shape {list(node_meta.shape)} but {param} holds "
                                        f"{list(meta.shape)}")
                    continue
                expr = f"{expr}.reshape{_shape_text(meta.shape)}"
        results.append(f'"{param}": {expr}')
    lines.append("    return {" + ", ".join(results) + "}")
    source = "\n".join(lines) + "\n"
    compile(source, f"<reference of {kernel.name}>", "exec")
    ordered_unchecked = tuple((p, unchecked[p]) for p in kernel.params if p in unchecked)
    return Reference(source, tuple(params), tuple(p for p in kernel.params if p in checked), ordered_unchecked,
                     tuple(warnings))


def kernel_outputs(kernel: Kernel) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(parameters the kernel writes, those of them it never reads), in parameter order."""
    try:
        access = _scan_kernel(kernel)
    except SyntaxError:
        outputs = tuple(p for p in kernel.params if p.startswith(("out_ptr", "in_out_ptr")))
        return outputs, tuple(p for p in outputs if p.startswith("out_ptr"))
    outputs = tuple(p for p in kernel.params if p in access.stored)
    return outputs, tuple(p for p in outputs if p not in access.loaded)


def _outputs_of(kernel: Kernel, access: _Access | None) -> list[str]:
    if access is not None:
        return [p for p in kernel.params if p in access.last_store]
    return [p for p in kernel.params if p.startswith(("out_ptr", "in_out_ptr"))]


def build_reference(kernel: Kernel, launch: Launch, graph: Graph) -> Reference:
    """Eager reference of `kernel` as launched by `launch`; outputs it cannot derive are listed with a reason."""
    access: _Access | None = None
    try:
        access = _scan_kernel(kernel)
        if not kernel.comment.fragment:
            raise _NoFragment()
        fragment = _read_fragment(kernel)
        binding = _Binding()
        _bind_inputs(kernel, launch, graph, access, fragment, binding)
        _bind_outputs(kernel, launch, graph, access, fragment, binding)
        _bind_partial_inputs(fragment, binding)
        return _generate(kernel, fragment, binding, graph, launch)
    except _NoFragment:
        reason = "the kernel has no # Graph fragment comment (torch < 2.5 or a template kernel)"
    except Exception as exc:  # noqa: BLE001 - a reference is optional; the module still gets written
        reason = f"internal error building the reference: {type(exc).__name__}: {exc}"
    outputs = _outputs_of(kernel, access)
    source = "def reference():\n    return {}\n"
    return Reference(source, (), (), tuple((p, reason) for p in outputs), ())


class _NoFragment(Exception):
    pass
