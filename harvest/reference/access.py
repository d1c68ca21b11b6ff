"""Reading the Triton kernel for the reference: which parameters it loads and stores, what it stores last, and that
value's outermost operation. Pure: the kernel's facts (harvest.kernel_facts), gathered once from its shared `ast`."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace

from harvest.kernel_facts import kernel_facts
from harvest.model import Kernel
from harvest.syntax import dotted

# ---------------------------------------------------------------------------------------------------------------
# Reading the Triton kernel: which parameters it loads, what it finally stores, and what that value's top op is.


@dataclass
class Access:
    first: dict[str, str] = field(default_factory=dict)  # param -> "load" | "store" (first access in source order)
    last_store: dict[str, ast.expr] = field(default_factory=dict)  # param -> value of its last tl.store
    assigns: dict[str, ast.expr | None] = field(default_factory=dict)  # name -> last assigned expr (None: unknown)
    unpacked: dict[str, tuple[ast.expr, int]] = field(default_factory=dict)  # name -> (tuple value, its position)
    atomic: dict[str, ast.expr] = field(default_factory=dict)  # param -> what its last tl.atomic_* adds (or swaps) in
    stores: dict[str, list[tuple[ast.expr, ast.expr]]] = field(default_factory=dict)  # param -> (address, value) of each tl.store
    stored: set[str] = field(default_factory=set)  # params written by tl.store or an atomic
    loaded: set[str] = field(default_factory=set)  # params read by tl.load or an atomic


def scan_kernel(kernel: Kernel) -> Access:
    """The kernel def's accesses, from its facts (harvest.kernel_facts); SyntaxError when the source does not parse."""
    function = kernel_facts(kernel.source).function(kernel.name)
    if function is None:
        raise IndexError("the kernel source has no def")
    params = set(function.params)
    access = Access()
    for assignment in function.assignments:
        access.assigns[assignment.target] = assignment.value
        if assignment.value is None and assignment.unpacked is not None:
            access.unpacked[assignment.target] = (assignment.unpacked, assignment.position)
    # A template names its pointer parameters again (`A = arg_A`) and builds pointers from them (`x_base = X + ...`,
    # `x_ptrs = x_base + ...`): an access through such a name is the parameter's.
    aliases = function.pointer_aliases()
    for memory in function.accesses:
        memory = replace(memory, pointer=aliases.get(memory.pointer, memory.pointer))
        if memory.pointer not in params:
            continue
        if memory.kind == "atomic":
            access.stored.add(memory.pointer)
            access.loaded.add(memory.pointer)
            if memory.value is not None:
                access.atomic[memory.pointer] = memory.value
            continue
        (access.loaded if memory.kind == "load" else access.stored).add(memory.pointer)
        access.first.setdefault(memory.pointer, memory.kind)
        if memory.kind == "store" and memory.value is not None:
            access.last_store[memory.pointer] = memory.value
            access.stores.setdefault(memory.pointer, []).append((memory.address, memory.value))
    return access


_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv", ast.Mod: "mod"}
_CMPOPS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
# Calls that only move or convert a value; the operation that made it is underneath.
_TRANSPARENT_CALLS = {"tl.broadcast_to", "tl.reshape", "tl.view"}


def top_op(expr: ast.expr | None, assigns: dict[str, ast.expr | None]) -> str | None:
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
            if op == "div" and top_op(expr.left, assigns) == "sum":
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


def sums_within(expr: ast.expr | None, assigns: dict[str, ast.expr | None]) -> int:
    """How many `tl.sum` reductions a stored value is computed through, following the kernel's assignments: 1 for
    a row total, 2 for a total of squared deviations from a mean the kernel computed first (a variance's)."""
    count, seen, pending = 0, set(), [expr]
    while pending:
        node = pending.pop()
        if node is None:
            continue
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and dotted(sub.func) in ("tl.sum", "triton_helpers.sum"):
                count += 1
            elif isinstance(sub, ast.Name) and sub.id in assigns and sub.id not in seen:
                seen.add(sub.id)
                pending.append(assigns[sub.id])
    return count


# Triton top op -> the aten op families (or getitem tags) that can produce it.
OP_FAMILIES: dict[str, set[str]] = {
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
