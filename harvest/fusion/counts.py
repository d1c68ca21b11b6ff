"""What a kernel's source does: loads, stores and reduction calls per pointer parameter, from its shared libcst tree."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import libcst as cst
import libcst.matchers as m

from harvest.fusion.common import REDUCTION_CALLS
from harvest.syntax import dotted_cst, kernel_trees

# ------------------------------------------------------------------------------------- kernel source


@dataclass(frozen=True)
class SourceCounts:
    """Memory and reduction calls in a kernel body, and which parameters they touch."""

    loads: int
    stores: int
    reductions: int
    reduction_calls: tuple[str, ...]  # distinct reduction calls, sorted ("tl.sum", "triton_helpers.max2")
    loaded_params: tuple[str, ...]  # pointer params read by tl.load, in signature order
    stored_params: tuple[str, ...]  # pointer params written by tl.store


def _pointer_names(expr: cst.BaseExpression) -> set[str]:
    """The pointer a tl.load/tl.store addresses: `in_ptr0 + (x0 + ks0*x1)` -> {in_ptr0} (the leftmost term)."""
    base = expr
    while isinstance(base, cst.BinaryOperation):
        base = base.left
    if isinstance(base, cst.Name):
        return {base.value}
    return {n.value for n in m.findall(expr, m.Name())}  # type: ignore[union-attr]  # block pointers and the like


class _CallCounter(cst.CSTVisitor):
    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.loaded: set[str] = set()
        self.stored: set[str] = set()
        self.params: list[str] = []
        self._depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._depth == 0:
            self.params = [p.name.value for p in node.params.params]
        self._depth += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._depth -= 1

    def visit_Call(self, node: cst.Call) -> None:
        name = dotted_cst(node.func)
        if name.count(".") != 1:  # module.function calls only (tl.load, tl.sum), as counted since the first report
            return
        self.calls[name] += 1
        if name in ("tl.load", "tl.store") and node.args:
            (self.loaded if name == "tl.load" else self.stored).update(_pointer_names(node.args[0].value))


def count_source(source: str) -> SourceCounts | None:
    """Count tl.load / tl.store / reduction calls in a Triton kernel module (None when it does not parse)."""
    module = kernel_trees(source).cst
    if module is None:
        return None
    counter = _CallCounter()
    module.visit(counter)
    reductions = {name: n for name, n in counter.calls.items() if name in REDUCTION_CALLS}
    params = counter.params
    return SourceCounts(
        loads=counter.calls["tl.load"],
        stores=counter.calls["tl.store"],
        reductions=sum(reductions.values()),
        reduction_calls=tuple(sorted(reductions)),
        loaded_params=tuple(p for p in params if p in counter.loaded),
        stored_params=tuple(p for p in params if p in counter.stored),
    )
