"""Reading the Triton kernel for the reference: which parameters it loads and stores, what it stores last, and that
value's outermost operation. Pure: the kernel's shared `ast` (harvest.syntax)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from harvest.model import Kernel
from harvest.syntax import dotted, kernel_ast

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
