"""Concrete sizes: the value of a size expression (`s27*s77`, `ks0`, `64`) given the capture's example values.

The values come from Graph.scalar_values (the wrapper's get_args() and its `s77 = arg0_1` bindings).
"""

from __future__ import annotations

import ast
import math

_ALLOWED = {"min": min, "max": max, "abs": abs, "floor": math.floor, "ceil": math.ceil}


def evaluate(expr: str, hints: dict[str, int | float]) -> int | float | None:
    """Value of a size expression such as `s27*s77`, `((1 + s0) // 2)`, `64`; None when a name is unknown."""
    try:
        tree = ast.parse(expr.replace("//", " // "), mode="eval")
    except SyntaxError:
        return None
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    if not names <= set(hints) | set(_ALLOWED):
        return None
    if any(isinstance(node, (ast.Attribute, ast.Lambda, ast.Subscript)) for node in ast.walk(tree)):
        return None
    try:
        return eval(compile(tree, "<size>", "eval"), {"__builtins__": {}}, {**_ALLOWED, **hints})  # noqa: S307
    except Exception:
        return None
