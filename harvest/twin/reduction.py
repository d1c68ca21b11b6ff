"""Row reductions: one thread block per row, its threads striding over the row; per-thread partials folded the way
the kernel folds them, then combined by warp shuffles and shared memory."""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, replace

from harvest.shapes import evaluate_node
from harvest.syntax import dotted, pointer_of
from harvest.twin.body import (
    Axes,
    arange_block,
    defines,
    finish,
    flatten_loops,
    host_expr,
    index_dtype,
    mask_of,
    names_in,
    names_used,
    offset_at,
    program_offset,
    size_stand_ins,
    split_prologue,
    start_emitter,
    steps_within_groups,
)
from harvest.twin.cpp import Emitter, Value, Var, literal
from harvest.twin.expressions import Expressions, Statements
from harvest.twin.facts import CTYPES, FLOATS, ModuleFacts, NoTwin, TwinSource
from harvest.twin.pointwise import access_call, aliases, axis_masks, declare_grouped, emit_grouped, grouped_accesses
from harvest.twin.scan import CombineLambdas, is_last_of_tile, scan_call

# Reductions over the row: name -> (combine functor, identity kind)
REDUCTIONS = {
    "sum": ("hv::Sum", "zero"), "max2": ("hv::MaxNan", "lowest"), "min2": ("hv::MinNan", "highest"),
    "max": ("hv::Max", "lowest"), "min": ("hv::Min", "highest"), "prod": ("hv::Prod", "one"), "any": ("hv::Any", "zero"),
}


# How each accumulator of an Inductor reduction loop is updated, and the reduction that must end it.
LOOP_COMBINES = {"+": ("sum",), "maximum": ("max2", "max"), "minimum": ("min2", "min"), "*": ("prod",),
                 "|": ("any",), "welford_reduce": ("welford",), "online_softmax_combine": ("online_softmax_reduce",),
                 "maximum_with_index": ("max_with_index",), "minimum_with_index": ("min_with_index",)}


ROW_REDUCTIONS = {"tl.sum": "sum", "tl.max": "max", "tl.min": "min", "triton_helpers.max2": "max2", "triton_helpers.min2": "min2",
                  "triton_helpers.prod": "prod", "triton_helpers.any": "any", "triton_helpers.welford": "welford",
                  "triton_helpers.max_with_index": "max_with_index", "triton_helpers.min_with_index": "min_with_index",
                  "triton_helpers.online_softmax_reduce": "online_softmax_reduce"}


ARITY = {"welford": 3, "max_with_index": 2, "min_with_index": 2, "online_softmax_reduce": 2}


def _reduction_call(value: ast.expr) -> tuple[str, list[ast.expr], ast.Call] | None:
    """`tl.sum(x, 1)[:, None]` (optionally `.to(dtype)`) and friends -> (kind, reduced arguments, call)."""
    while isinstance(value, ast.Subscript) or (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                                               and value.func.attr == "to" and isinstance(value.func.value, (ast.Subscript, ast.Call))):
        value = value.value if isinstance(value, ast.Subscript) else value.func.value
    if not isinstance(value, ast.Call) or dotted(value.func) not in ROW_REDUCTIONS:
        return None
    kind = ROW_REDUCTIONS[dotted(value.func)]
    count = ARITY.get(kind, 1)
    axis = value.args[count] if len(value.args) > count else next((k.value for k in value.keywords if k.arg in ("axis", "dim")), None)
    if not (isinstance(axis, ast.Constant) and axis.value in (1, -1)):
        raise NoTwin(f"a reduction over axis {ast.unparse(axis) if axis is not None else '?'} (the twin reduces rows: axis 1)")
    return kind, value.args[:count], value


def _identity(kind: str, dtype: str) -> str:
    if kind in ("sum", "any"):
        return literal(0, dtype)
    if kind == "prod":
        return literal(1, dtype)
    big = float("inf") if dtype in FLOATS else (2 ** (8 * CTYPES[dtype][1] - (0 if dtype.startswith("u") else 1)) - 1)
    small = float("-inf") if dtype in FLOATS else (0 if dtype.startswith("u") else -(2 ** (8 * CTYPES[dtype][1] - 1)))
    return literal(small if kind in ("max", "max2", "max_with_index") else big, dtype)


class RowReductions:
    """Block-wide combination of per-thread partials, and the per-thread folding that feeds it."""

    def __init__(self, out: Emitter):
        self.out = out

    def state(self, kind: str, values: list[Value], fast: str = "false") -> tuple[str, str, list[tuple[str, str]]]:
        """(C++ type of the partial, its value from `values`, [(field, dtype)] of the result)."""
        out = self.out
        if kind == "welford":
            return "hv::Welford", f"hv::Welford{{{', '.join(out.cast(v, 'fp32') for v in values)}}}", [(".mean", "fp32"), (".m2", "fp32"), (".weight", "fp32")]
        if kind == "online_softmax_reduce":
            return "hv::SoftmaxState", f"hv::SoftmaxState{{{', '.join(out.cast(v, 'fp32') for v in values)}}}", [(".max", "fp32"), (".sum", "fp32")]
        if kind in ("max_with_index", "min_with_index"):
            value, index = values
            vtype, itype = _concrete(value.dtype), _concrete(index.dtype)
            ctype = f"hv::ValueIndex<{out.ctype(vtype)}, {out.ctype(itype)}>"
            return ctype, f"{ctype}{{{out.cast(value, vtype)}, {out.cast(index, itype)}}}", [(".value", vtype), (".index", itype)]
        (value,) = values
        dtype = _concrete(value.dtype)
        return out.ctype(dtype), out.cast(value, dtype), [("", dtype)]

    def combiner(self, kind: str, fast: str = "false") -> str:
        if kind == "welford":
            return "hv::WelfordCombine()"
        if kind == "online_softmax_reduce":
            return f"hv::SoftmaxCombine<{fast}>()"
        if kind == "max_with_index":
            return "hv::ArgMax()"
        if kind == "min_with_index":
            return "hv::ArgMin()"
        return REDUCTIONS[kind][0] + "()"

    def identity(self, kind: str, ctype: str, fields: list[tuple[str, str]]) -> str:
        if kind == "welford":
            return "hv::Welford{0.0f, 0.0f, 0.0f}"
        if kind == "online_softmax_reduce":
            return "hv::SoftmaxState{-INFINITY, 0.0f}"
        if kind in ("max_with_index", "min_with_index"):
            (_, vtype), (_, itype) = fields
            index = literal(2 ** (8 * CTYPES[itype][1] - 1) - 1, itype)
            return f"{ctype}{{{_identity('max' if kind == 'max_with_index' else 'min', vtype)}, {index}}}"
        return _identity(kind, fields[0][1])


def _concrete(dtype: str) -> str:
    return "i32" if dtype == "int" else "fp32" if dtype == "float" else dtype


def _softmax_fast(call: ast.Call) -> str:
    flag = call.args[3] if len(call.args) > 3 else next((k.value for k in call.keywords if k.arg == "use_fast_math"), None)
    return "true" if isinstance(flag, ast.Constant) and flag.value else "false"


def _targets(stmt: ast.Assign) -> list[str]:
    target = stmt.targets[0]
    elements = target.elts if isinstance(target, ast.Tuple) else [target]
    if not all(isinstance(e, ast.Name) for e in elements):
        raise NoTwin(f"assignment to {ast.unparse(target)!r}")
    return [e.id for e in elements]


def _bind_result(out: Emitter, statements: Statements, stmt: ast.Assign, result: str, fields: list[tuple[str, str]]) -> None:
    names = _targets(stmt)
    if len(names) != len(fields):
        raise NoTwin(f"{len(names)} names for a reduction with {len(fields)} results")
    cast = _final_cast(stmt.value)
    for name, (suffix, dtype) in zip(names, fields):
        value = Value(f"{result}{suffix}", dtype)
        if cast is not None:
            target = statements.x.dtype_of(cast)
            value = Value(out.cast(value, target), target)
        statements.store_name(name, value)


def _final_cast(value: ast.expr) -> ast.expr | None:
    """The dtype of a trailing `.to(dtype)` around a reduction, if any."""
    while isinstance(value, ast.Subscript):
        value = value.value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "to" and value.args:
        return value.args[0]
    return None


def _check_loop(loop: ast.For, after: list[ast.stmt], outer: set[str], tile_carries: set[str] = frozenset()) -> None:
    """Every accumulator a reduction loop carries must be folded by a combine that its final reduction undoes
    (sum then tl.sum, maximum then max2, welford_reduce then welford, ...): only then may each CUDA thread fold its
    own share of the row first. tile_carries: a looped scan's carries, the same for every thread of the tile (made
    of the tile's last value), which need no combine, if nothing reads them after the loop."""
    assigned = {n for s in loop.body for n in defines(s)}
    for acc in sorted(assigned & outer & set(tile_carries)):
        if any(acc in names_used(s) for s in after):
            raise NoTwin(f"the scan's carry {acc} is used after its loop")
    carried = sorted(assigned & outer - set(tile_carries))
    definitions = {}
    for stmt in loop.body:
        if isinstance(stmt, ast.Assign):
            for name in defines(stmt):
                definitions[name] = stmt.value
    for acc in carried:
        update = definitions[acc]
        if isinstance(update, ast.Call) and dotted(update.func) == "tl.where" and len(update.args) == 3 \
                and isinstance(update.args[2], ast.Name) and update.args[2].id == acc:
            update = update.args[1]
        kind = None
        if isinstance(update, ast.Name) and update.id in definitions:
            source = definitions[update.id]
            if isinstance(source, ast.BinOp) and acc in names_in(source) and type(source.op) in (ast.Add, ast.Mult, ast.BitOr):
                kind = {ast.Add: "+", ast.Mult: "*", ast.BitOr: "|"}[type(source.op)]
            elif isinstance(source, ast.Call) and dotted(source.func).split(".")[-1] in LOOP_COMBINES and acc in names_in(source):
                kind = dotted(source.func).split(".")[-1]
        if kind is None:
            # tuple combines: `acc_next, ... = welford_reduce(...)` then `acc = tl.where(mask, acc_next, acc)`
            for stmt in loop.body:
                if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Tuple) and isinstance(update, ast.Name) \
                        and update.id in defines(stmt) and isinstance(stmt.value, ast.Call):
                    name = dotted(stmt.value.func).split(".")[-1]
                    if name in LOOP_COMBINES and acc in names_in(stmt.value):
                        kind = name
        if kind is None:
            raise NoTwin(f"accumulator {acc} is updated in a way the twin cannot split across threads")
        finals = LOOP_COMBINES[kind]
        for stmt in after:
            if acc in names_used(stmt):
                call = _reduction_call(stmt.value) if isinstance(stmt, ast.Assign) else None
                if call is None or call[0] not in finals:
                    raise NoTwin(f"accumulator {acc} is used after its loop other than by its reduction ({', '.join(finals)})")


def _row_threads(work: int) -> int:
    """hv::row_threads of the launch helpers: a power of two from 32 to 512, about one thread per unit of work."""
    threads = 32
    while threads < work and threads < 512:
        threads *= 2
    return threads


def _casts_into_reductions(body: list[ast.stmt]) -> list[ast.stmt]:
    """`as_i8 = acc.to(tl.int8)` after a loop, read only by `any(as_i8, 1)`: the cast moved into the reduction's
    argument (`any(acc.to(tl.int8), 1)`), where the twin applies it to each of a thread's accumulator copies, as
    Triton applies it to each slot of its accumulator before reducing the slots."""
    loop_carried = {n for s in body if isinstance(s, ast.For) for inner in s.body for n in defines(inner)}
    body = list(body)
    for position, stmt in enumerate(body):
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            continue
        value, name = stmt.value, stmt.targets[0].id
        inner = value
        while isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "to":
            inner = inner.func.value
        if inner is value or not (isinstance(inner, ast.Name) and inner.id in loop_carried):
            continue
        readers = [i for i, s in enumerate(body) if i != position and name in names_used(s)]
        if len(readers) != 1 or isinstance(body[readers[0]], ast.For):
            continue
        reader = copy.deepcopy(body[readers[0]])  # (the module's own statements stay as they are)
        reduction = _reduction_call(reader.value) if isinstance(reader, ast.Assign) else None
        if reduction is None or not any(isinstance(a, ast.Name) and a.id == name for a in reduction[1]):
            continue
        call = reduction[2]
        call.args = [copy.deepcopy(value) if isinstance(a, ast.Name) and a.id == name else a for a in call.args]
        body[readers[0]] = reader
        body[position] = ast.Pass()
    return [s for s in body if not isinstance(s, ast.Pass)]


def _tile_carries(loop: ast.For, body: list[ast.stmt], axes: Axes) -> set[str]:
    """Names a looped scan's body assigns that are the same for every column of a tile: made of select_one (the
    tile's last value), the loop's offset and values from before the loop, never of a column's own value."""
    columns = {axes.reduction_base}
    bases = _base_names(body, axes)
    for stmt in loop.body:  # column-level: what reads the column index or a column-level value (select_one aside)
        if isinstance(stmt, ast.Assign) and is_last_of_tile(stmt, bases) is None and names_used(stmt) & columns:
            columns |= defines(stmt)
        if isinstance(stmt, ast.Assign) and scan_call(stmt) is not None:
            columns |= defines(stmt)
    return {n for s in loop.body if isinstance(s, ast.Assign) for n in defines(s)} - columns


def _emit_chunk_totals(out, loop: ast.For, exprs, lane_statements, scans: CombineLambdas, axes: Axes, lanes: Lanes,
                       cname: str, begin: str, end: str, slots: list[int]) -> tuple[str, str]:
    """A split row's carrying scan (a split scan read as a row scan): before its block's pass over its chunk, with
    more than one split, a first pass scans the chunk for its total; the blocks publish their totals and, after the
    grid barrier, each takes the combined totals of the chunks before its own as its carry. Returns (the carry, the
    flag that it holds a value)."""
    position = next((i for i, s in enumerate(loop.body) if (c := scan_call(s)) is not None and c.carries), None)
    if position is None or sum(1 for s in loop.body if (c := scan_call(s)) is not None and c.carries) != 1:
        raise NoTwin("a row split over blocks with other than one carrying scan")
    scan = scan_call(loop.body[position])
    carry, have = out.fresh(f"hv_carry_{scan.name}"), out.fresh("hv_have")
    out.taken |= {carry, have}
    start, indent = len(out.lines), out.indent
    out.open("if (hv_splits > 1) {  // this block's chunk total first: the blocks after it need it")
    out.open(f"for (int32_t {cname} = {begin}; {cname} < {end}; {cname} += {lanes.count}) {{")
    out.bind(loop.target.id, Var(cname, "i32", len(out.scopes)))
    out.emit(f"const bool hv_in = {cname} + {lanes.lane} < {end};")
    for stmt in loop.body[:position]:
        if not isinstance(stmt, ast.Expr):  # (stores wait for the second pass)
            lane_statements.statement(stmt)
    value, dtype, combine = scans.operands(out, exprs, axes, scan)
    out.emit(f"(void)hv::block_scan({value}, {combine}, {carry}, {cname} > {begin});")
    out.close()
    slots.append(len(slots))
    out.emit(f"hv::split_carry({carry}, {have}, {begin} < {end}, {combine}, hv_workspace, {slots[-1]}, hv_split, hv_splits);")
    out.close()
    out.lines.insert(start, "    " * indent + f"bool {have} = false;  // {carry} holds the row's values before this tile")
    out.lines.insert(start, "    " * indent + f"{out.ctype(dtype)} {carry}{{}};  // {scan.name}: the row's values before")
    return carry, have


def _base_names(body: list[ast.stmt], axes: Axes) -> set[str]:
    """The column index's names: the reduction base and its plain copies (`rbase = r0_base`)."""
    names = {axes.reduction_base}
    for stmt in ast.walk(ast.Module(list(body), [])):
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name) and stmt.value.id in names:
            names |= defines(stmt)
    return names


def _check_scan_loads(loop: ast.For) -> None:
    """A looped scan's threads all take part in every tile, the last one's past the row included: each load of the
    loop must be masked (Inductor's column mask) so that those read nothing."""
    for node in ast.walk(loop):
        if isinstance(node, ast.Call) and dotted(node.func) == "tl.load" and mask_of(node) is None:
            raise NoTwin(f"a looped scan with a load without a mask: `{ast.unparse(node)[:80]}`")


def translate_reduction(facts: ModuleFacts, axes: Axes, looped: bool) -> TwinSource:
    prologue, body, known = split_prologue(facts, axes)
    out, signature, launcher_args = start_emitter(facts)
    exprs = Expressions(out, axes)
    for stmt in prologue:
        Statements(out, exprs).statement(stmt)
    row_name = axes.program[0]
    offset_name = next(n for n, k in axes.offsets.items() if k == 0)
    row_dtype = index_dtype(facts, offset_name)
    body = [s for s in body if not (defines(s) & {offset_name, row_name})]
    if any(offset_name in names_used(s) for s in body):
        raise NoTwin(f"the block offset {offset_name} is used beyond the row index")
    loops = [s for s in body if isinstance(s, ast.For)]
    if looped:
        body = _casts_into_reductions(body)
        rnumel_node = _loop_range(loops[0], axes)[1]
    else:
        rnumel_node = _persistent_numel(body, axes, facts)
    scans = CombineLambdas(facts.combine_helpers) if any(scan_call(n) for s in body for n in ast.walk(s) if isinstance(n, ast.stmt)) else None
    # a scan takes its row along the lanes, in the row's order, even where the row is the outer dimension
    columns = scans is None and _reduces_columns(body, axes, row_name, facts)
    rows = exprs(facts.grid[0])
    rnumel = exprs(rnumel_node)
    warps = not columns and not looped and rnumel.code.isdigit() and 0 < int(rnumel.code) <= WARP_ROW_LIMIT
    grouped_rows = _column_groups(body, axes, row_name, facts) if columns and looped and COLUMN_ROWS_PER_LANE > 1 else None
    # (the variant splits no scan of Inductor's: its carry between tiles is its own)
    split = (facts.split_rows or (SPLIT_LOOPED_ROWS and scans is None)) and looped and not columns
    lanes = Lanes.columns() if columns else Lanes.warps() if warps else Lanes.split_rows() if split else Lanes.rows()
    row_length = evaluate_node(rnumel_node, known)  # (an int when the row's length is a constant of the kernel)
    fixed_block = CONSTANT_ROW_BLOCK and looped and not (columns or warps or split) and isinstance(row_length, int)
    if fixed_block:  # the block's size a constant of the kernel (hv_block, set below): loops of a known trip count
        lanes.count = "hv_block"
    row_statements = Statements(out, exprs, row_level_stores=True, store_guard=lanes.row_store_guard, barrier=lanes.barrier)
    lane_statements = Statements(out, exprs, store_guard=lanes.lane_store_guard + (("hv_in",) if scans else ()))
    reductions = RowReductions(out)
    out.emit(f"const int64_t hv_rows = {rows.code};")
    if warps:
        out.emit(f"// one warp per row ({ROWS_PER_BLOCK} rows a block); its 32 lanes stride over the row's "
                 f"{ast.unparse(rnumel_node)} elements, the values later passes need kept in registers")
        out.emit("const int32_t hv_lane = static_cast<int32_t>(threadIdx.x % 32);")
        out.emit("const int64_t hv_warps = blockDim.x / 32;")
        out.open("for (int64_t hv_row = static_cast<int64_t>(blockIdx.x) * hv_warps + threadIdx.x / 32; hv_row < hv_rows; "
                 "hv_row += static_cast<int64_t>(gridDim.x) * hv_warps) {")
        out.declare(row_name, row_dtype, f"static_cast<{CTYPES[row_dtype][0]}>(hv_row)")
    elif grouped_rows is not None:
        out.emit(f"// the reduced dimension is the outer one: a block takes {32 * COLUMN_ROWS_PER_LANE} neighbouring rows, "
                 f"{COLUMN_ROWS_PER_LANE} a thread (16-byte loads),")
        out.emit(f"// and its threadIdx.y threads stride over their {ast.unparse(rnumel_node)} elements")
        out.open(f"for (int64_t hv_tile = static_cast<int64_t>(blockIdx.x) * {32 * COLUMN_ROWS_PER_LANE}; hv_tile < hv_rows; "
                 f"hv_tile += static_cast<int64_t>(gridDim.x) * {32 * COLUMN_ROWS_PER_LANE}) {{")
        out.emit(f"const int64_t hv_first = hv_tile + {COLUMN_ROWS_PER_LANE} * static_cast<int64_t>(threadIdx.x);  // this thread's first row")
    elif columns:
        out.emit("// the reduced dimension is the outer one: a block takes 32 neighbouring rows (threadIdx.x, so loads coalesce)")
        out.emit(f"// and its threadIdx.y threads stride over their {ast.unparse(rnumel_node)} elements")
        out.open("for (int64_t hv_tile = static_cast<int64_t>(blockIdx.x) * 32; hv_tile < hv_rows; hv_tile += static_cast<int64_t>(gridDim.x) * 32) {")
        out.emit("const bool hv_row_ok = hv_tile + threadIdx.x < hv_rows;  // the last tile's extra threads compute the last row, store nothing")
        out.declare(row_name, row_dtype, f"static_cast<{CTYPES[row_dtype][0]}>(hv_row_ok ? hv_tile + threadIdx.x : hv_rows - 1)")
    elif split:
        out.emit("// each row split over hv_splits blocks (more than one: a cooperative launch with every block resident, "
                 "one row a block);")
        out.emit(f"// a block's threads stride over its chunk of the row's {ast.unparse(rnumel_node)} elements")
        out.emit("const int32_t hv_split = static_cast<int32_t>(blockIdx.x % hv_splits);  // this block's chunk of its row")
        out.open("for (int64_t hv_row = blockIdx.x / hv_splits; hv_row < hv_rows; hv_row += gridDim.x / hv_splits) {")
        out.declare(row_name, row_dtype, f"static_cast<{CTYPES[row_dtype][0]}>(hv_row)")
    else:
        out.emit(f"// one thread block per row; its threads stride over the row's {ast.unparse(rnumel_node)} elements")
        out.open("for (int64_t hv_row = blockIdx.x; hv_row < hv_rows; hv_row += gridDim.x) {")
        out.declare(row_name, row_dtype, f"static_cast<{CTYPES[row_dtype][0]}>(hv_row)")
    step = LOOP_COPIES
    slots: list[int] = []  # split: the workspace slots its reductions publish to
    if grouped_rows is not None:
        _emit_column_groups(out, body, axes, exprs, reductions, lanes, row_name, row_dtype, grouped_rows)
    elif looped:
        step = _emit_looped(out, body, axes, exprs, row_statements, lane_statements, reductions, lanes, row_name, facts, slots, scans)
    else:
        kept = None
        if warps:  # a scan takes the row in its order: 32 neighbouring values a step, not a lane's group of them
            groups = _lane_groups(body, axes, facts, row_name, int(rnumel.code)) if scans is None else ([], 1)
            kept = Kept(int(rnumel.code), _stored_pointers(facts), *groups)
        _emit_persistent(out, body, axes, exprs, row_statements, lane_statements, reductions, rnumel, lanes, kept, scans)
    out.close()
    if scans is not None:
        out.lines[0:0] = scans.lines  # the combine lambdas, first in the kernel
    launch_lines = [
        f"const int64_t hv_rows = {host_expr(facts.grid[0], known, facts.params)};",
        f"const int64_t hv_rnumel = {host_expr(rnumel_node, known, facts.params)};",
        "if (hv_rows <= 0) return;",
    ]
    if warps:
        blocks, threads = "hv::warp_row_blocks(hv_rows)", "32 * hv::WARP_ROWS_PER_BLOCK"
        notes = [f"one warp per row, {ROWS_PER_BLOCK} rows a block of {32 * ROWS_PER_BLOCK} threads (grid-stride over rows); "
                 "its lanes stride over the row", "per-lane partials combined by warp shuffles (no shared memory, no block barrier)"]
    elif grouped_rows is not None:
        blocks, threads = f"hv::column_blocks((hv_rows + {COLUMN_ROWS_PER_LANE - 1}) / {COLUMN_ROWS_PER_LANE})", "hv::column_threads(hv_rows, hv_rnumel)"
        notes = [f"a reduction over the outer dimension: {32 * COLUMN_ROWS_PER_LANE} rows per block, {COLUMN_ROWS_PER_LANE} "
                 "neighbouring rows a thread along threadIdx.x (16-byte loads where aligned), threadIdx.y threads stride "
                 "over the reduced dimension", "each row's partials combined through shared memory"]
    elif split:
        launch_lines += [
            f"const int hv_threads = hv::row_threads((hv_rnumel + {step - 1}) / {step});",
            f"const int32_t hv_splits = hv::row_splits(reinterpret_cast<const void*>(&{facts.name}), hv_rows, hv_rnumel, hv_threads, {step});",
            f"// {len(slots)} reduction{'s' if len(slots) != 1 else ''}: a 16-byte partial each per block, combined after the grid barrier",
            f"torch::Tensor hv_workspace = hv::split_workspace(hv_splits, hv_rows * hv_splits * {16 * len(slots)});",
        ]
        blocks, threads = "hv::split_blocks(hv_rows, hv_splits)", "hv_threads"
        notes = ["each row split over as many blocks as the GPU holds at once beside the other rows' (a cooperative launch "
                 "when more than one), threads stride over the block's chunk of the row",
                 "per-thread partials combined by warp shuffles and shared memory, then the blocks' partials through a "
                 "workspace after a grid barrier (one per group of reductions)"]
        extra = (["unsigned char* hv_workspace", "int32_t hv_splits"],
                 ["hv_splits > 1 ? hv_workspace.data_ptr<unsigned char>() : nullptr", "hv_splits"])
        return finish(facts, out, signature, launcher_args, launch_lines, blocks, threads, "reduction", notes,
                      extra=extra, cooperative="hv_splits > 1")
    elif columns:
        blocks, threads = "hv::column_blocks(hv_rows)", "hv::column_threads(hv_rows, hv_rnumel)"  # 32 rows x up to 16 lanes
        notes = ["a reduction over the outer dimension: 32 rows per block along threadIdx.x (coalesced loads), "
                 "threadIdx.y threads stride over the reduced dimension", "partials combined per row through shared memory"]
    elif fixed_block:
        block = _row_threads(-(-row_length // step))
        out.lines.insert(0, f"    constexpr int32_t hv_block = {block};  // the block's threads (the launcher's): a row of {row_length}, {step} a thread a step")
        blocks, threads = "hv::row_blocks(hv_rows)", str(block)
        notes = ["one thread block per row (grid-stride over rows), threads stride over the row, the block's size a constant "
                 "of the kernel", "per-thread partials combined by warp shuffles and shared memory"]
    else:
        # 32 to 512 threads a row: a looped reduction's threads each take `step` columns a step
        blocks, threads = "hv::row_blocks(hv_rows)", f"hv::row_threads((hv_rnumel + {step - 1}) / {step})" if looped else "hv::row_threads(hv_rnumel)"
        notes = ["one thread block per row (grid-stride over rows), threads stride over the row",
                 "per-thread partials combined by warp shuffles and shared memory"]
    if not looped and warps:
        notes.append("each reduction is its own pass over the row; the values a pass loads (or draws at random) are kept "
                     "in registers for the passes after it, when they fit")
    elif not looped:
        notes.append("each reduction is its own pass over the row (the row's values are recomputed, not kept in registers)")
    return finish(facts, out, signature, launcher_args, launch_lines, blocks, threads, "reduction", notes)


WARP_ROW_LIMIT = 1024  # a persistent reduction's rows up to this long: one warp per row (32 values a lane at most)
ROWS_PER_BLOCK = 4  # warps (rows) per block then: the launcher's hv::WARP_ROWS_PER_BLOCK
KEPT_REGISTERS = 64  # registers a lane may spend keeping row values between passes
PREFETCH_REGISTERS = 48  # ... of them, with loads a later pass needs loaded early (fewer: more warps resident)
LOOP_COPIES = 4  # a looped reduction's accumulators, per thread: independent chains of loads and combine steps
MAX_CHUNKS = 4  # a looped reduction reading its rows contiguously with one load: vectors a thread loads a step
GROUPED_LANE_VALUES = 8  # a warp-per-row lane takes its values in 16-byte groups when a group holds this many or more
SPLIT_SHARED_BYTES = 32 * 1024  # a mix-order reduction's column sums, one row of them per warp, at most this much shared memory
# Not yet weighed on the H200, for scripts/twin_variants.py (0 or 1: as timed in session 20): a mix-order reduction's
# block per row with this many threads (Triton's own program has 128), and warps per row for rows without groups;
# a looped column reduction's thread taking this many neighbouring rows (one 16-byte load for them, as Triton does);
# every looped row reduction split over blocks as a cooperative reduction's twin is (1; the launcher splits only
# rows too few to fill the GPU: a one-row mean over 8 SMs' worth of blocks instead of one).
SPLIT_BLOCK_THREADS = 0
SPLIT_WARPS_UNGROUPED = 0
COLUMN_ROWS_PER_LANE = 1
SPLIT_LOOPED_ROWS = 0
# A looped row reduction over a row of a constant length: the block's size a constant of the kernel (1), as it is
# Triton's, so that its column loops have a known trip count the compiler may unroll (loads issued up front).
CONSTANT_ROW_BLOCK = 0


class Lanes:
    """How a block's threads share the rows: one row per block, threads along it (rows); one row per warp, its 32
    lanes along it (warps: short rows); or 32 rows per block along threadIdx.x with threadIdx.y threads along each
    (columns: the reduced dimension is the outer one)."""

    def __init__(self, lane: str, count: str, reduce: str, row_store_guard: tuple[str, ...], lane_store_guard: tuple[str, ...],
                 barrier: str = "__syncthreads();", split: bool = False):
        self.lane, self.count, self.reduce = lane, count, reduce
        self.row_store_guard, self.lane_store_guard = row_store_guard, lane_store_guard
        self.barrier = barrier
        self.split = split  # a row split over hv_splits blocks (split_rows): each folds its chunk of every loop

    @classmethod
    def split_rows(cls) -> Lanes:
        """Rows, each split over hv_splits blocks: the row's first block stores its row values."""
        return cls("static_cast<int32_t>(threadIdx.x)", "blockDim.x", "hv::block_reduce", ("threadIdx.x == 0", "hv_split == 0"), (),
                   split=True)

    @classmethod
    def rows(cls) -> Lanes:
        return cls("static_cast<int32_t>(threadIdx.x)", "blockDim.x", "hv::block_reduce", ("threadIdx.x == 0",), ())

    @classmethod
    def warps(cls) -> Lanes:
        return cls("hv_lane", "32", "hv::warp_reduce", ("hv_lane == 0",), (), barrier="__syncwarp();")

    @classmethod
    def columns(cls) -> Lanes:
        return cls("static_cast<int32_t>(threadIdx.y)", "blockDim.y", "hv::column_reduce", ("threadIdx.y == 0", "hv_row_ok"), ("hv_row_ok",))


class Kept:
    """A warp-per-row persistent reduction's row values kept in registers between its passes: each lane's share of
    a loaded (or randomly drawn) value, `per_lane` of them, in an array the fully unrolled passes index by hv_k.
    A load from memory the kernel also stores to is not kept (a later pass must read what was stored)."""

    def __init__(self, rnumel: int, stored: set[str], grouped: list[tuple[str, ast.Call, str]] | None = None, width: int = 1):
        self.per_lane = -(-rnumel // 32)
        self.stored = stored
        self.arrays: dict[str, tuple[str, str]] = {}  # Triton name -> (C++ array, dtype)
        # a lane's values in groups of `width` neighbours (lane l: width * l + 0..width-1 of each 32 * width), so that
        # the `grouped` accesses (contiguous in each group) go through 16-byte vectors where aligned; 1: lanes stride
        self.width = width
        self.grouped = {id(call): (kind, call, pointer) for kind, call, pointer in grouped or []}

    def worth_keeping(self, stmt: ast.stmt) -> str | None:
        """The name `stmt` defines, when its value is worth keeping and a lane has the registers for it."""
        if len(self.arrays) + 1 > KEPT_REGISTERS // self.per_lane:
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


def _lane_groups(body: list[ast.stmt], axes: Axes, facts: ModuleFacts, row_name: str, rnumel: int) -> tuple[list, int]:
    """A warp-per-row reduction's loads and stores that are contiguous along the row in groups of the elements one
    16-byte access holds, and that many: ([], 1) unless every lane's values and the row split into whole groups (a
    group's first element in the row: all of it is). The width is set by the widest type of the accesses that move
    with the row (bf16 over a bool mask, over an int64 vector the rows share); narrower types than that stay scalar.
    Only for rows of 2-byte values (8 a lane, GROUPED_LANE_VALUES): on the H200 (session 20) bf16 rows gained
    (cast_pow_mean 1.86x Triton's time -> 1.17x, the mix-order add_cast_mul_sum 1.54x -> 1.15x), while fp32 rows at 4
    a lane lost against a lane's strided scalar loads (gpt2 layer_norm_bwd 1.15x -> 1.89x, a one-row mean 4.7 us ->
    7.1 us, transformer_encoder's mix-order layer-norm backwards 1.74x -> 2.22x and 2.66x); docs/twins-h200.md."""
    body = [s for s in body if defines(s) != {axes.reduction_base}]
    masks = axis_masks(body, aliases(body, axes.reduction_base))
    grouped, _ = grouped_accesses(body, axes.reduction_base, masks, facts, [], 16, {row_name: 5})
    sizes = size_stand_ins(facts)

    def size(access: tuple[str, ast.Call, str]) -> int:
        return CTYPES[facts.arg_dtypes[access[2]]][1]

    def moves_with_row(access: tuple[str, ast.Call, str]) -> bool:
        at = [offset_at(body, access[1].args[0], {**sizes, row_name: row, axes.reduction_base: 3}) for row in (5, 6)]
        return None in at or at[0] != at[1]

    widest = max((size(g) for g in grouped if moves_with_row(g)), default=max(map(size, grouped), default=16))
    width = 16 // widest  # (groups that move in step within 16 // smallest elements do within this many too)
    grouped = [g for g in grouped if size(g) >= widest]
    if not grouped or width < GROUPED_LANE_VALUES or -(-rnumel // 32) % width or rnumel % width:
        return [], 1
    return grouped, width


def _stored_pointers(facts: ModuleFacts) -> set[str]:
    stores = [n for n in ast.walk(ast.Module(body=facts.body, type_ignores=[])) if isinstance(n, ast.Call)
              and dotted(n.func) in ("tl.store", "tl.atomic_add", "tl.atomic_max", "tl.atomic_min")]
    return {p for p in (pointer_of(s.args[0]) for s in stores if s.args) if p is not None}


def _reduces_columns(body: list[ast.stmt], axes: Axes, row_name: str, facts: ModuleFacts) -> bool:
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


def _loop_range(loop: ast.For, axes: Axes) -> tuple[ast.expr, ast.expr]:
    call = loop.iter
    if not (isinstance(call, ast.Call) and dotted(call.func) in ("range", "tl.range", "tl.static_range") and len(call.args) == 3):
        raise NoTwin(f"loop over {ast.unparse(call)!r}")
    start, stop, step = call.args
    if not (isinstance(start, ast.Constant) and start.value == 0 and isinstance(step, ast.Name) and step.id == axes.reduction_block):
        raise NoTwin(f"loop {ast.unparse(call)!r} is not `range(0, numel, R_BLOCK)`")
    if not isinstance(loop.target, ast.Name) or loop.orelse:
        raise NoTwin("loop target is not a name")
    return start, stop


def _persistent_numel(body: list[ast.stmt], axes: Axes, facts: ModuleFacts) -> ast.expr:
    names = aliases(body, axes.reduction_base)
    for stmt in body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Compare) and isinstance(stmt.value.left, ast.Name) \
                and stmt.value.left.id in names and isinstance(stmt.value.ops[0], ast.Lt):
            return stmt.value.comparators[0]
    block = axes.reduction_block
    if block in facts.constexprs:
        return ast.Constant(facts.constexprs[block])
    raise NoTwin("cannot tell how long a row is")


class VectorLoads:
    """A looped reduction's loads that read its row contiguously: each thread then takes `width` neighbouring columns
    a step (copy hv_v of the accumulators is column hv_v of them) and reads them with 16-byte vector loads, where
    all `width` columns are in the row and the address is aligned; elsewhere a column at a time, as before.

    Only when every load that moves with the loop does so with unit stride, and its mask is the loop's column bound
    and conditions that do not move with the loop (so the mask at the first column holds for all `width`)."""

    def __init__(self, loads: dict[str, ast.Call], width: int, columns: set[str] | None = None):
        self.loads = loads  # the name a load is assigned to -> the tl.load call
        self.width = width
        # the loop's column index and its copies, when they are the only names of the loop in every load's address:
        # a chunk's address is then the address with them moved to the chunk
        self.columns = columns

    def chunks(self, stop: str, passes: int, welford: bool) -> int:
        """How many vectors of `width` columns a thread takes a step, each a block of threads further on (Triton's
        layout: a warp's load is still 512 neighbouring bytes), all loaded before any is used so that that many of
        its loads are in flight: MAX_CHUNKS, no more than a warp needs for a row `stop` long (when it is a number).
        Only for one load in a kernel that makes one pass over the row, and not for a Welford loop: on the H200,
        chunks of two loads, or of a kernel with three passes, took 61 to 94 registers a thread and were slower
        than one vector a step (fewer blocks resident), and of two batch-norm Welford loops one lost 17 % and the
        other gained 5 % (docs/benchmarks.md, session 19)."""
        if not self.columns or len(self.loads) > 1 or passes > 1 or welford:
            return 1
        chunks = MAX_CHUNKS
        if stop.isdigit():
            while chunks > 1 and (chunks // 2) * self.width * 32 >= int(stop):
                chunks //= 2
        return chunks

    @classmethod
    def of(cls, loop: ast.For, body: list[ast.stmt], axes: Axes, row_name: str, facts: ModuleFacts) -> VectorLoads | None:
        variable = loop.target.id
        moving = {variable}
        for stmt in loop.body:
            if names_used(stmt) & moving:
                moving |= defines(stmt)
        stop = ast.unparse(_loop_range(loop, axes)[1])
        columns: set[str] = set()
        for stmt in loop.body:  # `r0_index = r0_offset + r0_base` (and its plain copies)
            if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.BinOp) \
                    and isinstance(stmt.value.op, ast.Add) and {ast.unparse(stmt.value.left), ast.unparse(stmt.value.right)} == {variable, axes.reduction_base}:
                columns |= aliases(loop.body, stmt.targets[0].id)
        bounds = {stmt.targets[0].id for stmt in loop.body if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)
                  and isinstance(stmt.value, ast.Compare) and len(stmt.value.ops) == 1 and isinstance(stmt.value.ops[0], ast.Lt)
                  and isinstance(stmt.value.left, ast.Name) and stmt.value.left.id in columns
                  and ast.unparse(stmt.value.comparators[0]) == stop}

        def mask_holds(mask: ast.expr | None) -> bool:
            if mask is None or (isinstance(mask, ast.Constant) and mask.value is None):
                return True
            if isinstance(mask, ast.Name):
                return mask.id in bounds or mask.id not in moving
            return isinstance(mask, ast.BinOp) and isinstance(mask.op, ast.BitAnd) and mask_holds(mask.left) and mask_holds(mask.right)

        sizes = size_stand_ins(facts)
        loads: dict[str, ast.Call] = {}
        for stmt in loop.body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Call) and (dotted(node.func).startswith("tl.atomic") or dotted(node.func) == "tl.store") \
                        and names_in(node) & moving:
                    return None  # (stores along the row would be strided by the new mapping)
            calls = [n for n in ast.walk(stmt) if isinstance(n, ast.Call) and dotted(n.func) == "tl.load"]
            moving_calls = [c for c in calls if names_in(c.args[0]) & moving] if calls else []
            if not moving_calls:
                continue
            if not (isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name) and stmt.value is moving_calls[0]
                    and len(calls) == 1):
                return None
            call = moving_calls[0]
            if not mask_holds(mask_of(call)) or pointer_of(call.args[0]) not in facts.pointer_params:
                return None
            loads[stmt.targets[0].id] = call
        if not loads:
            return None
        smallest = min(CTYPES[facts.arg_dtypes[pointer_of(c.args[0])]][1] for c in loads.values())
        width = max(LOOP_COPIES, 16 // smallest)
        flat = flatten_loops(body)
        for call in loads.values():
            if not (isinstance(call.args[0], ast.BinOp) and isinstance(call.args[0].op, ast.Add)):
                return None
            if not steps_within_groups(call.args[0].right, flat, {variable, axes.reduction_base}, width):
                return None
            at = [offset_at(body, call.args[0], {**sizes, row_name: row, axes.reduction_base: lane}) for row, lane in ((5, 3), (5, 4), (5, 7), (6, 3))]
            if None in at or at[1] - at[0] != 1 or at[2] - at[0] != 4:
                return None
        movable = all(names_in(call.args[0]) & moving <= columns for call in loads.values())
        return cls(loads, width, columns if movable else None)


def _emit_looped(out, body, axes, exprs, row_statements, lane_statements, reductions, lanes: Lanes, row_name: str,
                 facts: ModuleFacts, slots: list[int] | None = None, scans: CombineLambdas | None = None) -> int:
    """Each thread keeps LOOP_COPIES copies of the loop's accumulators (an array each), copy v fed the columns v
    blocks of threads further on, so that a thread has that many loads and combine steps in flight, not one chain;
    at the reduction the thread's copies are combined with the reduction's own combine, then the block's threads.
    Where the loop reads its rows contiguously (VectorLoads), copy v is the thread's v-th neighbouring column instead,
    read by one vector load; and where the one pass over the row has one load, whose address moves with the
    column alone (and no Welford update), a thread takes up to MAX_CHUNKS such vectors a block of threads apart and
    loads them all before it uses any.
    Split (lanes.split): each loop covers the block's chunk of the row, whole steps of the block's threads; the
    reductions whose partials are ready together (those of a loop's accumulators) publish them to the workspace
    slots (appended to `slots`) before one grid barrier, and each then combines its row's partials.
    Scans (Inductor's looped scan: each tile scanned alone, the carry between tiles the kernel's own): the block's
    threads are the tile, one column a thread a step, every thread in every step (hv_in: its column is in the row);
    select_one of the tile's last column is the last thread's value.
    Returns the columns a thread takes a step in the first loop (the launcher sizes the block by it)."""
    slots = [] if slots is None else slots
    published: dict[int, str] = {}  # split: a reduction statement's id -> its block's partial, published
    defined: set[str] = set()
    copies: dict[str, tuple[str, str, int]] = {}  # an accumulator -> (its array of copies, dtype, how many)
    step = None  # columns a thread takes a step in the first loop: the launcher's threads are the row over this
    for position, stmt in enumerate(body):
        if isinstance(stmt, ast.For):
            _check_loop(stmt, body[position + 1 :], defined, _tile_carries(stmt, body, axes) if scans is not None else set())
            if scans is not None:
                _check_scan_loads(stmt)
            vector = VectorLoads.of(stmt, body, axes, row_name, facts) if lanes.reduce == "hv::block_reduce" and scans is None else None
            width = vector.width if vector else LOOP_COPIES if scans is None else 1
            _, stop = _loop_range(stmt, axes)
            stop_code = exprs(stop)
            welford = any(isinstance(n, ast.Call) and dotted(n.func).endswith("welford_reduce") for n in ast.walk(stmt))
            chunks = vector.chunks(stop_code.code, sum(isinstance(s, ast.For) for s in body), welford) if vector else 1
            if step is None:
                step = chunks * width
            carried = sorted({n for s in stmt.body for n in defines(s)} & defined)
            copies.update(_declare_copies(out, carried, width))
            variable = stmt.target.id
            cname = out.fresh(variable)
            if lanes.split:  # the block's chunk of the row: whole steps, so that vectors stay aligned
                begin, end = out.fresh("hv_begin"), out.fresh("hv_end")
                out.taken |= {begin, end}
                each = f"{chunks * width} * {lanes.count}"
                out.emit(f"const int32_t {begin} = hv_split * (({stop_code.code} + hv_splits * {each} - 1) / (hv_splits * {each})) * ({each});")
                out.emit(f"const int32_t {end} = min({begin} + (({stop_code.code} + hv_splits * {each} - 1) / (hv_splits * {each})) * ({each}), "
                         f"static_cast<int32_t>({stop_code.code}));")
                stop_code = Value(end, "i32")
            else:
                begin = "0"
            loop_start, loop_indent = len(out.lines), out.indent  # (a carrying scan's carry goes here)
            chunk_carry = None  # split: a carrying scan's carry and flag, from the chunks before this block's
            if lanes.split and scans is not None:
                chunk_carry = _emit_chunk_totals(out, stmt, exprs, lane_statements, scans, axes, lanes, cname, begin,
                                                 stop_code.code, slots)
            out.open(f"for (int32_t {cname} = {begin}; {cname} < {stop_code.code}; {cname} += {chunks * width} * {lanes.count}) {{")
            fast: dict[str, tuple[str, str]] = {}  # a vector-loaded name -> (its fast-path flag, its array)
            full = ""
            if vector and chunks == 1:
                out.emit(f"// this thread's {width} neighbouring columns: vector loads when all are in the row and aligned")
                full = out.fresh("hv_full")
                out.taken.add(full)
                out.emit(f"const bool {full} = {cname} + {width} * {lanes.lane} + {width} <= {stop_code.code};")
            elif vector:
                out.emit(f"// this thread's {width} neighbouring columns in each of {chunks} chunks {width} x {lanes.count} columns apart, "
                         "all loaded first (vector loads where a chunk is in the row and aligned)")
            for name, call in (vector.loads.items() if vector else ()):
                dtype = facts.arg_dtypes[pointer_of(call.args[0])]
                flag, array = out.fresh(f"hv_fast_{name}"), out.fresh(f"{name}_vec")
                out.taken |= {flag, array}
                if chunks == 1:
                    out.emit(f"bool {flag} = false;")
                    out.emit(f"{CTYPES[dtype][0]} {array}[{width}];")
                else:
                    out.emit(f"bool {flag}[{chunks}] = {{}};")
                    out.emit(f"{CTYPES[dtype][0]} {array}[{chunks}][{width}];")
                fast[name] = (flag, array)
            out.emit("#pragma unroll")
            out.open(f"for (int32_t hv_v = 0; hv_v < {chunks * width}; ++hv_v) {{  // copy hv_v % {width} of the accumulators"
                     if chunks > 1 else f"for (int32_t hv_v = 0; hv_v < {width}; ++hv_v) {{  // copy hv_v of the accumulators")
            start = out.fresh(f"{variable}_v")
            if vector and chunks > 1:  # chunk hv_v / width starts at cname + chunk * width * threads + width * lane
                out.emit(f"const int32_t {start} = {cname} + (hv_v / {width}) * {width} * {lanes.count} + hv_v % {width} + {width - 1} * {lanes.lane};")
            elif vector:  # the thread's first column is cname + width * lane: the row index is start + lane
                out.emit(f"const int32_t {start} = {cname} + hv_v + {width - 1} * {lanes.lane};")
            else:
                out.emit(f"const int32_t {start} = {cname} + hv_v * {lanes.count};")
            out.bind(variable, Var(start, "i32", len(out.scopes)))
            for acc in carried:
                array, dtype, _ = copies[acc]
                out.bind(acc, Var(f"{array}[hv_v % {width}]" if chunks > 1 else f"{array}[hv_v]", dtype, len(out.scopes)))
            if scans is None:
                out.open(f"if ({start} + {lanes.lane} < {stop_code.code}) {{")
            else:
                out.emit(f"const bool hv_in = {start} + {lanes.lane} < {stop_code.code};  // a column of the row: every thread scans the tile")
                out.open("{")
            for inner in stmt.body:
                if isinstance(inner, ast.For):
                    raise NoTwin("a loop inside a reduction loop")
                name = inner.targets[0].id if isinstance(inner, ast.Assign) and isinstance(inner.targets[0], ast.Name) else None
                scan = scan_call(inner) if scans is not None else None
                last = is_last_of_tile(inner, _base_names(body, axes)) if scans is not None else None
                if scan is not None:
                    value, dtype, combine = scans.operands(out, exprs, axes, scan)
                    if scan.carries and chunk_carry is not None:  # ... and with the chunks of the row before this block's
                        carry, have = chunk_carry
                        out.declare(scan.name, dtype, f"hv::block_scan({value}, {combine}, {carry}, {have} || {cname} > {begin})")
                        continue
                    if scan.carries:  # the row's scan: each tile combined with the tiles before it
                        carry = out.fresh(f"hv_carry_{scan.name}")
                        out.taken.add(carry)
                        out.lines.insert(loop_start, "    " * loop_indent + f"{out.ctype(dtype)} {carry}{{}};  // {scan.name}: the tiles before")
                        out.declare(scan.name, dtype, f"hv::block_scan({value}, {combine}, {carry}, {cname} > {begin})")
                        continue
                    unused = out.fresh("hv_no_carry")
                    out.taken.add(unused)
                    out.emit(f"{out.ctype(dtype)} {unused}{{}};  // the kernel carries the tiles before itself")
                    out.declare(scan.name, dtype, f"hv::block_scan({value}, {combine}, {unused}, false)")
                elif last is not None:
                    value = exprs(last)
                    dtype = _concrete(value.dtype)
                    out.declare(name, dtype, f"hv::block_last({out.cast(value, dtype)})")
                elif name in fast and chunks > 1:
                    _emit_chunk_loads(out, exprs, lane_statements, name, vector.loads[name], fast[name],
                                      ChunkStep(cname, width, chunks, lanes, stop_code.code, vector.columns))
                elif name in fast:
                    _emit_vector_load(out, exprs, lane_statements, name, vector.loads[name], fast[name], full)
                else:
                    lane_statements.statement(inner)
            out.close()
            out.close()
            out.close()
            continue
        if defines(stmt) == {axes.reduction_base}:
            out.declare(axes.reduction_base, "i32", lanes.lane)
            defined.add(axes.reduction_base)
            continue
        reduction = _reduction_call(stmt.value) if isinstance(stmt, ast.Assign) else None
        if reduction is not None:
            kind, _, call = reduction
            fast_softmax = _softmax_fast(call) if kind == "online_softmax_reduce" else "false"
            combiner = reductions.combiner(kind, fast_softmax)
            result = out.fresh("hv_" + kind.replace("_", ""))
            if lanes.split:
                if id(stmt) not in published:  # this reduction and the others whose partials are ready with it
                    following = body[position + 1 :]
                    following = following[: next((i for i, s in enumerate(following) if isinstance(s, ast.For)), len(following))]
                    group = [stmt] + [s for s in following if _ready_reduction(s, copies, defined)]
                    for member in group:
                        ctype, partial, fields = _thread_partial(out, exprs, reductions, copies, member)
                        name = out.fresh("hv_block")
                        out.taken.add(name)
                        slots.append(len(slots))
                        member_kind = _reduction_call(member.value)[0]
                        member_combiner = reductions.combiner(member_kind, _softmax_fast(_reduction_call(member.value)[2])
                                                              if member_kind == "online_softmax_reduce" else "false")
                        out.emit(f"const {ctype} {name} = hv::split_publish({partial}, {member_combiner}, hv_workspace, {slots[-1]}, hv_splits);")
                        published[id(member)] = f"{name}, {member_combiner}, hv_workspace, {slots[-1]}"
                    out.emit(f"hv::grid_sync(hv_splits);  // the blocks of each row have published {'these partials' if len(group) > 1 else 'this partial'}")
                ctype, _, fields = _thread_partial(out, exprs, reductions, copies, stmt, emit=False)
                out.emit(f"const {ctype} {result} = hv::split_gather({published[id(stmt)]}, hv_split, hv_splits);")
            else:
                ctype, partial, fields = _thread_partial(out, exprs, reductions, copies, stmt)
                out.emit(f"const {ctype} {result} = {lanes.reduce}({partial}, {combiner});")
            out.bind(f" {result}", Var(result, "", len(out.scopes)))
            _bind_result(out, row_statements, stmt, result, fields)
        else:
            row_statements.statement(stmt)
        defined |= defines(stmt)
    return step or LOOP_COPIES


@dataclass(frozen=True)
class ColumnGroups:
    """A looped column reduction taken COLUMN_ROWS_PER_LANE neighbouring rows a thread: its one loop, the statements
    before it that compute from the row (each row's, again where it is needed), and its loads contiguous along the
    rows ("load", call, pointer), read through one 16-byte vector per column step where aligned."""

    loop: ast.For
    row_level: list[ast.stmt]
    grouped: list[tuple[str, ast.Call, str]]


def _column_groups(body: list[ast.stmt], axes: Axes, row_name: str, facts: ModuleFacts) -> ColumnGroups | None:
    """The ColumnGroups of a looped column reduction, or None where the mapping does not apply: more than one loop,
    a load before the loop that moves with the row (it would be loaded again each column step), or no load that is
    contiguous along the rows in groups of COLUMN_ROWS_PER_LANE with a mask the same for all of them."""
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
    grouped = [g for g in grouped if g[0] == "load" and 16 // CTYPES[facts.arg_dtypes[g[2]]][1] == COLUMN_ROWS_PER_LANE]
    if not grouped or width < COLUMN_ROWS_PER_LANE:
        return None
    return ColumnGroups(loop, row_level, grouped)


def _emit_column_groups(out, body, axes, exprs, reductions, lanes: Lanes, row_name: str, row_dtype: str,
                        groups: ColumnGroups) -> None:
    """Inside the tile loop (hv_first: the thread's first row): the accumulators, one copy per row of the thread; the
    column loop, each step's rows in turn (hv_e), their grouped loads one vector at hv_e 0 when all the thread's
    rows are there, the mask holds and the address is aligned; then each row's reductions and row statements."""
    rows_per_lane = COLUMN_ROWS_PER_LANE
    ctype = CTYPES[row_dtype][0]
    row_statements = Statements(out, exprs, row_level_stores=True, store_guard=lanes.row_store_guard, barrier=lanes.barrier)
    lane_statements = Statements(out, exprs, store_guard=lanes.lane_store_guard)
    position = body.index(groups.loop)
    defined: set[str] = set()
    for stmt in body[:position]:
        if stmt not in groups.row_level and defines(stmt) != {axes.reduction_base}:
            row_statements.statement(stmt)
        defined |= defines(stmt)
    _check_loop(groups.loop, body[position + 1 :], defined)
    out.declare(axes.reduction_base, "i32", lanes.lane)
    copies = _declare_copies(out, sorted({n for s in groups.loop.body for n in defines(s)} & defined), rows_per_lane, "  // one a row")

    def open_row() -> None:
        out.emit("#pragma unroll")
        out.open(f"for (int32_t hv_e = 0; hv_e < {rows_per_lane}; ++hv_e) {{  // the thread's row hv_e")
        out.emit("const bool hv_row_ok = hv_first + hv_e < hv_rows;  // past the last row: compute the last, store nothing")
        out.declare(row_name, row_dtype, f"static_cast<{ctype}>(hv_row_ok ? hv_first + hv_e : hv_rows - 1)")
        for stmt in groups.row_level:
            row_statements.statement(stmt)

    _, stop = _loop_range(groups.loop, axes)
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
        reduction = _reduction_call(stmt.value) if isinstance(stmt, ast.Assign) else None
        if reduction is None:
            row_statements.statement(stmt)
            continue
        kind, arguments, call = reduction
        fast = _softmax_fast(call) if kind == "online_softmax_reduce" else "false"
        accumulators = sorted(set().union(*(names_in(a) for a in arguments)) & set(copies))
        state, value, fields = _copy_state(out, exprs, reductions, copies, accumulators, (kind, arguments, fast), "hv_e")
        result = out.fresh("hv_" + kind.replace("_", ""))
        out.emit(f"const {state} {result} = {lanes.reduce}({value}, {reductions.combiner(kind, fast)});")
        out.bind(f" {result}", Var(result, "", len(out.scopes)))
        _bind_result(out, row_statements, stmt, result, fields)
    out.close()


def _thread_partial(out, exprs, reductions, copies, stmt: ast.Assign, emit: bool = True) -> tuple[str, str, list]:
    """(C++ type, the thread's partial, result fields) of a reduction statement after a loop: its accumulator copies
    combined in order (by a loop when there are more than LOOP_COPIES of them, emitted here). emit=False: the type
    and fields alone."""
    kind, arguments, call = _reduction_call(stmt.value)
    fast_softmax = _softmax_fast(call) if kind == "online_softmax_reduce" else "false"
    combiner = reductions.combiner(kind, fast_softmax)
    accumulators = sorted(set().union(*(names_in(a) for a in arguments)) & set(copies))
    count = max((copies[acc][2] for acc in accumulators), default=1)
    state_of = (kind, arguments, fast_softmax)
    if not emit:
        lines = len(out.lines)
        ctype, _, fields = _copy_state(out, exprs, reductions, copies, accumulators, state_of, "0")
        del out.lines[lines:]
        return ctype, "", fields
    partial = None
    if count > LOOP_COPIES:  # the thread's copies, combined in order by a loop
        ctype, value, fields = _copy_state(out, exprs, reductions, copies, accumulators, state_of, "0")
        partial = out.fresh("hv_thread")
        out.taken.add(partial)
        out.emit(f"{ctype} {partial} = {value};")
        out.emit("#pragma unroll")
        out.open(f"for (int hv_c = 1; hv_c < {count}; ++hv_c) {{")
        _, value, _ = _copy_state(out, exprs, reductions, copies, accumulators, state_of, "hv_c")
        out.emit(f"{partial} = {combiner}({partial}, {value});")
        out.close()
    for v in range(count if count <= LOOP_COPIES else 0):  # the thread's copies, combined in order
        ctype, value, fields = _copy_state(out, exprs, reductions, copies, accumulators, state_of, str(v))
        partial = value if partial is None else f"{combiner}({partial}, {value})"
    return ctype, partial, fields


def _ready_reduction(stmt: ast.stmt, copies: dict, defined: set[str]) -> bool:
    """A reduction whose arguments are all loop accumulators (their copies) or defined before: its partial is ready."""
    if not isinstance(stmt, ast.Assign) or _reduction_call(stmt.value) is None:
        return False
    _, arguments, _ = _reduction_call(stmt.value)
    used = set().union(*(names_in(a) for a in arguments))
    return bool(used & set(copies)) and used <= set(copies) | defined


def _declare_copies(out: Emitter, accumulators: list[str], count: int, note: str = "") -> dict[str, tuple[str, str, int]]:
    """An array of `count` copies of each accumulator, each starting at its value: acc -> (array, dtype, count)."""
    copies = {}
    for acc in accumulators:
        var = out.lookup(acc)
        array = out.fresh(f"{acc}_copies")
        out.taken.add(array)
        out.emit(f"{out.ctype(var.dtype)} {array}[{count}] = {{{', '.join([var.cname] * count)}}};{note}")
        copies[acc] = (array, var.dtype, count)
    return copies


def _copy_state(out, exprs, reductions, copies, accumulators, state_of, v: str) -> tuple[str, str, list]:
    """The reduction's state of the thread's accumulator copy `v` (an index: `2`, `hv_c`)."""
    kind, arguments, fast = state_of
    out.scopes.append({acc: Var(f"{copies[acc][0]}[{v}]", copies[acc][1], len(out.scopes)) for acc in accumulators})
    found = reductions.state(kind, [exprs(a) for a in arguments], fast)
    out.scopes.pop()
    return found


def _emit_vector_load(out: Emitter, exprs: Expressions, statements: Statements, name: str, call: ast.Call,
                      fast: tuple[str, str], full: str) -> None:
    """`name = tl.load(...)` in a vectorized loop: at the thread's first column, one vector load of all its columns
    when they are in the row, the mask holds there and the address is aligned; each column then takes its value
    from the vector, or loads it alone when the vector was not loaded."""
    flag, array = fast
    mask = mask_of(call)
    pointer, offset = exprs.address(call.args[0])
    conditions = [full]
    if mask is not None:
        conditions.append(out.cast(exprs(mask), "i1"))
    conditions.append(f"hv::aligned16({pointer} + {offset.code})")
    out.open("if (hv_v == 0) {")
    out.emit(f"{flag} = {' && '.join(conditions)};")
    out.emit(f"if ({flag}) hv::load_vector({pointer} + {offset.code}, {array});")
    out.close()
    scalar = exprs.load(call)
    statements.store_name(name, Value(f"({flag} ? {array}[hv_v] : {scalar.code})", scalar.dtype))


@dataclass(frozen=True)
class ChunkStep:
    """One step of a chunked loop, as the C++ sees it: its column variable, the vector width, the chunks a thread
    takes, the lanes, the row's length, and the loop's column index with its copies (moved to each chunk)."""

    start: str
    width: int
    chunks: int
    lanes: Lanes
    stop: str
    columns: set[str]


def _emit_chunk_loads(out: Emitter, exprs: Expressions, statements: Statements, name: str, call: ast.Call,
                      fast: tuple[str, str], step: ChunkStep) -> None:
    """`name = tl.load(...)` in a chunked vectorized loop: at the thread's first column (copy 0), one vector load of
    each chunk (its address: the load's, with the column moved c x width x threads further on) where the chunk is in
    the row, the mask holds and the address is aligned; each copy then takes its value from its chunk's vector, or
    loads it alone when that vector was not loaded."""
    flag, array = fast
    cname, width, chunks, lanes, stop = step.start, step.width, step.chunks, step.lanes, step.stop
    mask = mask_of(call)
    moved = {}
    for column in step.columns:
        var = out.lookup(column)
        if var is not None:
            moved[column] = Var(f"({var.cname} + hv_c * {width} * {lanes.count})", var.dtype, len(out.scopes))
    out.scopes.append(moved)
    pointer, offset = exprs.address(call.args[0])
    out.scopes.pop()
    address = f"{pointer} + {offset.code}"
    conditions = [f"{cname} + hv_c * {width} * {lanes.count} + {width} * {lanes.lane} + {width} <= {stop}"]
    if mask is not None:
        conditions.append(out.cast(exprs(mask), "i1"))
    conditions.append(f"hv::aligned16({address})")
    out.open("if (hv_v == 0) {")
    out.emit("#pragma unroll")
    out.open(f"for (int32_t hv_c = 0; hv_c < {chunks}; ++hv_c) {{")
    out.emit(f"{flag}[hv_c] = {' && '.join(conditions)};")
    out.emit(f"if ({flag}[hv_c]) hv::load_vector({address}, {array}[hv_c]);")
    out.close()
    out.close()
    scalar = exprs.load(call)
    chunk = f"hv_v / {width}"
    statements.store_name(name, Value(f"({flag}[{chunk}] ? {array}[{chunk}][hv_v % {width}] : {scalar.code})", scalar.dtype))


def _emit_persistent(out, body, axes, exprs, row_statements, lane_statements, reductions, rnumel: Value, lanes: Lanes,
                     kept: Kept | None = None, scans: CombineLambdas | None = None) -> None:
    """Each reduction is a pass of the row's threads over it, with the lane-level statements it needs; the stores
    go in the last pass. A scan (scans: the kernel's combine lambdas) is a lane-level statement whose tile of the
    row (hv_k: 32 values, one a lane; hv_r0: the block's threads) is scanned together: every thread takes part
    (hv_in: a thread past the row's end clamps its index, folds and stores nothing), each scan's carry declared
    before its pass."""
    lane_level = {axes.reduction_base}
    for stmt in body:
        if isinstance(stmt, ast.Assign) and _reduction_call(stmt.value) is None and names_used(stmt) & lane_level:
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
        reduction = _reduction_call(stmt.value) if isinstance(stmt, ast.Assign) else None
        if reduction is not None:
            kind, arguments, call = reduction
            fast = _softmax_fast(call) if kind == "online_softmax_reduce" else "false"
            needed = set().union(*(names_in(a) for a in arguments))
            start = len(out.lines)
            partial = out.fresh("hv_partial")
            open_pass(closure(needed | (_loads_to_prefetch(pending, closure(set(needed)), kept) if kept else set())))
            ctype, value, fields = reductions.state(kind, [exprs(a) for a in arguments], fast)
            out.emit(f"{'if (hv_in) ' if scans is not None else ''}{partial} = {reductions.combiner(kind, fast)}({partial}, {value});")
            close_pass()
            identity = reductions.identity(kind, ctype, fields)
            out.lines.insert(start, "    " * out.indent + f"{ctype} {partial} = {identity};")
            out.bind(f" {partial}", Var(partial, "", len(out.scopes)))
            result = out.fresh("hv_" + kind.replace("_", ""))
            out.emit(f"const {ctype} {result} = {lanes.reduce}({partial}, {reductions.combiner(kind, fast)});")
            out.bind(f" {result}", Var(result, "", len(out.scopes)))
            _bind_result(out, row_statements, stmt, result, fields)
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
        _drop_unread(out, kept)


def _loads_to_prefetch(pending: list[ast.stmt], this_pass: list[ast.stmt], kept: Kept) -> set[str]:
    """Names of the loads that a later pass needs and this pass can load too, into the registers left (of
    PREFETCH_REGISTERS) once this pass's own loads are kept: weights and biases loaded with the row, not after its
    reductions, as Triton does."""
    def loads(stmt: ast.stmt) -> bool:
        return any(isinstance(n, ast.Call) and dotted(n.func) == "tl.load" for n in ast.walk(stmt))
    slots = PREFETCH_REGISTERS // kept.per_lane - len(kept.arrays) - sum(
        1 for s in this_pass if loads(s) and not (defines(s) & set(kept.arrays)))
    chosen: set[str] = set()
    for stmt in pending:
        if slots <= 0:
            break
        if stmt in this_pass or not loads(stmt) or defines(stmt) & set(kept.arrays):
            continue
        name = kept.worth_keeping(stmt)
        if name is not None:
            chosen.add(name)
            slots -= 1
    return chosen


def _drop_unread(out: Emitter, kept: Kept) -> None:
    """Kept arrays that no later pass reads (the last pass's loads) are not written at all."""
    for array, _ in kept.arrays.values():
        if not any(line.rstrip().endswith(f" = {array}[hv_k];") for line in out.lines):
            out.lines[:] = [line for line in out.lines if f" {array}[{kept.per_lane}];" not in line
                            and not line.lstrip().startswith(f"{array}[hv_k] = ")]


def split_rows_loop(facts: ModuleFacts) -> ast.For | None:
    """The loop of a mix-order reduction (Inductor's split of rows over programs), or None: `for _ in
    tl.range(0, split_size, BLOCK_ROWS)` with `split_size = min(RSPLIT_SIZE, ...)` before it."""
    minimums = {s.targets[0].id for s in facts.body if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)
                and isinstance(s.value, ast.Call) and dotted(s.value.func) == "min"}
    for stmt in facts.body:
        if isinstance(stmt, ast.For) and isinstance(stmt.iter, ast.Call) and dotted(stmt.iter.func) in ("range", "tl.range") \
                and len(stmt.iter.args) == 3 and isinstance(stmt.iter.args[1], ast.Name) and stmt.iter.args[1].id in minimums:
            return stmt
    return None


@dataclass
class SplitRows:
    """The parts of a mix-order reduction, by the roles Inductor's template gives them."""

    row_start: str  # `row_start = tl.program_id(0) * RSPLIT_SIZE`
    split_block: str  # RSPLIT_SIZE
    rows: str  # `rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]`, stepped by the loop
    columns: str  # `cols = tl.arange(0, BLOCK_COLS)[None, :]`
    columns_block: str  # BLOCK_COLS
    split: ast.Assign  # `split_size = min(RSPLIT_SIZE, n_rows - row_start)`
    accumulators: dict[str, str]  # a column accumulator -> its dtype
    row: str  # the loop's row: `rows_1 = rows`
    loop_body: list[ast.stmt]  # one row's statements, the column accumulations as stores to shared memory
    stores: list[ast.stmt]  # after the loop: the workspace stores, of shared memory
    row_level: list[ast.stmt]  # before the loop, statements of neither the rows nor the columns (col_mask ...)
    cell: str  # a column's place in the shared-memory row of its sums


def _split_parts(facts: ModuleFacts, loop: ast.For, cell: str = "{columns}") -> SplitRows:
    """`cell`: where in its shared-memory row a column's sum is, of the columns' name (`{columns}`)."""
    position = facts.body.index(loop)
    before, after = list(facts.body[:position]), list(facts.body[position + 1:])
    found: dict[str, object] = {"accumulators": {}, "row_level": []}
    for stmt in before:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            raise NoTwin(f"a mix-order reduction with `{ast.unparse(stmt)[:60]}` before its loop")
        name, value = stmt.targets[0].id, stmt.value
        arange = arange_block(value)
        if program_offset(value) == 0 and isinstance(value.right, ast.Name):
            found["row_start"], found["split_block"] = name, value.right.id
        elif isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) and isinstance(value.left, ast.Name) \
                and value.left.id == found.get("row_start") and arange_block(value.right):
            found["rows"] = name
        elif arange is not None:
            found["columns"], found["columns_block"] = name, arange
        elif isinstance(value, ast.Call) and dotted(value.func) == "min":
            found["split"] = stmt
        elif _zeros_dtype(value) is not None and any(name in defines(s) for s in loop.body):
            found["accumulators"][name] = _zeros_dtype(value)
        else:
            found["row_level"].append(stmt)
    missing = [k for k in ("row_start", "rows", "columns", "split") if k not in found]
    if missing:
        raise NoTwin(f"a mix-order reduction without its {', '.join(missing)}")
    rows, columns = found["rows"], found["columns"]
    head = loop.body[:2]
    if not (len(head) == 2 and isinstance(head[0], ast.Assign) and ast.unparse(head[0].value) == rows
            and isinstance(head[1], ast.AugAssign) and ast.unparse(head[1].target) == rows):
        raise NoTwin("a mix-order reduction whose loop does not start `rows_1 = rows; rows += BLOCK_ROWS`")
    row = head[0].targets[0].id
    index = cell.format(columns=columns)
    body = _accumulations_to_stores(loop.body[2:], found["accumulators"], index)
    if any(rows in names_in(s) for s in body):
        raise NoTwin("a mix-order reduction that reads its stepped rows in the loop")
    stores = [_workspace_store(s, found["accumulators"], index) for s in after]
    return SplitRows(found["row_start"], found["split_block"], rows, columns, found["columns_block"], found["split"],
                     found["accumulators"], row, body, stores, found["row_level"], index)


def _zeros_dtype(value: ast.expr) -> str | None:
    """`tl.full([BLOCK_COLS], 0, tl.float32)[None, :]` -> "fp32"."""
    while isinstance(value, ast.Subscript):
        value = value.value
    if isinstance(value, ast.Call) and dotted(value.func) == "tl.full" and len(value.args) == 3 \
            and isinstance(value.args[1], ast.Constant) and value.args[1].value == 0:
        return {"tl.float32": "fp32", "tl.float64": "fp64", "tl.int32": "i32", "tl.int64": "i64"}.get(ast.unparse(value.args[2]))
    return None


def _shared(accumulator: str) -> str:
    """The name a column accumulator's shared-memory array goes by, as a pointer the kernel's code can index."""
    return f"{accumulator}_shared"


def _accumulations_to_stores(body: list[ast.stmt], accumulators: dict[str, str], cell: str) -> list[ast.stmt]:
    """`total = tl.sum(x, 0)`, `add = acc + total`, `acc = add` (one row a step: the sum over it is x itself) become
    `tl.store(acc_shared + (cell), tl.load(acc_shared + (cell)) + x)`: each column's partial sum, in shared memory."""
    column_sums: dict[str, ast.expr] = {}  # `total` -> x
    sums_of: dict[str, tuple[str, ast.expr]] = {}  # `add` -> (acc, x)
    out: list[ast.stmt] = []
    for stmt in body:
        target = stmt.targets[0].id if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) else None
        value = stmt.value if isinstance(stmt, ast.Assign) else None
        if isinstance(value, ast.Call) and dotted(value.func) == "tl.sum" and len(value.args) == 2 \
                and isinstance(value.args[1], ast.Constant) and value.args[1].value == 0:
            column_sums[target] = value.args[0]
            continue
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
            sides = {ast.unparse(value.left), ast.unparse(value.right)}
            accumulator = next((a for a in accumulators if a in sides), None)
            total = next((t for t in column_sums if t in sides), None)
            if accumulator and total and sides == {accumulator, total}:
                sums_of[target] = (accumulator, column_sums.pop(total))
                continue
        if target in accumulators and isinstance(value, ast.Name) and value.id in sums_of:
            accumulator, x = sums_of.pop(value.id)
            if accumulator != target:
                raise NoTwin(f"a mix-order reduction adds {accumulator} into {target}")
            address = f"{_shared(accumulator)} + ({cell})"
            out.append(ast.parse(f"tl.store({address}, tl.load({address}) + ({ast.unparse(x)}))").body[0])
            continue
        out.append(stmt)
    if column_sums or sums_of or any(a in names_in(s) for s in out for a in accumulators):
        raise NoTwin("a mix-order reduction's column sums are not `acc = acc + tl.sum(x, 0)`")
    return out


def _workspace_store(stmt: ast.stmt, accumulators: dict[str, str], cell: str) -> ast.stmt:
    """`tl.store(ws_ptr + (tl.program_id(0) + k * tl.num_programs(0)) * n_cols + cols, acc, col_mask)` with the
    program and the number of programs as names, and acc read from its shared memory."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and dotted(stmt.value.func) == "tl.store"):
        raise NoTwin(f"a mix-order reduction with `{ast.unparse(stmt)[:60]}` after its loop")
    text = ast.unparse(stmt).replace("tl.program_id(0)", "hv_program").replace("tl.num_programs(0)", "hv_programs")
    node = ast.parse(text).body[0]
    for call in ast.walk(node):
        if isinstance(call, ast.Call) and dotted(call.func) == "tl.store" and len(call.args) >= 2 \
                and isinstance(call.args[1], ast.Name) and call.args[1].id in accumulators:
            call.args[1] = ast.parse(f"tl.load({_shared(call.args[1].id)} + ({cell}))", mode="eval").body
    if "tl.program_id" in ast.unparse(node) or "tl.num_programs" in ast.unparse(node):
        raise NoTwin(f"a mix-order reduction's workspace store `{ast.unparse(stmt)[:60]}`")
    return node


def translate_split_rows(facts: ModuleFacts, loop: ast.For) -> TwinSource:
    """A mix-order reduction: one thread block per program, which takes its RSPLIT_SIZE rows. Rows of 2-byte values
    up to WARP_ROW_LIMIT long (16-byte groups of 8 a lane, _lane_groups): each warp takes every ROWS_PER_BLOCK-th
    row, a warp-per-row persistent reduction (values kept in registers between passes), and keeps each column's sum
    over its rows in its own shared-memory row, owned by one lane (no barrier until the warps' sums are added).
    Other rows: the block's threads stride over each row in turn, the column sums in one shared-memory row."""
    parts = _split_parts(facts, loop)
    rows_per_step = facts.constexprs.get(loop.iter.args[2].id) if isinstance(loop.iter.args[2], ast.Name) else None
    if rows_per_step != 1:
        raise NoTwin(f"a mix-order reduction of {rows_per_step} rows a step (the twin takes one row a step)")
    rnumel = int(parts.columns_block) if parts.columns_block.isdigit() else facts.constexprs.get(parts.columns_block)
    split = facts.constexprs.get(parts.split_block)
    if not isinstance(rnumel, int) or not isinstance(split, int):
        raise NoTwin("a mix-order reduction whose row length or split is not a number")
    axes = Axes(program={0: parts.row}, reduction_base=parts.columns, reduction_block=parts.columns_block)
    _, _, known = split_prologue(facts, Axes(offsets={parts.row_start: 0}))
    out, signature, launcher_args = start_emitter(facts)
    shared = {_shared(a): dtype for a, dtype in parts.accumulators.items()}
    shared_bytes = ROWS_PER_BLOCK * rnumel * sum(CTYPES[dtype][1] for dtype in shared.values())
    groups = _lane_groups(parts.loop_body, axes, facts, parts.row, rnumel) if rnumel <= WARP_ROW_LIMIT else ([], 1)
    # a warp per row only with 16-byte groups (bf16 rows): on the H200 the warps gained there (1.54x -> 1.15x of
    # Triton's time) and lost on fp32 rows (1.74x -> 2.22x), which keep the block per row (session 20)
    warps = (groups[1] > 1 or (SPLIT_WARPS_UNGROUPED and rnumel <= WARP_ROW_LIMIT)) and shared_bytes <= SPLIT_SHARED_BYTES
    if groups[1] > 1:  # a lane's neighbouring columns: their sums `rnumel / width` apart (no bank conflicts)
        parts = _split_parts(facts, loop, f"({{columns}} % {groups[1]}) * {rnumel // groups[1]} + {{columns}} // {groups[1]}")
    copies = ROWS_PER_BLOCK if warps else 1
    # the shared-memory arrays read and written as pointers of the body (tl.load / tl.store): the emitter's facts
    # know them; the signature and launcher, made above and by finish() from `facts`, do not
    out.facts = replace(facts, params=facts.params + tuple(shared), arg_dtypes={**facts.arg_dtypes, **shared},
                        pointer_params=facts.pointer_params | set(shared))
    arrays = {}
    for name, dtype in shared.items():
        array = out.fresh("hv_" + name.removesuffix("_shared"))
        out.taken.add(array)
        arrays[name] = (array, dtype)
        if warps:
            out.emit(f"__shared__ {out.ctype(dtype)} {array}[{copies}][{rnumel}];  // each warp's sum of each column over its rows")
        else:
            out.emit(f"__shared__ {out.ctype(dtype)} {array}[{rnumel}];  // this program's sum of each column over its rows")
    out.bind("hv_program", Var("static_cast<int32_t>(blockIdx.x)", "i32", 1))
    out.bind("hv_programs", Var("static_cast<int32_t>(gridDim.x)", "i32", 1))
    exprs = Expressions(out, axes)
    lanes = Lanes.warps() if warps else Lanes.rows()
    row_statements = Statements(out, exprs, row_level_stores=True, store_guard=lanes.row_store_guard, barrier=lanes.barrier)
    lane_statements = Statements(out, exprs, store_guard=lanes.lane_store_guard)
    reductions = RowReductions(out)
    width = Value(str(rnumel), "i32")
    if warps:
        out.emit("const int32_t hv_lane = static_cast<int32_t>(threadIdx.x % 32);")
        out.emit("const int32_t hv_warp = static_cast<int32_t>(threadIdx.x / 32);")
    for name, (array, dtype) in arrays.items():
        out.bind(name, Var(f"{array}[hv_warp]" if warps else array, dtype, 1))
    for stmt in facts.body[:facts.body.index(loop)]:  # in the kernel's order: the rows, columns and sums are the CUDA's
        if stmt is parts.split:
            out.declare(parts.row_start, "i32", f"static_cast<int32_t>(blockIdx.x) * {split}")
            out.declare(parts.split.targets[0].id, "i32", f"min({split}, {exprs(parts.split.value.args[1]).code})")
        elif stmt in parts.row_level:
            row_statements.statement(stmt)

    def kept() -> Kept | None:  # (each pass's registers: a Kept of its own)
        return Kept(rnumel, _stored_pointers(facts), *groups) if warps else None

    out.emit("// each column's sum starts at zero" + (" (a warp's columns: its lanes', as in each row)" if warps else ""))
    cells = [ast.parse(f"tl.store({name} + ({parts.cell}), 0)").body[0] for name in shared]
    _emit_persistent(out, cells, axes, exprs, row_statements, lane_statements, reductions, width, lanes, kept())
    split_size = out.lookup(parts.split.targets[0].id).cname
    if warps:
        out.emit(f"// the program's rows, warp w taking rows w, w + {copies}, ...; its lanes stride over each row's {rnumel} elements")
        out.open(f"for (int32_t hv_i = hv_warp; hv_i < {split_size}; hv_i += {copies}) {{")
    else:
        out.emit(f"// the program's rows one after the other; its threads stride over each row's {rnumel} elements")
        out.open(f"for (int32_t hv_i = 0; hv_i < {split_size}; ++hv_i) {{")
    out.declare(parts.row, "i32", f"{out.lookup(parts.row_start).cname} + hv_i")
    _emit_persistent(out, parts.loop_body, axes, exprs, row_statements, lane_statements, reductions, width, lanes, kept())
    out.close()
    if warps:
        out.emit("// the warps' column sums added (in warp order) into warp 0's")
        out.emit("__syncthreads();")
        out.open(f"for (int32_t hv_c = threadIdx.x; hv_c < {rnumel}; hv_c += blockDim.x) {{")
        for array, _ in arrays.values():
            out.emit(f"for (int32_t hv_w = 1; hv_w < {copies}; ++hv_w) {array}[0][hv_c] += {array}[hv_w][hv_c];")
        out.close()
        out.emit("__syncthreads();")
        for name, (array, dtype) in arrays.items():
            out.bind(name, Var(f"{array}[0]", dtype, 1))
        lanes = Lanes.rows()
        row_statements = Statements(out, exprs, row_level_stores=True, store_guard=lanes.row_store_guard, barrier=lanes.barrier)
        lane_statements = Statements(out, exprs, store_guard=lanes.lane_store_guard)
    out.emit("// each column's sum to the workspace")
    _emit_persistent(out, parts.stores, axes, exprs, row_statements, lane_statements, reductions, width, lanes)
    launch_lines = [
        f"const int64_t hv_rows = {host_expr(facts.grid[0], known, facts.params)};",
        f"const int64_t hv_programs = (hv_rows + {split - 1}) / {split};",
        f"const int64_t hv_rnumel = int64_t({rnumel});",
        "if (hv_programs <= 0) return;",
        'TORCH_CHECK(hv_programs <= 2147483647, "more programs than one grid of 2^31 - 1 blocks covers: ", hv_programs);',
    ]
    if warps:
        threads = "32 * hv::WARP_ROWS_PER_BLOCK"
        notes = [f"a mix-order reduction: one thread block of {copies} warps per program, each warp over every "
                 f"{copies}th of its {split} rows, its lanes striding over each row",
                 "each row's reductions combined by warp shuffles, the values later passes need kept in registers; each "
                 "column's sum over a warp's rows kept in that warp's shared memory by the lane it belongs to, the "
                 "warps' sums added, then stored to the workspace"]
    else:
        threads = f"{SPLIT_BLOCK_THREADS}" if SPLIT_BLOCK_THREADS else "hv::row_threads(hv_rnumel)"
        notes = [f"a mix-order reduction: one thread block per program, over its {split} rows one after the other; "
                 "the block's threads stride over each row",
                 "each row's reductions combined by warp shuffles and shared memory; each column's sum over the program's rows "
                 "kept in shared memory by the thread it belongs to, then stored to the workspace"]
    return finish(facts, out, signature, launcher_args, launch_lines, "static_cast<unsigned int>(hv_programs)",
                  threads, "reduction", notes)
