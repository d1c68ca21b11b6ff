"""Scalar nodes a kernel's `# Graph fragment:` uses but does not define, given a value. Pure.

With dynamic shapes a fragment's ops take SymInts the comment never lists: `expand(tangents_1, [%primals_1, 2048])`
and `div.Scalar(%expand, %mul_7)` of a mean's backward. Two kinds are bound here:

- a scalar graph input that the wrapper names a size symbol (`s75 = primals_1`): that symbol, exactly;
- any other node used only where an op takes a scalar (a `.Scalar` overload's second argument, a size list): the one
  size expression the kernel computes from its integer parameters as a value (`tmp6 = tl.broadcast_to(2048*ks0, ...)`),
  in the wrapper's symbols (`2048 * s75`). Only when the kernel has exactly one such expression, and with a warning:
  that value is the kernel's own, so the reference does not check it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from harvest.kernel_facts import kernel_facts
from harvest.model import FxExpr, FxList, FxRef, FxValue, Graph, Kernel, Launch
from harvest.reference.fragment import Fragment
from harvest.reference.fx_args import fx_refs

_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def bind_scalar_nodes(kernel: Kernel, launch: Launch, graph: Graph, fragment: Fragment, inputs: set[str]) -> None:
    """Rewrite, in `fragment`'s ops, each undefined scalar node into the size expression it stands for (`inputs`: the
    names the binding already took from kernel parameters)."""
    defined = set(fragment.ops) | set(fragment.placeholders) | set(fragment.outside) | inputs | set(graph.buffers)
    undefined = sorted({ref for op in fragment.ops.values() for v in (*op.args, *op.kwargs.values())
                        for ref in fx_refs(v)} - defined)
    if not undefined:
        return
    symbol_of = {source: symbol for symbol, source in graph.symbol_inputs.items() if source in graph.inputs}
    values: dict[str, FxExpr] = {}
    guessed: list[str] = []
    for name in undefined:
        if name in symbol_of:
            values[name] = FxExpr((symbol_of[name],), (symbol_of[name],))
        elif _scalar_only(fragment, name):
            guessed.append(name)
    if len(guessed) == 1:
        found = kernel_size_values(kernel, launch)
        if len(found) == 1:
            (text, expr), = found.items()
            values[guessed[0]] = expr
            fragment.warnings.append(f"{guessed[0]} is not in the fragment: taken to be the kernel's size expression "
                                     f"{text} (its only one), so the reference does not check that value")
    if values:
        for name, op in list(fragment.ops.items()):
            fragment.ops[name] = replace(op, args=tuple(_substitute(v, values) for v in op.args),
                                         kwargs={k: _substitute(v, values) for k, v in op.kwargs.items()})


def kernel_size_values(kernel: Kernel, launch: Launch) -> dict[str, FxExpr]:
    """Size expressions the kernel computes as values (`tl.broadcast_to(2048*ks0, ...)`, `tl.full([1], ks0 * 3, ...)`):
    arithmetic over its integer parameters and integer literals, not a bare parameter. By the kernel's text, each as
    an FxExpr in the launch's own expressions (`ks0` passed as `s75`: `2048 * s75`)."""
    function = kernel_facts(kernel.source).function(kernel.name)
    if function is None:
        return {}
    passed = {arg.param: arg.expr for arg in launch.args}
    sizes = {p for p, kind in kernel.signature.items()
             if kind.startswith("i") and not p.endswith("numel") and p in passed}
    found: dict[str, FxExpr] = {}
    for assignment in function.assignments:
        value = _unwrapped(assignment.value)
        if not isinstance(value, (ast.BinOp, ast.UnaryOp)):
            continue
        names = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
        constants = [n.value for n in ast.walk(value) if isinstance(n, ast.Constant)]
        if not names or not names <= sizes or any(type(c) is not int for c in constants):
            continue
        text = ast.unparse(value)
        found.setdefault(text, _in_launch_terms(value, passed))
    return found


def _unwrapped(value: ast.expr | None) -> ast.expr | None:
    """`tl.broadcast_to(x, shape)`, `tl.full(shape, x, dtype)` and `x.to(dtype)` -> x."""
    while isinstance(value, ast.Call):
        func = ast.unparse(value.func)
        if func == "tl.broadcast_to" and value.args:
            value = value.args[0]
        elif func == "tl.full" and len(value.args) >= 2:
            value = value.args[1]
        elif func.endswith(".to") and isinstance(value.func, ast.Attribute):
            value = value.func.value
        else:
            return None
    return value


def _in_launch_terms(value: ast.expr, passed: dict[str, str]) -> FxExpr:
    """The expression with each parameter replaced by what the launch passes (parenthesized unless a name)."""

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.expr:
            text = passed[node.id]
            return ast.Name(text) if _IDENTIFIER.fullmatch(text) else ast.parse(f"({text})", mode="eval").body

    text = ast.unparse(Rename().visit(ast.parse(ast.unparse(value), mode="eval")).body)
    tokens = tuple(re.findall(r"\w+|\*\*|//|\S", text))
    return FxExpr(tokens, tuple(dict.fromkeys(t for t in tokens if _IDENTIFIER.fullmatch(t))))


def _scalar_only(fragment: Fragment, name: str) -> bool:
    """Whether every use of `name` is where an op takes a scalar: the second argument of a `.Scalar` overload, or an
    item of a size list."""
    uses = 0
    for op in fragment.ops.values():
        for position, value in enumerate(op.args):
            if isinstance(value, FxRef) and value.name == name:
                if not (position == 1 and op.target.endswith(".Scalar")):
                    return False
                uses += 1
            elif isinstance(value, FxList) and name in fx_refs(value):
                if not all(isinstance(item, (FxRef, FxExpr)) for item in value.items):
                    return False
                uses += 1
            elif name in fx_refs(value):
                return False
        if any(name in fx_refs(v) for v in op.kwargs.values()):
            return False
    return uses > 0


def _substitute(value: FxValue, values: dict[str, FxExpr]) -> FxValue:
    if isinstance(value, FxRef) and value.name in values:
        return values[value.name]
    if isinstance(value, FxList):
        return FxList(tuple(_substitute(v, values) for v in value.items))
    if isinstance(value, tuple):
        return tuple(_substitute(v, values) for v in value)
    return value
