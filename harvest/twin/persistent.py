"""A persistent reduction's row (all of it in one Triton program): each reduction is a pass of the row's threads over
it, computing the lane-level values it needs; the stores go in the last pass. Block rows, warp rows, persistent
column reductions and the mix-order reduction's rows are all emitted here; a warp per row keeps the values later
passes need in registers (Kept)."""

from __future__ import annotations

import ast

from harvest.syntax import dotted, pointer_of
from harvest.twin.body import Axes, defines, names_in, names_used
from harvest.twin.choices import TwinChoices
from harvest.twin.cpp import Emitter, Value, Var
from harvest.twin.expressions import Expressions
from harvest.twin.pointwise import access_call, declare_grouped, emit_grouped
from harvest.twin.row_kernel import RowEmitters
from harvest.twin.row_reductions import bind_result, reduction_call, softmax_fast
from harvest.twin.scan import CombineLambdas, scan_call


def emit_persistent(out: Emitter, body: list[ast.stmt], axes: Axes, exprs: Expressions, emitters: RowEmitters, rnumel: Value,
                    kept: Kept | None = None, scans: CombineLambdas | None = None) -> None:
    """Each reduction is a pass of the row's threads over it, with the lane-level statements it needs; the stores
    go in the last pass. A scan (scans: the kernel's combine lambdas) is a lane-level statement whose tile of the
    row (hv_k: 32 values, one a lane; hv_r0: the block's threads) is scanned together: every thread takes part
    (hv_in: a thread past the row's end clamps its index, folds and stores nothing), each scan's carry declared
    before its pass."""
    lanes, row_statements, lane_statements, reductions = emitters.lanes, emitters.row, emitters.lane, emitters.reductions
    lane_level = {axes.reduction_base}
    for stmt in body:
        if isinstance(stmt, ast.Assign) and reduction_call(stmt.value) is None and names_used(stmt) & lane_level:
            lane_level |= defines(stmt)
    pending: list[ast.stmt] = []  # lane-level definitions, computed inside the passes that need them
    effects = [i for i, s in enumerate(body) if isinstance(s, ast.Expr) and names_used(s) & lane_level]
    last_effect = effects[-1] if effects else -1
    deferred: list[ast.stmt] = []

    def closure(needed: set[str]) -> list[ast.stmt]:
        chosen = []
        for stmt in reversed(pending):
            if defines(stmt) & needed:
                chosen.append(stmt)
                needed |= names_used(stmt)
        return list(reversed(chosen))

    def open_pass(statements_needed: list[ast.stmt]) -> None:
        """A pass of the block's threads over the row, with the lane-level statements it needs."""
        pass_start, pass_indent = len(out.lines), out.indent
        if kept is None:
            out.emit("#pragma unroll 4  // four of the thread's loads in flight at once" if scans is None else
                     "#pragma unroll 1  // each tile's scan waits for the tile before: nothing to overlap")
            out.open(f"for (int32_t hv_r0 = 0; hv_r0 < {rnumel.code}; hv_r0 += {lanes.count}) {{")
            out.emit(f"const int32_t hv_r = hv_r0 + {lanes.lane};")
        else:  # a fixed number of steps, unrolled: the kept arrays are registers
            start, indent = len(out.lines), out.indent
            calls = {id(n) for s in statements_needed if not defines(s) & set(kept.arrays) for n in ast.walk(s)}
            groups.update(declare_grouped(out, out.facts, [g for i, g in kept.grouped.items() if i in calls], kept.width))
            out.emit("#pragma unroll")
            out.open(f"for (int32_t hv_k = 0; hv_k < {kept.per_lane}; ++hv_k) {{")
            if kept.width == 1:
                out.emit(f"const int32_t hv_r = hv_k * 32 + {lanes.lane};")
            else:
                out.emit(f"const int32_t hv_e = hv_k % {kept.width};  // the lane's {kept.width} neighbouring values: one 16-byte access")
                out.emit(f"const int32_t hv_r = (hv_k / {kept.width}) * {32 * kept.width} + {kept.width} * {lanes.lane} + hv_e;")
        if scans is None:
            out.open(f"if (hv_r < {rnumel.code}) {{")
            out.declare(axes.reduction_base, "i32", "hv_r")
        else:
            out.emit(f"const bool hv_in = hv_r < {rnumel.code};  // past the row's end: the last element again, not folded or stored")
            out.open("{")
            out.declare(axes.reduction_base, "i32", f"hv_in ? hv_r : ({rnumel.code}) - 1")
        for stmt in statements_needed:
            scan = scan_call(stmt) if scans is not None else None
            if scan is not None:
                value, dtype, combine = scans.operands(out, exprs, axes, scan)
                carry = out.fresh(f"hv_carry_{scan.name}")
                out.taken.add(carry)
                out.lines.insert(pass_start, "    " * pass_indent + f"{out.ctype(dtype)} {carry}{{}};  // {scan.name}: the tiles before")
                step = ("hv::warp_scan", "hv_k > 0") if kept is not None else ("hv::block_scan", "hv_r0 > 0")
                out.declare(scan.name, dtype, f"{step[0]}({value}, {combine}, {carry}, {step[1]})")
                continue
            if kept is not None and len(defines(stmt)) == 1 and next(iter(defines(stmt))) in kept.arrays:
                name = next(iter(defines(stmt)))
                array, dtype = kept.arrays[name]
                out.declare(name, dtype, f"{array}[hv_k]")
                continue
            access = groups.get(id(access_call(stmt)))
            if access is not None:
                emit_grouped(out, axes, lane_statements, exprs.special, stmt, *access)
            else:
                lane_statements.statement(stmt)
            name = kept.worth_keeping(stmt) if kept is not None else None
            var = out.lookup(name) if name is not None and name not in out.mutable else None
            if var is not None:
                array = out.fresh(f"hv_kept_{name}")
                out.taken.add(array)
                out.lines.insert(start, "    " * indent + f"{out.ctype(var.dtype)} {array}[{kept.per_lane}];")
                out.emit(f"{array}[hv_k] = {var.cname};")
                kept.arrays[name] = (array, var.dtype)

    def close_pass() -> None:
        for kind, _, _, flag, array, at in groups.values():
            if kind == "store":  # the group's last value written: its vector goes out
                out.emit(f"if (hv_e == {kept.width - 1} && {flag}) hv::store_vector({at}, {array});")
        groups.clear()
        out.close()
        out.close()

    groups: dict = {}  # this pass's grouped accesses (declare_grouped)
    for position, stmt in enumerate(body):
        if defines(stmt) == {axes.reduction_base}:
            continue
        reduction = reduction_call(stmt.value) if isinstance(stmt, ast.Assign) else None
        if reduction is not None:
            kind, arguments, call = reduction
            fast = softmax_fast(call) if kind == "online_softmax_reduce" else "false"
            needed = set().union(*(names_in(a) for a in arguments))
            start = len(out.lines)
            partial = out.fresh("hv_partial")
            open_pass(closure(needed | (kept.prefetch(pending, closure(set(needed))) if kept else set())))
            ctype, value, fields = reductions.state(kind, [exprs(a) for a in arguments], fast)
            out.emit(f"{'if (hv_in) ' if scans is not None else ''}{partial} = {reductions.combiner(kind, fast)}({partial}, {value});")
            close_pass()
            identity = reductions.identity(kind, ctype, fields)
            out.lines.insert(start, "    " * out.indent + f"{ctype} {partial} = {identity};")
            out.bind(f" {partial}", Var(partial, "", len(out.scopes)))
            result = out.fresh("hv_" + kind.replace("_", ""))
            out.emit(f"const {ctype} {result} = {lanes.reduce}({partial}, {reductions.combiner(kind, fast)});")
            out.bind(f" {result}", Var(result, "", len(out.scopes)))
            bind_result(out, row_statements, stmt, result, fields)
            continue
        if defines(stmt) & lane_level:
            pending.append(stmt)
            continue
        if isinstance(stmt, ast.Expr) and names_used(stmt) & lane_level:
            deferred.append(stmt)
            if position == last_effect:
                open_pass(closure(set().union(*(names_used(s) for s in deferred))) + deferred)
                close_pass()
            continue
        row_statements.statement(stmt)
    if kept is not None:
        kept.drop_unread(out)


class Kept:
    """A warp-per-row persistent reduction's row values kept in registers between its passes: each lane's share of
    a loaded (or randomly drawn) value, `per_lane` of them, in an array the fully unrolled passes index by hv_k.
    A load from memory the kernel also stores to is not kept (a later pass must read what was stored)."""

    def __init__(self, choices: TwinChoices, rnumel: int, stored: set[str], grouped: list[tuple[str, ast.Call, str]] | None = None,
                 width: int = 1):
        self.choices = choices
        self.per_lane = -(-rnumel // 32)
        self.stored = stored
        self.arrays: dict[str, tuple[str, str]] = {}  # Triton name -> (C++ array, dtype)
        # a lane's values in groups of `width` neighbours (lane l: width * l + 0..width-1 of each 32 * width), so that
        # the `grouped` accesses (contiguous in each group) go through 16-byte vectors where aligned; 1: lanes stride
        self.width = width
        self.grouped = {id(call): (kind, call, pointer) for kind, call, pointer in grouped or []}

    def worth_keeping(self, stmt: ast.stmt) -> str | None:
        """The name `stmt` defines, when its value is worth keeping and a lane has the registers for it."""
        if len(self.arrays) + 1 > self.choices.kept_registers // self.per_lane:
            return None
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            return None
        calls = [dotted(n.func) for n in ast.walk(stmt.value) if isinstance(n, ast.Call)]
        loads = [n for n in ast.walk(stmt.value) if isinstance(n, ast.Call) and dotted(n.func) == "tl.load"]
        if any(pointer_of(load.args[0]) in self.stored for load in loads):
            return None
        if loads or any(c in ("tl.rand", "tl.randn", "tl.randint") for c in calls):
            return stmt.targets[0].id
        return None

    def prefetch(self, pending: list[ast.stmt], this_pass: list[ast.stmt]) -> set[str]:
        """Names of the loads that a later pass needs and this pass can load too, into the registers left (of
        choices.prefetch_registers) once this pass's own loads are kept: weights and biases loaded with the row, not
        after its reductions, as Triton does."""

        def loads(stmt: ast.stmt) -> bool:
            return any(isinstance(n, ast.Call) and dotted(n.func) == "tl.load" for n in ast.walk(stmt))
        slots = self.choices.prefetch_registers // self.per_lane - len(self.arrays) - sum(
            1 for s in this_pass if loads(s) and not (defines(s) & set(self.arrays)))
        chosen: set[str] = set()
        for stmt in pending:
            if slots <= 0:
                break
            if stmt in this_pass or not loads(stmt) or defines(stmt) & set(self.arrays):
                continue
            name = self.worth_keeping(stmt)
            if name is not None:
                chosen.add(name)
                slots -= 1
        return chosen

    def drop_unread(self, out: Emitter) -> None:
        """Kept arrays that no later pass reads (the last pass's loads) are not written at all."""
        for array, _ in self.arrays.values():
            if not any(line.rstrip().endswith(f" = {array}[hv_k];") for line in out.lines):
                out.lines[:] = [line for line in out.lines if f" {array}[{self.per_lane}];" not in line
                                and not line.lstrip().startswith(f"{array}[hv_k] = ")]
