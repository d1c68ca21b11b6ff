"""Small readers of Python syntax trees that several stages share (one home, so they cannot drift apart)."""

from __future__ import annotations

import ast

import libcst as cst


def dotted(node: ast.AST) -> str:
    """"tl.math.exp" for the stdlib-ast expression `tl.math.exp`; "" when the chain does not start at a plain name."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def dotted_cst(node: cst.BaseExpression) -> str:
    """The same for a libcst expression."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        inner = dotted_cst(node.value)
        return f"{inner}.{node.attr.value}" if inner else ""
    return ""
