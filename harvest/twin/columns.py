"""Column reductions: where the kernel's loads walk memory along its rows and the reduced dimension is the outer one
(a bias gradient summing over a batch), a block takes 32 neighbouring rows along threadIdx.x (so that loads
coalesce) and its threadIdx.y threads stride over each row's reduced dimension; the rows' partials are combined
through shared memory. With TwinChoices.column_rows_per_lane > 1 a looped one's thread takes that many neighbouring
rows, read by one 16-byte load a column step (ColumnGroups)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from harvest.syntax import dotted
from harvest.twin.body import Axes, defines, mask_of, names_in, names_used, offset_at, size_stand_ins
from harvest.twin.cpp import Var
from harvest.twin.facts import CTYPES, ModuleFacts, TwinSource
from harvest.twin.looped import LoopedRows, check_loop, copy_state, declare_copies
from harvest.twin.persistent import emit_persistent
from harvest.twin.pointwise import access_call, axis_masks, declare_grouped, emit_grouped, grouped_accesses
from harvest.twin.row_kernel import RECOMPUTED, Lanes, RowEmitters, RowKernel, loop_range
from harvest.twin.row_reductions import bind_result, reduction_call, softmax_fast

LANES = Lanes("static_cast<int32_t>(threadIdx.y)", "blockDim.y", "hv::column_reduce", ("threadIdx.y == 0", "hv_row_ok"), ("hv_row_ok",))


def translate(kernel: RowKernel) -> TwinSource:
    out, rows_per_lane = kernel.out, kernel.choices.column_rows_per_lane
    groups = column_groups(kernel.body, kernel.axes, kernel.row_name, kernel.facts, rows_per_lane) \
        if kernel.looped and rows_per_lane > 1 else None
    emitters = kernel.begin(LANES)
    if groups is not None:
        out.emit(f"// the reduced dimension is the outer one: a block takes {32 * rows_per_lane} neighbouring rows, "
                 f"{rows_per_lane} a thread (16-byte loads),")
        out.emit(f"// and its threadIdx.y threads stride over their {kernel.numel_text} elements")
        out.open(f"for (int64_t hv_tile = static_cast<int64_t>(blockIdx.x) * {32 * rows_per_lane}; hv_tile < hv_rows; "
                 f"hv_tile += static_cast<int64_t>(gridDim.x) * {32 * rows_per_lane}) {{")
        out.emit(f"const int64_t hv_first = hv_tile + {rows_per_lane} * static_cast<int64_t>(threadIdx.x);  // this thread's first row")
        emit_column_groups(kernel, emitters, groups, rows_per_lane)
        kernel.end_rows()
        blocks = f"hv::column_blocks((hv_rows + {rows_per_lane - 1}) / {rows_per_lane})"
        notes = [f"a reduction over the outer dimension: {32 * rows_per_lane} rows per block, {rows_per_lane} "
                 "neighbouring rows a thread along threadIdx.x (16-byte loads where aligned), threadIdx.y threads stride "
                 "over the reduced dimension", "each row's partials combined through shared memory"]
        return kernel.finish(kernel.launch_lines(), blocks, "hv::column_threads(hv_rows, hv_rnumel)", notes)
    out.emit("// the reduced dimension is the outer one: a block takes 32 neighbouring rows (threadIdx.x, so loads coalesce)")
    out.emit(f"// and its threadIdx.y threads stride over their {kernel.numel_text} elements")
    out.open("for (int64_t hv_tile = static_cast<int64_t>(blockIdx.x) * 32; hv_tile < hv_rows; hv_tile += static_cast<int64_t>(gridDim.x) * 32) {")
    out.emit("const bool hv_row_ok = hv_tile + threadIdx.x < hv_rows;  // the last tile's extra threads compute the last row, store nothing")
    kernel.declare_row("hv_row_ok ? hv_tile + threadIdx.x : hv_rows - 1")
    if kernel.looped:
        LoopedRows(kernel, emitters).emit()
    else:
        emit_persistent(out, kernel.body, kernel.axes, kernel.exprs, emitters, kernel.rnumel, None, kernel.scans)
    kernel.end_rows()
    notes = ["a reduction over the outer dimension: 32 rows per block along threadIdx.x (coalesced loads), "
             "threadIdx.y threads stride over the reduced dimension", "partials combined per row through shared memory"]
    if not kernel.looped:
        notes.append(RECOMPUTED)
    # 32 rows x up to 16 lanes
    return kernel.finish(kernel.launch_lines(), "hv::column_blocks(hv_rows)", "hv::column_threads(hv_rows, hv_rnumel)", notes)


def reduces_columns(body: list[ast.stmt], axes: Axes, row_name: str, facts: ModuleFacts) -> bool:
    """True when the kernel's loads walk memory along its rows, not along the reduced dimension: one row step moves
    the address by 1 element and one reduction step by more (a bias gradient summing over a batch). Only the loads
    that move with both vote: one the same for every row reads at one address per warp either way."""
    votes = []
    sizes = size_stand_ins(facts)
    for call in (n for s in body for n in ast.walk(s) if isinstance(n, ast.Call) and dotted(n.func) == "tl.load"):
        offsets = [offset_at(body, call.args[0], {**sizes, row_name: row, axes.reduction_base: lane}) for row, lane in ((5, 3), (6, 3), (5, 4))]
        if None in offsets:
            continue
        base, next_row, next_lane = offsets
        if next_lane == base:
            continue  # a broadcast value or one per row (loaded once, outside the reduction's loop): no vote
        if next_row == base:
            continue  # the same for every row (a weight along the reduced dimension): either way a warp reads it at once
        votes.append(abs(next_row - base) == 1 and abs(next_lane - base) > 1)
    return bool(votes) and sum(votes) * 2 > len(votes)


@dataclass(frozen=True)
class ColumnGroups:
    """A looped column reduction taken rows_per_lane neighbouring rows a thread: its one loop, the statements
    before it that compute from the row (each row's, again where it is needed), and its loads contiguous along the
    rows ("load", call, pointer), read through one 16-byte vector per column step where aligned."""

    loop: ast.For
    row_level: list[ast.stmt]
    grouped: list[tuple[str, ast.Call, str]]


def column_groups(body: list[ast.stmt], axes: Axes, row_name: str, facts: ModuleFacts, rows_per_lane: int) -> ColumnGroups | None:
    """The ColumnGroups of a looped column reduction, or None where the mapping does not apply: more than one loop,
    a load before the loop that moves with the row (it would be loaded again each column step), or no load that is
    contiguous along the rows in groups of `rows_per_lane` with a mask the same for all of them."""
    loops = [s for s in body if isinstance(s, ast.For)]
    if len(loops) != 1:
        return None
    loop = loops[0]
    before = body[: body.index(loop)]
    moving = {row_name}
    for stmt in before:
        if names_used(stmt) & moving:
            moving |= defines(stmt)
    row_level = [s for s in before if defines(s) & moving]
    if any(isinstance(n, ast.Call) and dotted(n.func) == "tl.load" for s in row_level for n in ast.walk(s)):
        return None
    inner = row_level + [s for s in loop.body if not isinstance(s, ast.For)]
    uniform = {name for s in inner if isinstance(s, ast.Assign) for name in defines(s) if not names_used(s) & moving}
    stand_ins = {loop.target.id: 0, axes.reduction_base: 3}
    grouped, width = grouped_accesses(inner, row_name, axis_masks(inner, {row_name}) | uniform, facts, [], 16, stand_ins)
    grouped = [g for g in grouped if g[0] == "load" and 16 // CTYPES[facts.arg_dtypes[g[2]]][1] == rows_per_lane]
    if not grouped or width < rows_per_lane:
        return None
    return ColumnGroups(loop, row_level, grouped)


def emit_column_groups(kernel: RowKernel, emitters: RowEmitters, groups: ColumnGroups, rows_per_lane: int) -> None:
    """Inside the tile loop (hv_first: the thread's first row): the accumulators, one copy per row of the thread; the
    column loop, each step's rows in turn (hv_e), their grouped loads one vector at hv_e 0 when all the thread's
    rows are there, the mask holds and the address is aligned; then each row's reductions and row statements."""
    out, body, axes, exprs, row_name, row_dtype = kernel.out, kernel.body, kernel.axes, kernel.exprs, kernel.row_name, kernel.row_dtype
    lanes, row_statements, lane_statements, reductions = emitters.lanes, emitters.row, emitters.lane, emitters.reductions
    ctype = CTYPES[row_dtype][0]
    position = body.index(groups.loop)
    defined: set[str] = set()
    for stmt in body[:position]:
        if stmt not in groups.row_level and defines(stmt) != {axes.reduction_base}:
            row_statements.statement(stmt)
        defined |= defines(stmt)
    check_loop(groups.loop, body[position + 1 :], defined)
    out.declare(axes.reduction_base, "i32", lanes.lane)
    copies = declare_copies(out, sorted({n for s in groups.loop.body for n in defines(s)} & defined), rows_per_lane, "  // one a row")

    def open_row() -> None:
        out.emit("#pragma unroll")
        out.open(f"for (int32_t hv_e = 0; hv_e < {rows_per_lane}; ++hv_e) {{  // the thread's row hv_e")
        out.emit("const bool hv_row_ok = hv_first + hv_e < hv_rows;  // past the last row: compute the last, store nothing")
        out.declare(row_name, row_dtype, f"static_cast<{ctype}>(hv_row_ok ? hv_first + hv_e : hv_rows - 1)")
        for stmt in groups.row_level:
            row_statements.statement(stmt)

    _, stop = loop_range(groups.loop, axes)
    stop_code = exprs(stop)
    cname = out.fresh(groups.loop.target.id)
    out.open(f"for (int32_t {cname} = 0; {cname} < {stop_code.code}; {cname} += {lanes.count}) {{")
    out.bind(groups.loop.target.id, Var(cname, "i32", len(out.scopes)))
    found = declare_grouped(out, out.facts, groups.grouped, rows_per_lane)
    open_row()
    for acc, (array, dtype, _) in copies.items():
        out.bind(acc, Var(f"{array}[hv_e]", dtype, len(out.scopes)))
    out.open(f"if ({cname} + {lanes.lane} < {stop_code.code}) {{")
    for stmt in groups.loop.body:
        access = found.get(id(access_call(stmt)))
        if access is None:
            lane_statements.statement(stmt)
            continue
        mask = mask_of(access[1])
        condition = f"hv_first + {rows_per_lane} <= hv_rows"
        if mask is not None and not (isinstance(mask, ast.Constant) and mask.value is None):
            condition += f" && {out.cast(exprs(mask), 'i1')}"
        emit_grouped(out, axes, lane_statements, exprs.special, stmt, *access, condition=condition)
    out.close()
    out.close()
    out.close()
    open_row()
    for stmt in body[position + 1 :]:
        reduction = reduction_call(stmt.value) if isinstance(stmt, ast.Assign) else None
        if reduction is None:
            row_statements.statement(stmt)
            continue
        kind, arguments, call = reduction
        fast = softmax_fast(call) if kind == "online_softmax_reduce" else "false"
        accumulators = sorted(set().union(*(names_in(a) for a in arguments)) & set(copies))
        state, value, fields = copy_state(out, exprs, reductions, copies, accumulators, (kind, arguments, fast), "hv_e")
        result = out.fresh("hv_" + kind.replace("_", ""))
        out.emit(f"const {state} {result} = {lanes.reduce}({value}, {reductions.combiner(kind, fast)});")
        out.bind(f" {result}", Var(result, "", len(out.scopes)))
        bind_result(out, row_statements, stmt, result, fields)
    out.close()
