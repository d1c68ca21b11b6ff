"""Concrete sizes for a captured graph: what the size symbols (s0, ks0, s27*s77) were when it was captured.

Inductor's wrapper binds symbols from call()'s integer arguments (`s77 = arg0_1`) and its get_args() records the
example values it compiled for (`arg0_1 = 64`). Pure: source text in, numbers out.
"""

from __future__ import annotations

import ast
import math

import libcst as cst
import libcst.matchers as m


class _Assignments(cst.CSTVisitor):
    """Gathers `name = <int/float literal>` and `name = other_name` assignments, by function."""

    def __init__(self) -> None:
        self.function = ""
        self.literals: dict[str, int | float] = {}
        self.aliases: dict[str, str] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.function = node.name.value

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1 or not m.matches(node.targets[0].target, m.Name()):
            return
        name = cst.ensure_type(node.targets[0].target, cst.Name).value
        value = node.value
        if self.function == "get_args" and m.matches(value, m.Integer() | m.Float() | m.UnaryOperation()):
            try:
                self.literals[name] = ast.literal_eval(cst.Module([]).code_for_node(value))
            except (ValueError, SyntaxError):
                pass
        elif self.function in ("call", "partition_0") and m.matches(value, m.Name()):
            self.aliases[name] = cst.ensure_type(value, cst.Name).value


def symbol_hints(wrapper_source: str) -> dict[str, int | float]:
    """Values of graph arguments and size symbols at capture time: {"arg0_1": 64, "s77": 64, ...}."""
    try:
        module = cst.parse_module(wrapper_source)
    except cst.ParserSyntaxError:
        return {}
    visitor = _Assignments()
    module.visit(visitor)
    hints = dict(visitor.literals)
    for name, source in visitor.aliases.items():
        if source in hints:
            hints[name] = hints[source]
    return hints


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
