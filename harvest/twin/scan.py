"""Scans along the row: `x_scan, = tl.associative_scan((x,), 1, combine)`.

The twin takes a row in tiles of its threads (a warp's 32 lanes, or a block's threads), in the row's order: each
tile is scanned with warp shuffles (and, for a block, its warps' totals through shared memory), then combined with
the carry, the combined value of every earlier tile, so that element i gets combine(x0, ..., xi) as Triton's scan
gives it. The combine function, a @triton.jit helper of the module, becomes a C++ lambda at the top of the kernel.
Every thread of a tile takes part in its scan: a thread past the row's end computes the row's last element again
(its index clamped) and stores nothing, and its value, after every real one in the row's order, changes none of
theirs. Scans are statements of a reduction's row (persistent.py's passes, looped.py's tiles, split_rows.py's
chunks); what a looped scan must be to be translated (tile_carries, check_scan_loads) is here.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from harvest.syntax import dotted
from harvest.twin.body import Axes, defines, mask_of, names_used
from harvest.twin.cpp import Emitter, Var
from harvest.twin.expressions import Expressions, Statements
from harvest.twin.no_twin import NoTwin


@dataclass(frozen=True)
class ScanCall:
    """One scan statement: the name it binds, the scanned value and the combine helper's name; carries: a scan of a
    row's tile that carries the tiles before it (a split scan read as a row scan: harvest.twin.split_scan)."""

    name: str
    value: ast.expr
    combine: str
    carries: bool = False


def scan_call(stmt: ast.stmt) -> ScanCall | None:
    """`name, = tl.associative_scan((value,), 1, helper)`, or None when `stmt` is no scan."""
    if not (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and dotted(stmt.value.func) == "tl.associative_scan"):
        return None
    call = stmt.value
    target = stmt.targets[0]
    values = call.args[0] if call.args else None
    axis = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "axis"), None)
    combine = call.args[2] if len(call.args) > 2 else next((k.value for k in call.keywords if k.arg == "combine_fn"), None)
    if not (isinstance(values, ast.Tuple) and len(values.elts) == 1 and isinstance(target, ast.Tuple) and len(target.elts) == 1):
        raise NoTwin(f"a scan of several values at once: `{ast.unparse(stmt)[:80]}`")
    if not (isinstance(axis, ast.Constant) and axis.value in (1, -1)):
        raise NoTwin(f"a scan over axis {ast.unparse(axis) if axis is not None else '?'} (the twin scans rows: axis 1)")
    if not (isinstance(combine, ast.Name) and isinstance(target.elts[0], ast.Name)):
        raise NoTwin(f"a scan whose combine is not one of the module's helpers: `{ast.unparse(stmt)[:80]}`")
    carries = any(k.arg == "harvest_carry" for k in call.keywords)
    return ScanCall(target.elts[0].id, values.elts[0], combine.id, carries)


def is_last_of_tile(stmt: ast.stmt, bases: set[str]) -> ast.expr | None:
    """`x = triton_helpers.select_one((v), rbase == (RBLOCK - 1), dim=-1, keep_dims=True)` -> v: a looped scan's
    carry, the value at its tile's last column (whatever the tile's width). bases: the column index's names."""
    if not (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and dotted(stmt.value.func) == "triton_helpers.select_one"):
        return None
    call = stmt.value
    if len(call.args) != 2:
        raise NoTwin(f"select_one with {len(call.args)} arguments")
    mask = call.args[1]
    if not (isinstance(mask, ast.Compare) and isinstance(mask.left, ast.Name) and mask.left.id in bases
            and isinstance(mask.comparators[0], ast.BinOp) and isinstance(mask.comparators[0].op, ast.Sub)):
        raise NoTwin(f"select_one of another element than the tile's last: `{ast.unparse(stmt)[:80]}`")
    return call.args[0]


def tile_carries(loop: ast.For, body: list[ast.stmt], axes: Axes) -> set[str]:
    """Names a looped scan's body assigns that are the same for every column of a tile: made of select_one (the
    tile's last value), the loop's offset and values from before the loop, never of a column's own value."""
    columns = {axes.reduction_base}
    bases = base_names(body, axes)
    for stmt in loop.body:  # column-level: what reads the column index or a column-level value (select_one aside)
        if isinstance(stmt, ast.Assign) and is_last_of_tile(stmt, bases) is None and names_used(stmt) & columns:
            columns |= defines(stmt)
        if isinstance(stmt, ast.Assign) and scan_call(stmt) is not None:
            columns |= defines(stmt)
    return {n for s in loop.body if isinstance(s, ast.Assign) for n in defines(s)} - columns


def base_names(body: list[ast.stmt], axes: Axes) -> set[str]:
    """The column index's names: the reduction base and its plain copies (`rbase = r0_base`)."""
    names = {axes.reduction_base}
    for stmt in ast.walk(ast.Module(list(body), [])):
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name) and stmt.value.id in names:
            names |= defines(stmt)
    return names


def check_scan_loads(loop: ast.For) -> None:
    """A looped scan's threads all take part in every tile, the last one's past the row included: each load of the
    loop must be masked (Inductor's column mask) so that those read nothing."""
    for node in ast.walk(loop):
        if isinstance(node, ast.Call) and dotted(node.func) == "tl.load" and mask_of(node) is None:
            raise NoTwin(f"a looped scan with a load without a mask: `{ast.unparse(node)[:80]}`")


@dataclass
class CombineLambdas:
    """The kernel's combine helpers as C++ lambdas, one per helper and dtype, written at the top of the kernel."""

    helpers: dict[str, ast.FunctionDef]
    written: dict[tuple[str, str], str] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)  # the lambdas' C++, for the top of the kernel's body (emitted last)

    def operands(self, out: Emitter, exprs: Expressions, axes, scan: ScanCall) -> tuple[str, str, str]:
        """(the scanned value as C++, its dtype, the combine lambda's name) of a scan statement."""
        value = exprs(scan.value)
        dtype = {"int": "i32", "float": "fp32"}.get(value.dtype, value.dtype)
        return out.cast(value, dtype), dtype, self.lambda_for(out, axes, scan.combine, dtype)

    def lambda_for(self, out: Emitter, axes, name: str, dtype: str) -> str:
        key = (name, dtype)
        if key in self.written:
            return self.written[key]
        helper = self.helpers.get(name)
        if helper is None:
            raise NoTwin(f"the scan's combine {name} is not a helper of the module")
        args = [a.arg for a in helper.args.args]
        if len(args) != 2 or not helper.body or not isinstance(helper.body[-1], ast.Return) or helper.body[-1].value is None:
            raise NoTwin(f"the combine helper {name} does not take two values and return one")
        cname = out.fresh("hv_combine")
        out.taken.add(cname)
        ctype = out.ctype(dtype)
        saved_lines, saved_indent = out.lines, out.indent
        out.lines, out.indent = [], 1
        out.open(f"auto {cname} = [](const {ctype} {args[0]}, const {ctype} {args[1]}) -> {ctype} {{  // {name}")
        for arg in args:
            out.bind(arg, Var(arg, dtype, len(out.scopes)))
        exprs = Expressions(out, axes)
        statements = Statements(out, exprs)
        for stmt in helper.body[:-1]:
            statements.statement(stmt)
        out.emit(f"return {out.cast(exprs(helper.body[-1].value), dtype)};")
        out.close("};")
        self.lines += out.lines
        out.lines, out.indent = saved_lines, saved_indent
        self.written[key] = cname
        return cname
