"""Gather: the facts about a kernel function that naming needs: the values of its names (libcst nodes, gathered in
the rename's walk) and what it loads and stores (from harvest.kernel_facts' ast walk)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import libcst as cst

from harvest.kernel_facts import FunctionFacts
from harvest.syntax import dotted, pointer_of

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
    """What naming reads about the kernel function. The names' values are libcst nodes, gathered by FactGatherer in
    the rename's own walk; what the kernel loads and stores comes from the one ast walk (harvest.kernel_facts)."""

    params: list[str] = field(default_factory=list)
    defs: dict[str, list[cst.BaseExpression]] = field(default_factory=dict)  # name -> every value assigned, in order
    order: list[str] = field(default_factory=list)  # names in order of first assignment
    loads: dict[str, str] = field(default_factory=dict)  # tmp -> pointer param it loads from
    load_index: dict[str, str] = field(default_factory=dict)  # tmp -> source text of the pointer expression
    stores: dict[str, list[str]] = field(default_factory=dict)  # pointer param -> names of stored values
    pointers: set[str] = field(default_factory=set)  # params used as pointers in tl.load / tl.store / tl.atomic_add


def memory_facts(params: list[str], function: FunctionFacts) -> Facts:
    """Facts with what `function` (the kernel's def, from harvest.kernel_facts) loads and stores filled in: a tmp
    assigned `tl.load(address, ...)` (or that load's `.to(...)`) loads from the address's pointer; a store or
    `tl.atomic_add` stores its value (its name, or "" for an expression) into its pointer."""
    facts = Facts(params=list(params))
    for access in function.accesses:
        if access.pointer is None or access.call not in ("tl.load", "tl.store", "tl.atomic_add"):
            continue
        if access.kind == "load":
            facts.pointers.add(access.pointer)
        elif access.value is not None:
            facts.pointers.add(access.pointer)
            stored = access.value.id if isinstance(access.value, ast.Name) else ""
            facts.stores.setdefault(access.pointer, []).append(stored)
    for assignment in function.assignments:
        load = _loaded(assignment.value)
        if load is not None and load.args and (pointer := pointer_of(load.args[0])) is not None:
            facts.loads[assignment.target] = pointer
            facts.load_index[assignment.target] = ast.unparse(load.args[0])
    return facts


def _loaded(value: ast.expr | None) -> ast.Call | None:
    """The `tl.load(...)` call that `value` is, alone or converted by `.to(...)`."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "to" \
            and isinstance(value.func.value, ast.Call):
        value = value.func.value
    return value if isinstance(value, ast.Call) and dotted(value.func) == "tl.load" else None


class FactGatherer(cst.CSTVisitor):
    """Gathers the values every name of the kernel is assigned, as libcst nodes (naming reads their shape)."""

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

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if isinstance(node.target, cst.Name) and node.value is not None:
            self._assign(node.target.value, node.value)

    def visit_For(self, node: cst.For) -> None:
        if isinstance(node.target, cst.Name):
            self._assign(node.target.value, node.iter)
