"""Cooperative reductions, read as the row reductions they compute.

Inductor's cooperative reduction (triton_heuristics.cooperative_reduction) splits each row over RSPLIT programs on
program axis 0 (the rows are on axis 1): each program folds its chunk of the row, stores its partials in a workspace,
waits at a grid barrier and combines its peers' partials; one of them stores each result. With RSPLIT = 1 the same
kernel is a plain looped reduction: the `if HAS_RSPLIT:` blocks fall away, `rsplit_id` is 0 and the chunk is the
whole row. That kernel is what the twin translates; how the twin splits a row over blocks is its own choice (the
reduction translator's split mode), and the workspace and semaphore are not passed to it.
"""

from __future__ import annotations

import ast
import copy

from harvest.syntax import dotted, is_constexpr_annotation
from harvest.twin.no_twin import NoTwin

SPLIT = "RSPLIT"
ROW_LENGTH = "rnumel"  # the template's name for the row's length (`rnumel = r0_numel`)


def is_cooperative(kernel_constexprs: tuple[str, ...], grid: tuple[ast.expr, ...]) -> bool:
    """An Inductor cooperative reduction: an RSPLIT constexpr that is launch()'s first grid element."""
    return SPLIT in kernel_constexprs and len(grid) == 2 and _is_split_count(grid[0])


def _is_split_count(node: ast.expr) -> bool:
    """`config["RSPLIT"]`."""
    return (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value == SPLIT
            and isinstance(node.value, ast.Name) and node.value.id == "config")


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _targets(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, ast.Assign):
        return set().union(*(_names(t) for t in stmt.targets))
    if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        return _names(stmt.target)
    return set()


def _is_split_guard(test: ast.expr, split_names: set[str]) -> bool:
    """`rsplit_id == (k % RSPLIT)`: which of the programs stores a result."""
    return (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.left, ast.Name) and test.left.id in split_names and _names(test.comparators[0]) <= {SPLIT})


class _ProgramAxis(ast.NodeTransformer):
    """tl.program_id(1) -> tl.program_id(0): the rows move to the only program axis."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if dotted(node.func) == "tl.program_id" and len(node.args) == 1 and isinstance(node.args[0], ast.Constant):
            if node.args[0].value == 0:
                raise NoTwin("a cooperative reduction that reads its split's program id other than as rsplit_id")
            node.args[0] = ast.Constant(0)
        return node


def as_row_reduction(body: list[ast.stmt], grid: tuple[ast.expr, ...]) -> tuple[list[ast.stmt], tuple[ast.expr, ...]]:
    """The kernel's statements and grid as the looped row reduction they are with RSPLIT = 1 (see the module's
    docstring), or NoTwin where the kernel leaves Inductor's pattern."""
    split_names = {SPLIT}  # names whose value depends on how the row is split (dropped with their statements)
    row_end: ast.expr | None = None
    kept: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, ast.AnnAssign) and is_constexpr_annotation(stmt.annotation) and _names(stmt.value) & split_names:
            split_names |= _targets(stmt)  # RSPLIT_NEXT_POWER_OF_2, RSPLIT_IS_POWER_OF_2, HAS_RSPLIT
            continue
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and dotted(stmt.value.func) == "tl.program_id":
            if isinstance(stmt.value.args[0], ast.Constant) and stmt.value.args[0].value == 0:
                split_names |= _targets(stmt)  # rsplit_id
                continue
        if isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Name) and stmt.test.id in split_names:
            assigned = set().union(*(_targets(s) for s in ast.walk(stmt) if isinstance(s, ast.stmt)))
            defined = set().union(*(_targets(s) for k in kept for s in ast.walk(k) if isinstance(s, ast.stmt))) if kept else set()
            split_names |= assigned - defined  # the names it rebinds (the combined results) keep their own values
            continue  # `if HAS_RSPLIT:` (the workspace, the barrier, the peers) and `if RSPLIT_IS_POWER_OF_2:`
        if isinstance(stmt, ast.If) and _is_split_guard(stmt.test, split_names):
            if stmt.orelse:
                raise NoTwin("a cooperative reduction whose store guard has an else branch")
            kept.extend(stmt.body)  # every row's one store
            continue
        if isinstance(stmt, ast.For):
            call = stmt.iter
            if isinstance(call, ast.Call) and dotted(call.func) == "tl.range" and len(call.args) == 3 and _names(call.args[0]) & split_names:
                aliases = {t.targets[0].id: t.value for t in kept if isinstance(t, ast.Assign) and len(t.targets) == 1
                           and isinstance(t.targets[0], ast.Name)}
                if row_end is None and ROW_LENGTH in aliases:  # no clamp where the chunks end at the row's end
                    row_end = ast.Name(ROW_LENGTH, ast.Load())
                if row_end is None:
                    raise NoTwin("a cooperative reduction loop whose row length is not known")
                while isinstance(row_end, ast.Name) and row_end.id in aliases:  # rnumel = r0_numel: the launch's own name
                    row_end = aliases[row_end.id]
                stmt = copy.deepcopy(stmt)
                stmt.iter = ast.Call(call.func, [ast.Constant(0), row_end, call.args[2]], call.keywords)
                kept.append(stmt)
                continue
        if isinstance(stmt, ast.Assign) and _names(stmt.value) & split_names:
            value = stmt.value
            # rsplit_end = tl.where(rsplit_end < rnumel, rsplit_end, rnumel): the row's end
            if (isinstance(value, ast.Call) and dotted(value.func) == "tl.where" and len(value.args) == 3
                    and not _names(value.args[2]) & split_names):
                row_end = value.args[2]
            split_names |= _targets(stmt)
            continue
        kept.append(stmt)
    used = set().union(*(_names(s) for s in kept)) if kept else set()
    if used & (split_names - {SPLIT}):
        raise NoTwin(f"a cooperative reduction that reads {', '.join(sorted(used & (split_names - {SPLIT})))} "
                     "outside Inductor's split pattern")
    kept = [_ProgramAxis().visit(copy.deepcopy(s)) for s in kept]
    return _without_dead(kept), (grid[1],)


def _without_dead(body: list[ast.stmt]) -> list[ast.stmt]:
    """Without the assignments of plain arithmetic that nothing reads (num_rblocks, left over from the split)."""
    kept = list(body)
    while True:
        used = [_names(s) - (_targets(s) if isinstance(s, ast.Assign) else set()) for s in kept]
        read = set().union(*used) if used else set()
        dead = [s for s in kept if isinstance(s, ast.Assign) and _targets(s) and not _targets(s) & read
                and not any(isinstance(n, ast.Call) for n in ast.walk(s.value))]
        if not dead:
            return kept
        kept = [s for s in kept if s not in dead]
