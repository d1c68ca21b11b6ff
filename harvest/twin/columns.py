"""Column reductions: where the kernel's loads walk memory along its rows and the reduced dimension is the outer one
(a bias gradient summing over a batch), a block takes 32 neighbouring rows along threadIdx.x (so that loads
coalesce) and its threadIdx.y threads stride over each row's reduced dimension; the rows' partials are combined
through shared memory. (A variant that gave a looped one's thread 4 neighbouring rows, read by one 16-byte load a
column step, was weighed on an H100 in session 29 and lost on 15 of its 16 twins: docs/benchmarks.md.)"""

from __future__ import annotations

import ast

from harvest.syntax import dotted
from harvest.twin.body import Axes, offset_at, size_stand_ins
from harvest.twin.facts import ModuleFacts, TwinSource
from harvest.twin.looped import LoopedRows
from harvest.twin.persistent import emit_persistent
from harvest.twin.row_kernel import RECOMPUTED, Lanes, RowKernel

LANES = Lanes("static_cast<int32_t>(threadIdx.y)", "blockDim.y", "hv::column_reduce", ("threadIdx.y == 0", "hv_row_ok"), ("hv_row_ok",))


def translate(kernel: RowKernel) -> TwinSource:
    out = kernel.out
    emitters = kernel.begin(LANES)
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
