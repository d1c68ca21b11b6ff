"""Readable kernels: rewrite Inductor's anonymous names (tmp17, in_ptr2, xnumel, XBLOCK...) without changing what runs.

Pipeline, pure (strings and model objects in, frozen results out, never raises):

    strip_inductor_decorators(source)     drop Inductor's runtime (decorator, driver call, imports); plain triton imports
    rename_kernel(source, context)        strip, then gather facts with a visitor, plan names, apply with a transformer

The rename is a bijection on names inside the kernel function, checked with libcst scope analysis, plus two
deletions that cannot change a result: Inductor's dead compatibility aliases (`rnumel = r0_numel`, `rindex = r0_index`
when nothing reads them) and pure aliases (`x0 = xindex`) merged into the name they copy when every read of the alias
sees the same value as the original. The scheme is documented in docs/naming.md.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import libcst as cst
import libcst.matchers as m
from libcst.metadata import FunctionScope, MetadataWrapper, ParentNodeProvider, ScopeProvider

from harvest.dtypes import SHORT_NAMES
from harvest.model import FxNode, Graph, Kernel, Launch
from harvest.ops import NOT_NAMING
from harvest.syntax import dotted_cst, kernel_trees

# ---------------------------------------------------------------------------------------------------------------------
# Public API


@dataclass(frozen=True)
class RenameContext:
    """What the model knows about one kernel that the source alone does not say."""

    kernel_name: str = ""  # readable kernel name (from kernel_names); "" derives one from the Inductor name
    # Inductor param -> (base name without `_ptr`, the launch expression it binds to: "primals_3", "buf4", "ks0")
    param_hints: tuple[tuple[str, str, str], ...] = ()
    fragment: tuple[FxNode, ...] = ()  # the kernel's `# Graph fragment:` nodes, to trace tmps back to FX nodes


@dataclass(frozen=True)
class RenameResult:
    code: str  # decorator-free `@triton.jit def <kernel_name>(...)` plus the imports it needs
    kernel_name: str
    mapping: tuple[tuple[str, str, str], ...]  # (new name, Inductor name, FX node / launch binding or "")
    params: tuple[tuple[str, str], ...]  # (Inductor param, new param) in signature order
    ok: bool
    warnings: tuple[str, ...] = ()


# Names a renamed variable may never take: they are read as globals inside Inductor kernels or mean something in Python.
RESERVED = frozenset(
    {"tl", "triton", "libdevice", "math", "tl_math", "triton_helpers", "triton_heuristics", "np", "torch"}
    | set(keyword.kwlist)
    | set(keyword.softkwlist)
    | set(dir(builtins))
)


def build_context(kernel: Kernel, launch: Launch | None, graph: Graph | None, kernel_name: str = "") -> RenameContext:
    """Collect naming hints for `kernel` from its launch (what each pointer binds to) and its graph."""
    hints: list[tuple[str, str, str]] = []
    if launch is not None:
        producers = _producers(graph) if graph is not None else {}
        inputs = set(graph.inputs) if graph is not None else set()
        for arg in launch.args:
            buffer = arg.buffer or (arg.expr if _IDENT.fullmatch(arg.expr) else None)
            base = _buffer_base(buffer, inputs, producers, graph) if buffer else ""
            hints.append((arg.param, base, arg.expr))
    return RenameContext(kernel_name=kernel_name, param_hints=tuple(hints), fragment=kernel.comment.fragment)


def kernel_names(graph: Graph) -> dict[str, str]:
    """Inductor kernel name -> readable name (`layer_norm_fwd_kernel`, `add_kernel_1`), unique within the graph."""
    names: dict[str, str] = {}
    taken: dict[str, int] = {}
    for kernel in graph.kernels:
        base = readable_kernel_name(kernel.name, kernel.comment.aten_ops, kernel.comment.source_nodes)
        count = taken.get(base, 0)
        taken[base] = count + 1
        names[kernel.name] = base if count == 0 else f"{base}_{count}"
    return names


def _parsed(source: str) -> cst.Module:
    """The kernel's libcst tree, parsed once for the whole extraction (harvest.syntax.kernel_trees)."""
    trees = kernel_trees(source)
    if trees.cst is None:
        raise trees.cst_error or ValueError("the kernel source does not parse")
    return trees.cst


def strip_inductor_decorators(source: str) -> str:
    """The kernel as a plain `@triton.jit` function with standard-Triton imports (Inductor's names kept).

    Returns `source` unchanged when it does not parse.
    """
    try:
        return _standalone(_parsed(source)).code
    except Exception:  # a kernel we cannot read stays as Inductor wrote it; callers compare and warn
        return source


def rename_kernel(source: str, context: RenameContext | None = None) -> RenameResult:
    """Rename Inductor's anonymous names in one kernel module; never raises, never returns a half-renamed kernel."""
    context = context or RenameContext()
    try:
        stripped = _standalone(_parsed(source))
    except Exception as exc:
        return _failure(source, "", f"cannot parse the kernel source: {type(exc).__name__}: {exc}")
    try:
        return _rename(stripped, context)
    except Exception as exc:  # any surprise falls back to Inductor's names, with the reason
        return _failure(stripped.code, _kernel_def(stripped).name.value if _kernel_def(stripped) else "",
                        f"rename failed, Inductor names kept: {type(exc).__name__}: {exc}")


def _failure(code: str, name: str, warning: str) -> RenameResult:
    return RenameResult(code=code, kernel_name=name, mapping=(), params=(), ok=False, warnings=(warning,))


# ---------------------------------------------------------------------------------------------------------------------
# Kernel names

_OP_WORDS = {"_to_copy": "cast", "convert_element_type": "cast"}
# Ops that together make one well-known function: (the ops that reveal it, what it absorbs, its name).
_COMPOSITES: tuple[tuple[str, frozenset[str], str], ...] = (
    ("native_layer_norm_backward", frozenset({"native_layer_norm", "mul", "sub", "sum", "add", "div"}),
     "layer_norm_bwd"),
    ("native_layer_norm", frozenset({"add", "mul", "sub", "rsqrt", "var_mean"}), "layer_norm_fwd"),
    ("_softmax_backward_data", frozenset({"mul", "sub", "neg", "fma", "sum"}), "softmax_bwd"),
    ("_log_softmax", frozenset({"amax", "sub", "exp", "log", "sum"}), "log_softmax"),
    ("_softmax", frozenset({"amax", "sub", "exp", "sum", "div", "mul", "abs", "ne", "eq", "all", "any", "where",
                            "logical_not"}), "softmax"),
    ("gelu_backward", frozenset({"gelu", "mul", "add", "exp", "erf"}), "gelu_bwd"),
    ("gelu", frozenset({"mul", "add", "erf", "tanh"}), "gelu"),
    ("native_batch_norm_backward", frozenset({"native_batch_norm"}), "batch_norm_bwd"),
    ("_native_batch_norm_legit_functional", frozenset({"add", "mul", "sub", "rsqrt", "var_mean"}), "batch_norm_fwd"),
    ("var_mean", frozenset({"sub", "mul", "add", "rsqrt"}), "var_mean"),
)
# Source-node names a user writes (torch.square, F.relu): when all of a kernel's source nodes are these, they name it.
_USER_FUNCS = frozenset(
    {"square", "sqrt", "rsqrt", "exp", "log", "abs", "relu", "gelu", "silu", "sigmoid", "tanh", "softmax",
     "log_softmax", "layer_norm", "add", "mul", "sub", "div", "pow", "neg", "sin", "cos", "mean", "sum", "amax",
     "maximum", "minimum", "where", "clamp", "erf", "dropout", "norm", "rms_norm"}
)
_KERNEL_PREFIX = re.compile(r"^triton_(?:poi|per|red|tem|for|spl|unk|fused|helper)?_?(?:fused_)?")


def readable_kernel_name(inductor_name: str, aten_ops: Sequence[str] = (), source_nodes: Sequence[str] = ()) -> str:
    """`triton_per_fused_native_layer_norm_0` + its comment -> `layer_norm_fwd_kernel` (not yet unique)."""
    ops = [op.split(".")[1] if op.startswith("aten.") else op.split(".")[-1] for op in aten_ops]
    if not ops:  # no comment: the op words sit between the prefix and the counter, joined by "_"
        middle = "_" + re.sub(r"_\d+$", "", _KERNEL_PREFIX.sub("", inductor_name)) + "_"
        middle = middle.replace("__to_copy_", "_cast_")
        for reveal, _, _ in _COMPOSITES:
            if f"_{reveal.lstrip('_')}_" in middle:
                ops.append(reveal)
                middle = middle.replace(f"_{reveal.lstrip('_')}_", "_")
        ops += [w for w in middle.split("_") if w]
    ops = [_OP_WORDS.get(op, op) for op in ops if op and op not in NOT_NAMING]
    words: list[str] = []
    absorbed: set[str] = set()
    for reveal, absorbs, name in _COMPOSITES:
        if reveal in ops and reveal not in absorbed:
            words.append(name)
            absorbed |= absorbs | {reveal}
    if not words:
        users = [re.sub(r"_\d+$", "", s) for s in source_nodes if s]
        if users and all(u in _USER_FUNCS for u in users):
            words = users[:3]
        else:
            words = list(dict.fromkeys(op.lstrip("_") for op in ops if op not in absorbed))[:3]
    words += [op.lstrip("_") for op in dict.fromkeys(ops) if op in {"sum", "amax", "mean"} and op not in absorbed
              and words and op not in words]
    base = "_".join(words) or "fused"
    base = re.sub(r"[^0-9a-zA-Z_]", "_", base).strip("_") or "fused"
    return f"{base}_kernel"


# ---------------------------------------------------------------------------------------------------------------------
# Launch bindings -> parameter hints

_IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_ANON_INPUT = re.compile(r"^(arg\d+_\d+|primals_\d+|tangents_\d+|buf\d+|s\d+|ks\d+|u\d+)$")


def _producers(graph: Graph) -> dict[str, str]:
    """Buffer -> short name of the extern op that wrote it (`buf5` -> `addmm`), following reuse views."""
    out: dict[str, str] = {}
    for call in graph.externs:
        if call.out:
            out[call.out] = call.op.split(".")[-2] if call.op.endswith((".default", ".Tensor")) else call.op.split(".")[-1]
    return out


def _buffer_base(buffer: str, inputs: set[str], producers: dict[str, str], graph: Graph | None) -> str:
    """A readable base name for what a launch argument binds to, or "" when nothing better than a role is known."""
    seen: set[str] = set()
    name = buffer
    while name and name not in seen:  # follow `buf14 = buf12` reuse chains to where the data came from
        seen.add(name)
        if name in producers:
            return _identifier(producers[name])
        if name.startswith("tangents_"):
            return "grad"
        if name in inputs and not _ANON_INPUT.match(name):
            # dynamo's placeholder names: l_self_modules_ln_parameters_weight_ -> ln_weight, l_x_ -> x
            cleaned = re.sub(r"^l_(self_)?", "", name).strip("_")
            cleaned = re.sub(r"(modules|parameters|buffers)_", "", cleaned)
            return _identifier(cleaned)
        buf = graph.buffers.get(name) if graph is not None else None
        name = buf.base if buf is not None and buf.base else ""
    return ""


def _identifier(text: str) -> str:
    text = re.sub(r"[^0-9a-zA-Z_]", "_", text).strip("_")
    return text if text and not text[0].isdigit() else ""


# ---------------------------------------------------------------------------------------------------------------------
# Standalone: Inductor runtime out, plain triton in

_INDUCTOR_RUNTIME = re.compile(r"^torch\._inductor\.runtime(\.|$)")


def _kernel_def(module: cst.Module) -> cst.FunctionDef | None:
    """The kernel: the module-level def Inductor decorated with a heuristic, else the last `@triton.jit` def."""
    defs = [s for s in module.body if isinstance(s, cst.FunctionDef)]
    for d in defs:
        if any(dotted_cst(_decorator_callee(dec)).startswith("triton_heuristics.") for dec in d.decorators):
            return d
    jitted = [d for d in defs if any(dotted_cst(_decorator_callee(dec)) == "triton.jit" for dec in d.decorators)]
    return jitted[-1] if jitted else (defs[-1] if defs else None)


def _decorator_callee(dec: cst.Decorator) -> cst.BaseExpression:
    return dec.decorator.func if isinstance(dec.decorator, cst.Call) else dec.decorator


class _Standalone(cst.CSTTransformer):
    """Drop Inductor's heuristic decorator and CPU-driver call; `tl_math.f` -> `tl.math.f`; inline promote_to_tensor."""

    def __init__(self, kernel: str) -> None:
        self.kernel = kernel

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        if original_node.name.value != self.kernel:
            return updated_node
        jit = [d for d in updated_node.decorators if dotted_cst(_decorator_callee(d)) == "triton.jit"]
        if not jit:
            jit = [cst.Decorator(decorator=cst.parse_expression("triton.jit"))]
        return updated_node.with_changes(decorators=jit[:1])

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
        if m.matches(updated_node, m.SimpleStatementLine(body=[m.Expr(m.Call(
                func=m.Attribute(value=m.Name("triton_helpers"), attr=m.Name("set_driver_to_cpu") | m.Name("set_driver_to_gpu"))))])):
            return cst.RemoveFromParent()
        return updated_node

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        # torch's triton_compat binds `math` to `tl.math` on every triton with `triton.language.extra.libdevice`
        if m.matches(updated_node, m.Attribute(value=m.Name("tl_math"))):
            return updated_node.with_changes(value=cst.parse_expression("tl.math"))
        return updated_node

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        # triton_helpers.promote_to_tensor(x) is defined as `x + tl.zeros((1,), tl.int1)`: the same ops, inline
        if m.matches(updated_node, m.Call(func=m.Attribute(value=m.Name("triton_helpers"),
                                                           attr=m.Name("promote_to_tensor")), args=[m.Arg(keyword=None)])):
            arg = updated_node.args[0].value
            zeros = cst.parse_expression("tl.zeros((1,), tl.int1)")
            return cst.BinaryOperation(left=arg, operator=cst.Add(), right=zeros,
                                       lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return updated_node


class _Imports(cst.CSTTransformer):
    """Inductor's runtime imports -> plain triton ones; drop what nothing uses any more."""

    def __init__(self, used: set[str]) -> None:
        self.used = used

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.BaseStatement | cst.RemovalSentinel:
        if len(updated_node.body) != 1 or not isinstance(updated_node.body[0], cst.ImportFrom):
            return updated_node
        imp = updated_node.body[0]
        module = dotted_cst(imp.module) if imp.module else ""
        if not _INDUCTOR_RUNTIME.match(module) or isinstance(imp.names, cst.ImportStar):
            return updated_node
        lines: list[str] = []
        kept: list[str] = []
        for alias in imp.names:
            name = dotted_cst(alias.name)
            bound = alias.asname.name.value if alias.asname else name  # type: ignore[union-attr]
            if bound not in self.used:
                continue
            if name == "libdevice" and module == "torch._inductor.runtime.triton_helpers":
                lines.append("from triton.language.extra import libdevice")  # the object triton_compat re-exports
            elif name == "math" and module == "torch._inductor.runtime.triton_helpers":
                lines.append(f"{bound} = tl.math" if bound != "math" else "from triton.language import math")
            else:
                kept.append(f"{name} as {bound}" if bound != name else name)
        if kept:
            lines.insert(0, f"from {module} import {', '.join(kept)}")
        if not lines:
            return cst.RemoveFromParent()
        return cst.FlattenSentinel([cst.parse_statement(line) for line in lines])


def _global_reads(module: cst.Module) -> set[str]:
    """Every name read anywhere in the module (imports are kept only for these).

    The names in load context of Python's own tree of the code: the same set as the accesses of libcst's
    ScopeProvider, at a tenth of the cost (resolving scopes was the largest single item of a render's profile).
    """
    tree = ast.parse(module.code)
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}


def _access_name(access: object) -> str:
    node = getattr(access, "node", None)
    return node.value if isinstance(node, cst.Name) else ""


def _standalone(module: cst.Module) -> cst.Module:
    kernel = _kernel_def(module)
    if kernel is None:
        raise ValueError("no function definition in the kernel source")
    module = module.visit(_Standalone(kernel.name.value))
    module = module.visit(_Imports(_global_reads(module)))
    # a blank line pair before the def, whatever the removed decorator left behind
    body = [s.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()]) if isinstance(s, cst.FunctionDef) else s
            for s in module.body]
    return module.with_changes(body=body)


# ---------------------------------------------------------------------------------------------------------------------
# Gather: facts about the kernel function


_AXES = ("x", "y", "z", "r0_", "r1_")
_AXIS_NAME = re.compile(r"^(x|y|z|r0_|r1_)(numel|offset|index|mask|base)$")
_BLOCK = re.compile(r"^(X|Y|Z|R0_|R1_)BLOCK$")
_COORD = re.compile(r"^(x|y|z|r0_|r1_)(\d+)$")
_TMP = re.compile(r"^(_?)tmp(\d+)(?:_(\w+))?$")
_PTR = re.compile(r"^(in_out_ptr|in_ptr|out_ptr)(\d+)$")
_KS = re.compile(r"^ks(\d+)$")
_LEGACY = frozenset({"rnumel", "RBLOCK", "roffset", "rindex", "rbase"})  # Inductor's pre-r0_ spellings, kept as aliases
_LEFTOVER = re.compile(r"\b(tmp\d+|in_ptr\d+|out_ptr\d+|in_out_ptr\d+|xnumel|XBLOCK)\b")


def _is_inductor_name(name: str) -> bool:
    return bool(_AXIS_NAME.match(name) or _BLOCK.match(name) or _COORD.match(name) or _TMP.match(name)
                or _PTR.match(name) or _KS.match(name) or name in _LEGACY)


@dataclass
class _Facts:
    params: list[str] = field(default_factory=list)
    defs: dict[str, list[cst.BaseExpression]] = field(default_factory=dict)  # name -> every value assigned, in order
    order: list[str] = field(default_factory=list)  # names in order of first assignment
    loads: dict[str, str] = field(default_factory=dict)  # tmp -> pointer param it loads from
    load_index: dict[str, str] = field(default_factory=dict)  # tmp -> source text of the pointer expression
    stores: dict[str, list[str]] = field(default_factory=dict)  # pointer param -> names of stored values
    pointers: set[str] = field(default_factory=set)  # params used as pointers in tl.load / tl.store
    others: set[str] = field(default_factory=set)  # every name read in the module that we do not rename


def _pointer_of(expr: cst.BaseExpression) -> str | None:
    """`in_ptr0 + (x0)` / `in_ptr0` -> `in_ptr0`."""
    while isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        expr = expr.left
    return expr.value if isinstance(expr, cst.Name) else None


class _Gather(cst.CSTVisitor):
    def __init__(self, facts: _Facts) -> None:
        self.facts = facts

    def _assign(self, name: str, value: cst.BaseExpression) -> None:
        if name not in self.facts.defs:
            self.facts.defs[name] = []
            self.facts.order.append(name)
        self.facts.defs[name].append(value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self._assign(target.target.value, node.value)
            elif isinstance(target.target, cst.Tuple):  # welford: tmp2_mean, tmp2_m2, tmp2_weight = ...
                for i, el in enumerate(target.target.elements):
                    if isinstance(el.value, cst.Name):
                        self._assign(el.value.value, cst.Subscript(value=node.value, slice=[
                            cst.SubscriptElement(cst.Index(cst.Integer(str(i))))]))
        value = node.value
        if m.matches(value, m.Call(func=m.Attribute(value=m.Call(), attr=m.Name("to")))):  # tl.load(...).to(fp32)
            value = cst.ensure_type(cst.ensure_type(value, cst.Call).func, cst.Attribute).value
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) and m.matches(value, m.Call(
                func=m.Attribute(value=m.Name("tl"), attr=m.Name("load")), args=[m.AtLeastN(n=1)])):
            address = cst.ensure_type(value, cst.Call).args[0].value
            ptr = _pointer_of(address)
            if ptr:
                tmp = cst.ensure_type(node.targets[0].target, cst.Name).value
                self.facts.loads[tmp] = ptr
                self.facts.load_index[tmp] = cst.Module([]).code_for_node(address)
                self.facts.pointers.add(ptr)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if isinstance(node.target, cst.Name) and node.value is not None:
            self._assign(node.target.value, node.value)

    def visit_For(self, node: cst.For) -> None:
        if isinstance(node.target, cst.Name):
            self._assign(node.target.value, node.iter)

    def visit_Call(self, node: cst.Call) -> None:
        if m.matches(node, m.Call(func=m.Attribute(value=m.Name("tl"), attr=m.Name("load")), args=[m.AtLeastN(n=1)])):
            ptr = _pointer_of(node.args[0].value)
            if ptr:
                self.facts.pointers.add(ptr)
        if m.matches(node.func, m.Attribute(value=m.Name("tl"), attr=m.Name("store") | m.Name("atomic_add"))) \
                and len(node.args) >= 2:
            ptr = _pointer_of(node.args[0].value)
            if ptr:
                self.facts.pointers.add(ptr)
                value = node.args[1].value
                self.facts.stores.setdefault(ptr, []).append(value.value if isinstance(value, cst.Name) else "")


# ---------------------------------------------------------------------------------------------------------------------
# Plan: Inductor name -> readable name


@dataclass(frozen=True)
class _AxisWords:
    block: str
    numel: str
    offset: str
    index: str
    mask: str
    base: str
    inner: str
    outer: str
    mid: str


def _axis_words(axis: str, reduction: bool, tiled: bool) -> _AxisWords:
    if axis == "x" and not reduction and not tiled:
        return _AxisWords("BLOCK_SIZE", "n_elements", "block_start", "offsets", "mask", "base", "col", "row", "mid")
    if axis == "x" and reduction:
        return _AxisWords("BLOCK_ROWS", "n_rows", "row_start", "rows", "row_mask", "row_base", "row_inner",
                          "row_outer", "row_mid")
    if axis == "r0_":
        return _AxisWords("BLOCK_COLS", "n_cols", "col_start", "cols", "col_mask", "col_base", "col_inner",
                          "col_outer", "col_mid")
    a = axis.rstrip("_")
    return _AxisWords(f"BLOCK_{a.upper()}", f"{a}_numel", f"{a}_start", f"{a}_offsets", f"{a}_mask", f"{a}_base",
                      f"{a}_inner", f"{a}_outer", f"{a}_mid")


# The op a tmp computes -> its name. Builtins (sum, max, abs, pow, any) are avoided on purpose.
_CALL_NAMES = {
    "tl.sum": "total", "tl.max": "amax", "tl.min": "amin", "triton_helpers.max2": "amax",
    "triton_helpers.min2": "amin", "triton_helpers.any": "any_true", "triton_helpers.prod": "prod",
    "tl.where": "where", "tl.broadcast_to": "broadcast", "triton_helpers.maximum": "maximum",
    "triton_helpers.minimum": "minimum", "tl.maximum": "maximum", "tl.minimum": "minimum", "tl.fma": "fma",
    "tl.sigmoid": "sigmoid", "tl.full": "const", "tl.zeros": "zeros", "tl.reshape": "reshaped",
    "tl.cumsum": "cumsum", "tl.cumprod": "cumprod", "triton_helpers.welford_reduce": "welford",
    "triton_helpers.welford_combine": "welford", "triton_helpers.welford": "welford", "tl.rand": "rand",
    "tl.randn": "randn", "triton_helpers.div_floor_integer": "floor_div",
    "triton_helpers.remainder_integer": "remainder", "tl.abs": "absolute",
}
_FN_RENAMES = {"abs": "absolute", "pow": "power", "round": "rounded", "max": "amax", "min": "amin", "exp": "exp"}
_BINOPS = {cst.Add: "add", cst.Subtract: "sub", cst.Multiply: "mul", cst.Divide: "div", cst.FloorDivide: "floor_div",
           cst.Modulo: "mod", cst.BitAnd: "both", cst.BitOr: "either", cst.BitXor: "xor", cst.LeftShift: "shl",
           cst.RightShift: "shr", cst.Power: "power"}
_CMPOPS = {cst.Equal: "eq", cst.NotEqual: "ne", cst.LessThan: "lt", cst.LessThanEqual: "le", cst.GreaterThan: "gt",
           cst.GreaterThanEqual: "ge"}
_CONSTS = {"0": "zero", "0.0": "zero", "1": "one", "1.0": "one", "-1": "minus_one", "-1.0": "minus_one",
           "0.5": "half", 'float("inf")': "inf", 'float("-inf")': "neg_inf"}
# op word -> aten target in a graph fragment (to trace a tmp to the FX node it computes)
_ATEN_OF = {"rsqrt": "rsqrt", "rstd": "rsqrt", "exp": "exp", "erf": "erf", "tanh": "tanh", "sigmoid": "sigmoid",
            "log": "log", "sqrt": "sqrt", "where": "where", "amax": "amax", "amin": "amin", "absolute": "abs",
            "mean": "mean", "total": "sum", "any_true": "any", "power": "pow", "maximum": "maximum",
            "minimum": "minimum", "div": "div", "sub": "sub", "add": "add", "mul": "mul", "square": "pow", "eq": "eq",
            "ne": "ne", "lt": "lt", "gt": "gt", "le": "le", "ge": "ge", "var": "var"}


def _strip(expr: cst.BaseExpression) -> cst.BaseExpression:
    """Drop `[:, None]` / `.to(...)` suffixes Inductor puts on reductions, so the op underneath names the value."""
    while True:
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif m.matches(expr, m.Call(func=m.Attribute(attr=m.Name("to")))) and isinstance(expr, cst.Call) \
                and isinstance(expr.func, cst.Attribute) and isinstance(expr.func.value, (cst.Call, cst.Subscript)):
            expr = expr.func.value
        else:
            return expr


class _Namer:
    """Chooses base names for tmps from the op that computes them (program order, so operands are named first)."""

    def __init__(self, facts: _Facts, names: dict[str, str]) -> None:
        self.facts = facts
        self.names = names  # old -> base new name, filled as we go

    def operand(self, expr: cst.BaseExpression) -> str:
        expr = _strip(expr)
        return self.names.get(expr.value, expr.value) if isinstance(expr, cst.Name) else ""

    def name(self, tmp: str, value: cst.BaseExpression) -> str:
        if tmp in self.facts.loads:
            return _ptr_base(self.names.get(self.facts.loads[tmp], "")) or "loaded"
        raw = value
        value = _strip(value)
        if isinstance(value, cst.Name):  # tmp1 = in_ptr1 (a scalar argument) / tmp = other tmp
            return self.names.get(value.value, value.value) + "_val" if value.value in self.facts.params else "copy"
        if m.matches(raw, m.Call(func=m.Attribute(value=m.Name() | m.Attribute(), attr=m.Name("to")))):
            dtype = dotted_cst(cst.ensure_type(raw, cst.Call).args[0].value).split(".")[-1]
            return f"as_{SHORT_NAMES.get(dtype, dtype)}"
        if isinstance(value, cst.Call):
            fn = dotted_cst(value.func)
            if fn == "tl.full" and len(value.args) >= 2:
                text = cst.Module([]).code_for_node(value.args[1].value)
                return _CONSTS.get(text, "const")
            if fn == "tl.where" and len(value.args) == 3:
                cond = cst.Module([]).code_for_node(value.args[0].value)
                if re.fullmatch(r"[\w ]*mask[\w &]*", cond):  # masking before a reduction
                    return "masked"
            if fn in ("libdevice.rsqrt", "tl.math.rsqrt", "tl.rsqrt") and value.args:
                arg = self.operand(value.args[0].value)
                return "rstd" if arg.startswith(("var", "add")) else "rsqrt"
            if fn in _CALL_NAMES:
                return _CALL_NAMES[fn]
            last = fn.split(".")[-1]
            if fn.startswith(("libdevice.", "tl.math.", "tl.", "triton_helpers.")) and last:
                return _FN_RENAMES.get(last, last)
            return "call"
        if isinstance(value, cst.BinaryOperation):
            left, right = self.operand(value.left), self.operand(value.right)
            if isinstance(value.operator, cst.Multiply) and left and left == right:
                return "square"
            if isinstance(value.operator, cst.Divide) and left.startswith("total"):
                source = self._source_of(_strip(value.left))
                return "var" if source.startswith(("square", "masked_sq")) else "mean"
            if isinstance(value.operator, cst.Subtract) and right.startswith("mean"):
                return "centered"
            if isinstance(value.operator, cst.Add) and left.startswith("var"):
                return "var_eps"
            return _BINOPS.get(type(value.operator), "binop")
        if isinstance(value, cst.Comparison) and len(value.comparisons) == 1:
            return _CMPOPS.get(type(value.comparisons[0].operator), "cmp")
        if isinstance(value, cst.UnaryOperation):
            return {cst.Minus: "neg", cst.BitInvert: "invert", cst.Not: "negated"}.get(type(value.operator), "unary")
        return "value"

    def _source_of(self, expr: cst.BaseExpression) -> str:
        """What a reduction summed: follow `masked`/`broadcast` wrappers back to the op that made the values."""
        for _ in range(4):
            if not isinstance(expr, cst.Name):
                return ""
            new = self.names.get(expr.value, "")
            if not new.startswith(("total", "masked", "broadcast")) and not expr.value.startswith("_tmp"):
                return new
            values = self.facts.defs.get(expr.value, [])
            if not values:
                return new
            value = _strip(values[0])
            if isinstance(value, cst.Call) and value.args:
                fn = dotted_cst(value.func)
                arg = value.args[1 if fn == "tl.where" and len(value.args) == 3 else 0].value
                expr = _strip(arg)
            else:
                return new
        return ""


def _ptr_base(param_name: str) -> str:
    return param_name[:-4] if param_name.endswith("_ptr") else param_name


def _plan(facts: _Facts, context: RenameContext) -> tuple[dict[str, str], dict[str, str]]:
    """Inductor name -> new name for every Inductor-style name in the kernel, and name -> FX node / binding."""
    names = [n for n in dict.fromkeys(facts.params + facts.order) if _is_inductor_name(n)]
    reduction = any(n.startswith(("r0_", "R0_", "r1_")) for n in names)
    tiled = any(n in ("ynumel", "YBLOCK", "yindex") for n in names)
    base: dict[str, str] = {}
    trace: dict[str, str] = {}
    for name in names:
        if mt := _BLOCK.match(name):
            axis = {"X": "x", "Y": "y", "Z": "z", "R0_": "r0_", "R1_": "r1_"}[mt.group(1)]
            base[name] = _axis_words(axis, reduction, tiled).block
        elif mt := _AXIS_NAME.match(name):
            base[name] = getattr(_axis_words(mt.group(1), reduction, tiled), mt.group(2))
        elif mt := _KS.match(name):
            base[name] = f"size_{mt.group(1)}"
    hints = {param: (hint, expr) for param, hint, expr in context.param_hints}
    roles = _vector_roles(facts)
    letters = iter("abcdefghjkmnpqstuvw")
    used_bases: set[str] = set()
    for param in facts.params:  # pointers: launch hints first, then input letters / what is stored
        if not _PTR.match(param):
            continue
        hint, expr = hints.get(param, ("", ""))
        trace[param] = expr
        if param not in facts.pointers:  # a scalar that Inductor still calls in_ptrN
            base[param] = hint or "scalar"
            continue
        stored = [s for s in facts.stores.get(param, []) if s]
        role = ""
        if not hint and param in roles:
            role = roles[param]
        elif not hint and param.startswith("in_ptr"):
            role = next((c for c in letters if c not in used_bases), "inp")
        base[param] = (hint or role or "out") + "_ptr"
        used_bases.add(hint or role)
        if param.startswith("in_out") and not hint:
            base[param] = "inout_ptr"
        if stored and not hint:
            base[param] = "__stored__:" + stored[-1]  # resolved after tmps are named
    namer = _Namer(facts, {k: v for k, v in base.items() if not v.startswith("__")})
    for name in facts.order:  # tmps in program order, so a tmp's operands already have names
        mt = _TMP.match(name)
        if not mt or mt.group(1):
            continue
        if mt.group(3):  # tmp2_mean from welford: the field name says it
            namer.names[name] = base[name] = mt.group(3)
            continue
        namer.names[name] = base[name] = namer.name(name, facts.defs[name][0])
    for name in names:
        mt = _TMP.match(name)
        if mt and mt.group(1):  # _tmpN: the accumulator of what tmpN finally holds
            stem = f"tmp{mt.group(2)}" + (f"_{mt.group(3)}" if mt.group(3) else "")
            base[name] = base.get(stem, "value") + "_acc"
    for name in names:
        if mt := _COORD.match(name):
            values = facts.defs.get(name, [])
            base[name] = _coord_name(values[0], _axis_words(mt.group(1), reduction, tiled)) if values else "idx"
        elif name in _LEGACY:
            base[name] = name  # dead aliases are deleted; live ones keep their (already readable) name
    single_out = sum(1 for p in facts.params if p in facts.stores) == 1
    for param, value in list(base.items()):
        if value.startswith("__stored__:"):
            stored = value.split(":", 1)[1]
            word = base.get(stored, "")
            generic = not word or word in ("value", "copy", "call") or single_out and not param.startswith("in_out")
            base[param] = ("out" if generic or word in ("add", "mul", "sub", "div") else word) + "_ptr"
            if param.startswith("in_out") and (generic or word in ("add", "mul", "sub", "div")):
                base[param] = "inout_ptr"
    return base, trace


def _vector_roles(facts: _Facts) -> dict[str, str]:
    """Inputs loaded with an index along the row only (one value per column) and used as `v * w` / `v + b`."""
    inner = {n for n, values in facts.defs.items() if _COORD.match(n) and re.fullmatch(
        r"\(?(r0_index|xindex % \w+)\)?", cst.Module([]).code_for_node(values[0]))}
    roles: dict[str, str] = {}
    for tmp, ptr in facts.loads.items():
        index_names = set(re.findall(r"[A-Za-z_]\w*", facts.load_index[tmp])) - {ptr}
        if not ptr.startswith("in_ptr") or not index_names or not index_names <= inner:
            continue
        for values in facts.defs.values():
            value = values[0]
            if isinstance(value, cst.BinaryOperation) and m.matches(value.right, m.Name(tmp)):
                if isinstance(value.operator, cst.Multiply):
                    roles.setdefault(ptr, "weight")
                elif isinstance(value.operator, cst.Add):
                    roles.setdefault(ptr, "bias")
    return roles


def _coord_name(value: cst.BaseExpression, words: _AxisWords) -> str:
    text = re.sub(r"\s|\(|\)", "", cst.Module([]).code_for_node(value))
    index = r"(?:xindex|yindex|zindex|r0_index|r1_index)"
    if re.fullmatch(index, text):
        return words.index
    if re.fullmatch(rf"{index}%\w+", text):
        return words.inner
    if re.fullmatch(rf"{index}//\w+", text):
        return words.outer
    if re.fullmatch(rf"{index}//\w+%\w+", text):
        return words.mid
    return "idx"


def _unique(base: dict[str, str], order: Sequence[str], taken: set[str]) -> dict[str, str]:
    """Base names -> final names: never reserved, never taken by a name we keep, `_1`, `_2` for repeats."""
    final: dict[str, str] = {}
    used = set(taken)
    for old in order:
        if old not in base:
            continue
        want = base[old]
        if not _IDENT.fullmatch(want):
            want = "value"
        if want == old and old not in used:  # keeps its own name (a live legacy alias)
            final[old] = old
            used.add(old)
            continue
        ptr = want.endswith("_ptr")
        stem = want[:-4] if ptr else want
        candidate, n = want, 0
        while candidate in used or candidate in RESERVED or (candidate != old and _is_inductor_name(candidate)):
            n += 1
            candidate = f"{stem}_{n}_ptr" if ptr else f"{stem}_{n}"
        final[old] = candidate
        used.add(candidate)
    return final


# ---------------------------------------------------------------------------------------------------------------------
# Transform


class _Apply(cst.CSTTransformer):
    """Rename the Name nodes scope analysis tied to the kernel's locals; drop the statements the plan deletes."""

    def __init__(self, nodes: dict[int, str], drop: set[int], kernel: str, new_kernel: str) -> None:
        self.nodes = nodes  # id(original Name node) -> new name
        self.drop = drop  # id(original statement line) to delete
        self.kernel = kernel
        self.new_kernel = new_kernel

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        new = self.nodes.get(id(original_node))
        return updated_node.with_changes(value=new) if new else updated_node

    def leave_Param(self, original_node: cst.Param, updated_node: cst.Param) -> cst.Param:
        new = self.nodes.get(id(original_node))
        return updated_node.with_changes(name=cst.Name(new)) if new else updated_node

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
        return cst.RemoveFromParent() if id(original_node) in self.drop else updated_node

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        if original_node.name.value == self.kernel:
            return updated_node.with_changes(name=cst.Name(self.new_kernel))
        return updated_node


def _statement_of(node: cst.CSTNode, parents: dict[cst.CSTNode, cst.CSTNode]) -> cst.CSTNode:
    while not isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        node = parents[node]
    return node


def _position(stmt: cst.CSTNode, parents: dict[cst.CSTNode, cst.CSTNode]) -> tuple[cst.CSTNode, int]:
    """(the block holding a statement, its index there)."""
    block = parents[stmt]
    return block, list(cst.ensure_type(block, cst.IndentedBlock).body).index(stmt)  # type: ignore[arg-type]


def _enclosing(node: cst.CSTNode, parents: dict[cst.CSTNode, cst.CSTNode], block: cst.CSTNode) -> int | None:
    """Index of the statement of `block` that contains `node`, or None when `node` is outside `block`."""
    while node in parents:
        parent = parents[node]
        if parent is block:
            return list(cst.ensure_type(block, cst.IndentedBlock).body).index(node)  # type: ignore[arg-type]
        node = parent
    return None


def _foldable(alias: str, target: str, scope: FunctionScope, parents: dict[cst.CSTNode, cst.CSTNode]) -> set[int] | None:
    """Statements `alias = target` to delete when every read of `alias` sees the value `target` has then, else None.

    Holds when every assignment of alias is such a statement S, every read of alias comes after some S in S's own
    block, and target is assigned in that block only before S (never after it, at any depth).
    """
    statements: list[cst.CSTNode] = []
    for assignment in scope.assignments[alias]:
        node = assignment.node
        stmt = _statement_of(node, parents) if isinstance(node, cst.Name) else None
        if not m.matches(stmt, m.SimpleStatementLine(body=[m.Assign(targets=[m.AssignTarget(m.Name(alias))],
                                                                    value=m.Name(target))])):
            return None
        statements.append(stmt)  # type: ignore[arg-type]
    target_nodes = [a.node for a in scope.assignments[target]]
    if not statements or any(not isinstance(n, (cst.Name, cst.Param)) for n in target_nodes):
        return None
    regions: list[tuple[cst.CSTNode, int]] = []
    for stmt in statements:
        block, i = _position(stmt, parents)
        for node in target_nodes:
            j = _enclosing(node, parents, block)
            if j is not None and j >= i:
                return None
        regions.append((block, i))
    for access in scope.accesses[alias]:
        if not any((j := _enclosing(access.node, parents, block)) is not None and j > i for block, i in regions):
            return None
    return {id(s) for s in statements}


def _rename(module: cst.Module, context: RenameContext) -> RenameResult:
    kernel = _kernel_def(module)
    assert kernel is not None  # _standalone checked
    old_kernel = kernel.name.value
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    scopes = wrapper.resolve(ScopeProvider)
    parents = wrapper.resolve(ParentNodeProvider)
    scope = scopes[kernel.body.body[0]] if kernel.body.body else None
    if not isinstance(scope, FunctionScope):
        raise ValueError("the kernel has no function scope")
    facts = _Facts(params=[p.name.value for p in kernel.params.params])
    kernel.visit(_Gather(facts))
    if kernel.params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) or kernel.params.kwonly_params:
        raise ValueError("the kernel takes *args or keyword-only parameters")

    # Deletions first: names they remove need no new name.
    drop: set[int] = set()
    merged: dict[str, str] = {}  # alias -> the name it copies
    for name in facts.order:
        values = facts.defs[name]
        if name in _LEGACY and not scope.accesses[name] and all(isinstance(v, (cst.Name, cst.Integer)) for v in values):
            drop |= {id(_statement_of(a.node, parents)) for a in scope.assignments[name]}
        elif _COORD.match(name) and all(isinstance(v, cst.Name) for v in values) \
                and len({cst.ensure_type(v, cst.Name).value for v in values}) == 1:
            target = cst.ensure_type(values[0], cst.Name).value
            statements = _foldable(name, target, scope, parents)
            if statements is not None and _is_inductor_name(target):
                drop |= statements
                merged[name] = target
    # r0_offset = 0 in persistent reductions is only read by the dead `roffset` alias
    for name in facts.order:
        if _AXIS_NAME.match(name) and name not in facts.params \
                and all(isinstance(v, cst.Integer) for v in facts.defs[name]):
            readers = [a.node for a in scope.accesses[name]]
            if readers and all(id(_statement_of(r, parents)) in drop for r in readers):
                drop |= {id(_statement_of(a.node, parents)) for a in scope.assignments[name]}
    gone = {n for n in facts.order if n not in facts.params
            and all(id(_statement_of(a.node, parents)) in drop for a in scope.assignments[n])}
    live = [n for n in facts.order if n not in gone]
    base, trace = _plan(facts, context)
    order = list(dict.fromkeys(facts.params + live))
    kept = {n for n in set(facts.params) | set(facts.order) if n not in base}
    kept |= {_access_name(a) for s in set(scopes.values()) if s is not None for a in s.accesses}
    kept -= set(base)
    final = _unique(base, order, kept | {old_kernel})
    for alias, target in merged.items():
        final[alias] = final.get(target, target)
    new_kernel = context.kernel_name or readable_kernel_name(old_kernel)
    if new_kernel in set(final.values()) | kept or new_kernel in RESERVED:
        new_kernel = f"{new_kernel}_fn"

    nodes: dict[int, str] = {}
    for name, new in final.items():
        if new == name or name not in scope.assignments and name not in scope.accesses:
            continue
        for assignment in scope.assignments[name]:
            nodes[id(assignment.node)] = new
        for access in scope.accesses[name]:
            nodes[id(access.node)] = new
    # Nested scopes (comprehensions, lambdas) that read a kernel local see it through their own scope object.
    for inner in set(scopes.values()):
        if inner is None or inner is scope or getattr(inner, "parent", None) is not scope:
            continue
        for access in inner.accesses:
            name = _access_name(access)
            if name in final and not inner.assignments[name]:
                nodes[id(access.node)] = final[name]
    renamed = wrapper.module.visit(_Apply(nodes, drop, old_kernel, new_kernel))
    code = renamed.code

    warnings: list[str] = []
    compile(code, f"<{new_kernel}>", "exec")  # raises -> caller falls back to Inductor's names
    new_def = _kernel_def(cst.parse_module(code))
    new_params = [p.name.value for p in new_def.params.params] if new_def else []
    if len(new_params) != len(facts.params):
        raise ValueError("the parameter list changed length")
    params = tuple(zip(facts.params, new_params))
    if len(set(new_params)) != len(new_params):
        raise ValueError("two parameters got the same name")
    left = sorted(set(_LEFTOVER.findall(code)))
    if left:
        warnings.append(f"Inductor names left in {new_kernel}: {', '.join(left)}")
    fx = _trace_fx(base, context.fragment)
    mapping = [(new_kernel, old_kernel, "")]
    for name in order + list(merged):
        if name in final and final[name] != name:
            mapping.append((final[name], name, trace.get(name, "") or fx.get(name, "")))
    return RenameResult(code=code, kernel_name=new_kernel, mapping=tuple(mapping), params=params, ok=True,
                        warnings=tuple(warnings))


def _trace_fx(base: dict[str, str], fragment: Sequence[FxNode]) -> dict[str, str]:
    """tmp -> FX node, where the op that computes a tmp matches exactly one node of the fragment and vice versa."""
    by_target: dict[str, list[str]] = {}
    for node in fragment:
        if node.op == "call_function" and node.target.startswith(("aten.", "torch.ops.aten.")):
            op = node.target.removeprefix("torch.ops.").split(".")[1]
            by_target.setdefault(op, []).append(node.name)
    by_word: dict[str, list[str]] = {}
    for old, word in base.items():
        if _TMP.match(old) and not old.startswith("_"):
            by_word.setdefault(word, []).append(old)
    out: dict[str, str] = {}
    for word, olds in by_word.items():
        aten = _ATEN_OF.get(word)
        nodes = by_target.get(aten, []) if aten else []
        if len(olds) == 1 and len(nodes) == 1:
            out[olds[0]] = nodes[0]
    return out
