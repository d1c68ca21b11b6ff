"""Gather: the facts about a kernel function that naming needs, in one libcst visit."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst
import libcst.matchers as m

# ---------------------------------------------------------------------------------------------------------------------
# Gather: facts about the kernel function


_AXES = ("x", "y", "z", "r0_", "r1_")
AXIS_NAME = re.compile(r"^(x|y|z|r0_|r1_)(numel|offset|index|mask|base)$")
BLOCK_NAME = re.compile(r"^(X|Y|Z|R0_|R1_)BLOCK$")
COORD = re.compile(r"^(x|y|z|r0_|r1_)(\d+)$")
TMP = re.compile(r"^(_?)tmp(\d+)(?:_(\w+))?$")
PTR = re.compile(r"^(in_out_ptr|in_ptr|out_ptr)(\d+)$")
KS = re.compile(r"^ks(\d+)$")
LEGACY = frozenset({"rnumel", "RBLOCK", "roffset", "rindex", "rbase"})  # Inductor's pre-r0_ spellings, kept as aliases
LEFTOVER = re.compile(r"\b(tmp\d+|in_ptr\d+|out_ptr\d+|in_out_ptr\d+|xnumel|XBLOCK)\b")


def is_inductor_name(name: str) -> bool:
    return bool(AXIS_NAME.match(name) or BLOCK_NAME.match(name) or COORD.match(name) or TMP.match(name)
                or PTR.match(name) or KS.match(name) or name in LEGACY)


@dataclass
class Facts:
    params: list[str] = field(default_factory=list)
    defs: dict[str, list[cst.BaseExpression]] = field(default_factory=dict)  # name -> every value assigned, in order
    order: list[str] = field(default_factory=list)  # names in order of first assignment
    loads: dict[str, str] = field(default_factory=dict)  # tmp -> pointer param it loads from
    load_index: dict[str, str] = field(default_factory=dict)  # tmp -> source text of the pointer expression
    stores: dict[str, list[str]] = field(default_factory=dict)  # pointer param -> names of stored values
    pointers: set[str] = field(default_factory=set)  # params used as pointers in tl.load / tl.store
    others: set[str] = field(default_factory=set)  # every name read in the module that we do not rename


def _pointer_of(expr: cst.BaseExpression) -> str | None:
    """`in_ptr0 + (x0)` / `in_ptr0` -> `in_ptr0`."""
    while isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        expr = expr.left
    return expr.value if isinstance(expr, cst.Name) else None


class FactGatherer(cst.CSTVisitor):
    def __init__(self, facts: Facts) -> None:
        self.facts = facts

    def _assign(self, name: str, value: cst.BaseExpression) -> None:
        if name not in self.facts.defs:
            self.facts.defs[name] = []
            self.facts.order.append(name)
        self.facts.defs[name].append(value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self._assign(target.target.value, node.value)
            elif isinstance(target.target, cst.Tuple):  # welford: tmp2_mean, tmp2_m2, tmp2_weight = ...
                for i, el in enumerate(target.target.elements):
                    if isinstance(el.value, cst.Name):
                        self._assign(el.value.value, cst.Subscript(value=node.value, slice=[
                            cst.SubscriptElement(cst.Index(cst.Integer(str(i))))]))
        value = node.value
        if m.matches(value, m.Call(func=m.Attribute(value=m.Call(), attr=m.Name("to")))):  # tl.load(...).to(fp32)
            value = cst.ensure_type(cst.ensure_type(value, cst.Call).func, cst.Attribute).value
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) and m.matches(value, m.Call(
                func=m.Attribute(value=m.Name("tl"), attr=m.Name("load")), args=[m.AtLeastN(n=1)])):
            address = cst.ensure_type(value, cst.Call).args[0].value
            ptr = _pointer_of(address)
            if ptr:
                tmp = cst.ensure_type(node.targets[0].target, cst.Name).value
                self.facts.loads[tmp] = ptr
                self.facts.load_index[tmp] = cst.Module([]).code_for_node(address)
                self.facts.pointers.add(ptr)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if isinstance(node.target, cst.Name) and node.value is not None:
            self._assign(node.target.value, node.value)

    def visit_For(self, node: cst.For) -> None:
        if isinstance(node.target, cst.Name):
            self._assign(node.target.value, node.iter)

    def visit_Call(self, node: cst.Call) -> None:
        if m.matches(node, m.Call(func=m.Attribute(value=m.Name("tl"), attr=m.Name("load")), args=[m.AtLeastN(n=1)])):
            ptr = _pointer_of(node.args[0].value)
            if ptr:
                self.facts.pointers.add(ptr)
        if m.matches(node.func, m.Attribute(value=m.Name("tl"), attr=m.Name("store") | m.Name("atomic_add"))) \
                and len(node.args) >= 2:
            ptr = _pointer_of(node.args[0].value)
            if ptr:
                self.facts.pointers.add(ptr)
                value = node.args[1].value
                self.facts.stores.setdefault(ptr, []).append(value.value if isinstance(value, cst.Name) else "")
