"""The kernel without Inductor's runtime: its decorators, driver call and imports replaced by plain Triton ones."""

from __future__ import annotations

import ast
import re

import libcst as cst
import libcst.matchers as m

from harvest.syntax import QuickTransformer, dotted, is_jit_decorator_cst

# ---------------------------------------------------------------------------------------------------------------------
# Standalone: Inductor runtime out, plain triton in

_INDUCTOR_RUNTIME = re.compile(r"^torch\._inductor\.runtime(\.|$)")
_INDENTED_DRIVER_CALL = re.compile(r"^[ \t]+triton_helpers\.set_driver_to_", re.M)


def kernel_def(module: cst.Module) -> cst.FunctionDef | None:
    """The kernel: the module-level def Inductor decorated with a heuristic, else the last jit def."""
    defs = [s for s in module.body if isinstance(s, cst.FunctionDef)]
    for d in defs:
        if any(dotted(_decorator_callee(dec)).startswith("triton_heuristics.") for dec in d.decorators):
            return d
    jitted = [d for d in defs if any(is_jit_decorator_cst(dec.decorator) for dec in d.decorators)]
    return jitted[-1] if jitted else (defs[-1] if defs else None)


def _decorator_callee(dec: cst.Decorator) -> cst.BaseExpression:
    return dec.decorator.func if isinstance(dec.decorator, cst.Call) else dec.decorator


class _Standalone(QuickTransformer):
    """Drop Inductor's heuristic decorator and CPU-driver call; `tl_math.f` -> `tl.math.f`; inline promote_to_tensor."""

    def __init__(self, kernel: str, deep: bool) -> None:
        self.kernel = kernel
        self.deep = deep  # False: nothing to change inside functions but the kernel's decorators

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return self.deep

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        if original_node.name.value != self.kernel:
            return updated_node
        jit = [d for d in updated_node.decorators if dotted(_decorator_callee(d)) == "triton.jit"]
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


class _Imports(QuickTransformer):
    """Inductor's runtime imports -> plain triton ones; drop what nothing uses any more."""

    def __init__(self, used: set[str]) -> None:
        self.used = used

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # imports are module-level statements: nothing to do inside a function

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.BaseStatement | cst.RemovalSentinel:
        if len(updated_node.body) != 1 or not isinstance(updated_node.body[0], cst.ImportFrom):
            return updated_node
        imp = updated_node.body[0]
        module = dotted(imp.module) if imp.module else ""
        if not _INDUCTOR_RUNTIME.match(module) or isinstance(imp.names, cst.ImportStar):
            return updated_node
        lines: list[str] = []
        kept: list[str] = []
        for alias in imp.names:
            name = dotted(alias.name)
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


def standalone(module: cst.Module, source: str) -> cst.Module:
    """`module` is `source` parsed. Function bodies are walked only when they use something to rewrite (every kernel
    imports tl_math; few use it)."""
    kernel = kernel_def(module)
    if kernel is None:
        raise ValueError("no function definition in the kernel source")
    deep = "tl_math." in source or "promote_to_tensor(" in source or _INDENTED_DRIVER_CALL.search(source) is not None
    module = module.visit(_Standalone(kernel.name.value, deep))
    module = module.visit(_Imports(_global_reads(module)))
    # a blank line pair before the def, whatever the removed decorator left behind
    body = [s.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()]) if isinstance(s, cst.FunctionDef) else s
            for s in module.body]
    return module.with_changes(body=body)
