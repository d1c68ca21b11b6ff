"""Python syntax trees that several stages share: each kernel source parsed once, and the small readers of trees
(one home, so they cannot drift apart)."""

from __future__ import annotations

import ast
import functools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeGuard

import libcst as cst


def dotted(node: ast.AST | cst.CSTNode) -> str:
    """"tl.math.exp" for the expression `tl.math.exp`, a stdlib-ast or a libcst one; "" when the chain does not start
    at a plain name."""
    if isinstance(node, (ast.Name, cst.Name)):
        return node.id if isinstance(node, ast.Name) else node.value
    if isinstance(node, (ast.Attribute, cst.Attribute)):
        inner = dotted(node.value)
        attr = node.attr if isinstance(node, ast.Attribute) else node.attr.value
        return f"{inner}.{attr}" if inner else ""
    return ""


# How a Triton kernel says what it is: `@triton.jit` (or `@jit` after `from triton import jit`), bare or called with
# options, and `tl.constexpr` on a parameter (or `triton.language.constexpr`, bare `constexpr`, or the string).
JIT_DECORATORS = frozenset({"triton.jit", "jit"})
CONSTEXPR_ANNOTATIONS = frozenset({"tl.constexpr", "triton.language.constexpr", "constexpr"})


def is_jit_decorator(node: ast.expr) -> bool:
    """`@triton.jit` or `@triton.jit(...)`."""
    return dotted(node.func if isinstance(node, ast.Call) else node) in JIT_DECORATORS


def is_jit_def(node: ast.AST) -> TypeGuard[ast.FunctionDef]:
    """A def decorated `@triton.jit` or `@triton.jit(...)` (among other decorators or not)."""
    return isinstance(node, ast.FunctionDef) and any(is_jit_decorator(d) for d in node.decorator_list)


def is_constexpr_annotation(node: ast.expr | None) -> bool:
    """A parameter's annotation that makes it a compile-time constant: `tl.constexpr` (and its other spellings)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value in CONSTEXPR_ANNOTATIONS
    return node is not None and dotted(node) in CONSTEXPR_ANNOTATIONS


def is_jit_decorator_cst(node: cst.BaseExpression) -> bool:
    """is_jit_decorator for a libcst decorator expression."""
    return dotted(node.func if isinstance(node, cst.Call) else node) in JIT_DECORATORS


def is_constexpr_annotation_cst(node: cst.BaseExpression | None) -> bool:
    """is_constexpr_annotation for a libcst annotation expression (the `.annotation` of a cst.Annotation)."""
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value in CONSTEXPR_ANNOTATIONS
    return node is not None and dotted(node) in CONSTEXPR_ANNOTATIONS


@dataclass(frozen=True)
class KernelTrees:
    """One kernel source, parsed: with libcst (parse, rename, fusion) and with ast (reference, render, sweep).
    A tree is None when the source does not parse; its error says why. The trees are shared: read them, never
    change them (libcst trees cannot be changed; ast trees must not be)."""

    cst: cst.Module | None
    ast: ast.Module | None
    cst_error: Exception | None = None
    ast_error: SyntaxError | None = None


PARSES = Counter()  # kernel sources parsed, by kind ("cst", "ast"): the parse-once test reads it


@functools.lru_cache(maxsize=256)
def kernel_trees(source: str) -> KernelTrees:
    """Each kernel source is parsed once per process: every stage asks here instead of parsing it again. (The
    render workers are forked after parse.py has asked for every kernel, so they find the trees already made.)"""
    PARSES["cst"] += 1
    try:
        tree, cst_error = cst.parse_module(source), None
    except Exception as exc:  # ParserSyntaxError, or a recursion error on a pathological source
        tree, cst_error = None, exc
    PARSES["ast"] += 1
    try:
        tree_ast, ast_error = ast.parse(source), None
    except SyntaxError as exc:
        tree_ast, ast_error = None, exc
    return KernelTrees(tree, tree_ast, cst_error, ast_error)


def kernel_ast(source: str) -> ast.Module:
    """The ast of a kernel source (shared, read only); SyntaxError when it does not parse."""
    trees = kernel_trees(source)
    if trees.ast is None:
        raise trees.ast_error or SyntaxError("the kernel source does not parse")
    return trees.ast


# ---------------------------------------------------------------------------------------------------------------------
# libcst visitors without libcst's per-attribute lookups


def visitor_method(visitor: object, prefix: str, kind: type) -> Callable | None:
    """visitor's `<prefix><Node class name>` method, looked up once per node class."""
    cache: dict[tuple[str, type], Callable | None] = visitor.__dict__.setdefault("_methods_by_class", {})
    key = (prefix, kind)
    if key not in cache:
        cache[key] = getattr(visitor, prefix + kind.__name__, None)
    return cache[key]


class QuickVisitor(cst.CSTVisitor):
    """A CSTVisitor for visitors that define no `visit_<Node>_<attribute>` methods. libcst looks those up by a
    formatted name before and after every child of every node; here they are skipped, and `visit_<Node>` /
    `leave_<Node>` are found once per node class. Visits are otherwise exactly libcst's."""

    def on_visit(self, node: cst.CSTNode) -> bool:
        method = visitor_method(self, "visit_", type(node))
        return method is None or method(node) is not False

    def on_leave(self, original_node: cst.CSTNode) -> None:
        method = visitor_method(self, "leave_", type(original_node))
        if method is not None:
            method(original_node)

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        return None

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        return None


class QuickTransformer(cst.CSTTransformer):
    """The same for a CSTTransformer."""

    def on_visit(self, node: cst.CSTNode) -> bool:
        method = visitor_method(self, "visit_", type(node))
        return method is None or method(node) is not False

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):  # type: ignore[override]
        method = visitor_method(self, "leave_", type(original_node))
        return updated_node if method is None else method(original_node, updated_node)

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        return None

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        return None


def pointer_of(address: ast.expr) -> str | None:
    """The pointer a tl.load/tl.store address starts at: `in_ptr0` of `in_ptr0 + (x0)` or of `in_ptr0`; None when
    the leftmost operand of its chain of `+` is not a name. The one pointer reader: rename and the twin read pointers
    here or through harvest.kernel_facts."""
    while isinstance(address, ast.BinOp) and isinstance(address.op, ast.Add):
        address = address.left
    return address.id if isinstance(address, ast.Name) else None
