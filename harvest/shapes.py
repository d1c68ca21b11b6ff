"""Concrete sizes: the value of a size expression (`s27*s77`, `ks0`, `64`) given the capture's example values.

The values come from Graph.scalar_values (the wrapper's get_args() and its `s77 = arg0_1` bindings). The expressions
come from files harvest only reads, so they are walked here, never handed to `eval`: arithmetic, comparisons and
min/max/abs/floor/ceil on known names, and a power only while its result stays small (`9**9**9` is refused at once
instead of computed for hours).
"""

from __future__ import annotations

import ast
import io
import math
import operator
import tokenize
from collections.abc import Mapping

_CALLS = {"min": min, "max": max, "abs": abs, "floor": math.floor, "ceil": math.ceil}
_BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
}  # fmt: skip
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, ast.Invert: operator.invert}
_COMPARE = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}  # fmt: skip
_MAX_BITS = 1024  # a power whose result would need more bits than this is not a size


class _Unknown(Exception):
    """The expression uses something this evaluator does not: its value is unknown."""


def rename_symbols(expr: str, names: Mapping[str, str]) -> str:
    """`2*ks0` -> `2*n_rows`: each name in a size expression that `names` maps, renamed; everything else exactly as
    written. The expression is read with Python's tokenizer, never evaluated; one it cannot read is returned as is."""
    if not names or expr.isdigit():
        return expr
    pieces: list[str] = []
    done = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(expr).readline):
            if token.type == tokenize.NAME and token.string in names and token.start[0] == 1:
                pieces += [expr[done:token.start[1]], names[token.string]]
                done = token.end[1]
    except (tokenize.TokenError, SyntaxError):
        return expr
    return "".join(pieces) + expr[done:]


def evaluate(expr: str, hints: dict[str, int | float]) -> int | float | None:
    """Value of a size expression such as `s27*s77`, `((1 + s0) // 2)`, `64`; None when a name is unknown."""
    try:
        tree = ast.parse(expr.replace("//", " // "), mode="eval")
    except SyntaxError:
        return None
    return evaluate_node(tree.body, hints)


def evaluate_node(node: ast.expr, values: dict[str, int | float]) -> int | float | None:
    """Value of an expression tree over `values`; None when it reads anything else or cannot be computed."""
    try:
        return _value(node, values)
    except (_Unknown, ArithmeticError, TypeError, ValueError, RecursionError):
        return None


def _value(node: ast.expr, values: dict[str, int | float]):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.Name) and node.id in values:
        return values[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return _power(_value(node.left, values), _value(node.right, values))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_value(node.left, values), _value(node.right, values))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_value(node.operand, values))
    if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        left = _value(node.left, values)
        for op, comparator in zip(node.ops, node.comparators):
            right = _value(comparator, values)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.BoolOp):
        result = None
        for operand in node.values:
            result = _value(operand, values)
            if isinstance(node.op, ast.And) and not result or isinstance(node.op, ast.Or) and result:
                return result
        return result
    if isinstance(node, ast.IfExp):
        return _value(node.body if _value(node.test, values) else node.orelse, values)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLS and not node.keywords:
        return _CALLS[node.func.id](*[_value(arg, values) for arg in node.args])
    raise _Unknown


def _power(base, exponent):
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1 \
            and exponent * math.log2(abs(base)) > _MAX_BITS:
        raise _Unknown
    if isinstance(base, float) or isinstance(exponent, float):
        return math.pow(base, exponent)  # OverflowError (an ArithmeticError) instead of a huge number
    return base**exponent


# Values the symbols of two size expressions take to tell them apart: sizes, past the 0 and 1 Inductor specializes.
_TRIAL_VALUES = (2, 3, 7, 16, 33, 250)


def same_size(a: int | str, b: int | str) -> bool:
    """Whether two sizes are one: the same text, or expressions of the same symbols that agree wherever the
    symbols take a few sizes (`(((s53 - 1)//8)) + 1` as FX writes it and `1 + (((-1) + s53) // 8)` as the wrapper
    does). Evaluated without eval, as evaluate() does; False where either cannot be read."""
    if str(a) == str(b):
        return True
    names = sorted(set(_symbols(str(a))) | set(_symbols(str(b))))
    if not names:
        return False
    for trial in range(len(_TRIAL_VALUES)):
        values = {name: _TRIAL_VALUES[(trial + i) % len(_TRIAL_VALUES)] for i, name in enumerate(names)}
        left, right = evaluate(str(a), values), evaluate(str(b), values)
        if left is None or right is None or left != right:
            return False
    return True


def same_sizes(a: tuple, b: tuple) -> bool:
    """Two shapes whose sizes are one, size by size (same_size)."""
    return len(a) == len(b) and all(same_size(x, y) for x, y in zip(a, b))


def _symbols(expr: str) -> list[str]:
    try:
        return [t.string for t in tokenize.generate_tokens(io.StringIO(expr).readline) if t.type == tokenize.NAME
                and t.string not in _CALLS]
    except (tokenize.TokenError, SyntaxError):
        return []
