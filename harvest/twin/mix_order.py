"""Mix-order reductions: Inductor's split of rows over programs (`for _ in tl.range(0, split_size, BLOCK_ROWS)`), each
program reducing its RSPLIT_SIZE rows one after the other and summing each column over them into a workspace. The
twin gives each program one thread block: a warp per row for rows of 16-byte groups (bf16), the block's threads
along each row otherwise, and each column's sum kept in shared memory by the thread it belongs to."""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace

from harvest.syntax import dotted
from harvest.twin import block_rows, warp_rows
from harvest.twin.body import (
    Axes,
    arange_block,
    defines,
    finish,
    host_expr,
    names_in,
    program_offset,
    split_prologue,
    start_emitter,
)
from harvest.twin.choices import TwinChoices
from harvest.twin.cpp import Value, Var
from harvest.twin.expressions import Expressions
from harvest.twin.facts import CTYPES, ModuleFacts, NoTwin, TwinSource
from harvest.twin.persistent import Kept, emit_persistent
from harvest.twin.row_kernel import RowEmitters
from harvest.twin.warp_rows import ROWS_PER_BLOCK, lane_groups, stored_pointers


def mix_order_loop(facts: ModuleFacts) -> ast.For | None:
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
class MixOrderParts:
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


def _parts(facts: ModuleFacts, loop: ast.For, cell: str = "{columns}") -> MixOrderParts:
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
    return MixOrderParts(found["row_start"], found["split_block"], rows, columns, found["columns_block"], found["split"],
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


def translate_mix_order(facts: ModuleFacts, loop: ast.For, choices: TwinChoices) -> TwinSource:
    """A mix-order reduction: one thread block per program, which takes its RSPLIT_SIZE rows. Rows of 2-byte values
    up to choices.warp_row_limit long (16-byte groups of 8 a lane, lane_groups): each warp takes every ROWS_PER_BLOCK-th
    row, a warp-per-row persistent reduction (values kept in registers between passes), and keeps each column's sum
    over its rows in its own shared-memory row, owned by one lane (no barrier until the warps' sums are added).
    Other rows: the block's threads stride over each row in turn, the column sums in one shared-memory row."""
    parts = _parts(facts, loop)
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
    groups = lane_groups(parts.loop_body, axes, facts, parts.row, rnumel, choices) if rnumel <= choices.warp_row_limit else ([], 1)
    # a warp per row only with 16-byte groups (bf16 rows): on the H200 the warps gained there (1.54x -> 1.15x of
    # Triton's time) and lost on fp32 rows (1.74x -> 2.22x), which keep the block per row (session 20)
    warps = (groups[1] > 1 or (choices.split_warps_ungrouped and rnumel <= choices.warp_row_limit)) \
        and shared_bytes <= choices.split_shared_bytes
    if groups[1] > 1:  # a lane's neighbouring columns: their sums `rnumel / width` apart (no bank conflicts)
        parts = _parts(facts, loop, f"({{columns}} % {groups[1]}) * {rnumel // groups[1]} + {{columns}} // {groups[1]}")
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
    emitters = RowEmitters.of(out, exprs, warp_rows.LANES if warps else block_rows.LANES)
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
            emitters.row.statement(stmt)

    def kept() -> Kept | None:  # (each pass's registers: a Kept of its own)
        return Kept(choices, rnumel, stored_pointers(facts), *groups) if warps else None

    out.emit("// each column's sum starts at zero" + (" (a warp's columns: its lanes', as in each row)" if warps else ""))
    cells = [ast.parse(f"tl.store({name} + ({parts.cell}), 0)").body[0] for name in shared]
    emit_persistent(out, cells, axes, exprs, emitters, width, kept())
    split_size = out.lookup(parts.split.targets[0].id).cname
    if warps:
        out.emit(f"// the program's rows, warp w taking rows w, w + {copies}, ...; its lanes stride over each row's {rnumel} elements")
        out.open(f"for (int32_t hv_i = hv_warp; hv_i < {split_size}; hv_i += {copies}) {{")
    else:
        out.emit(f"// the program's rows one after the other; its threads stride over each row's {rnumel} elements")
        out.open(f"for (int32_t hv_i = 0; hv_i < {split_size}; ++hv_i) {{")
    out.declare(parts.row, "i32", f"{out.lookup(parts.row_start).cname} + hv_i")
    emit_persistent(out, parts.loop_body, axes, exprs, emitters, width, kept())
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
        emitters = RowEmitters.of(out, exprs, block_rows.LANES)
    out.emit("// each column's sum to the workspace")
    emit_persistent(out, parts.stores, axes, exprs, emitters, width)
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
        threads = f"{choices.split_block_threads}" if choices.split_block_threads else "hv::row_threads(hv_rnumel)"
        notes = [f"a mix-order reduction: one thread block per program, over its {split} rows one after the other; "
                 "the block's threads stride over each row",
                 "each row's reductions combined by warp shuffles and shared memory; each column's sum over the program's rows "
                 "kept in shared memory by the thread it belongs to, then stored to the workspace"]
    return finish(facts, out, signature, launcher_args, launch_lines, "static_cast<unsigned int>(hv_programs)",
                  threads, "reduction", notes)
