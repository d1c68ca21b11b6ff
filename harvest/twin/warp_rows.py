"""Warp rows: a persistent reduction over rows up to TwinChoices.warp_row_limit long takes one warp per row,
ROWS_PER_BLOCK rows a block; its 32 lanes stride over the row, their partials combined by warp shuffles alone (no
shared memory, no block barrier), and the values later passes need kept in registers (Kept)."""

from __future__ import annotations

import ast

from harvest.syntax import dotted, pointer_of
from harvest.twin.body import Axes, defines, offset_at, size_stand_ins
from harvest.twin.choices import TwinChoices
from harvest.twin.facts import CTYPES, ModuleFacts, TwinSource
from harvest.twin.persistent import Kept, emit_persistent
from harvest.twin.pointwise import aliases, axis_masks, grouped_accesses
from harvest.twin.row_kernel import Lanes, RowKernel

ROWS_PER_BLOCK = 4  # warps (rows) per block: the launcher's hv::WARP_ROWS_PER_BLOCK
LANES = Lanes("hv_lane", "32", "hv::warp_reduce", ("hv_lane == 0",), (), barrier="__syncwarp();")


def translate(kernel: RowKernel) -> TwinSource:
    """One warp per row, the row's values loaded once and kept for the passes after the first where they fit."""
    out, rnumel = kernel.out, int(kernel.rnumel.code)
    emitters = kernel.begin(LANES)
    out.emit(f"// one warp per row ({ROWS_PER_BLOCK} rows a block); its 32 lanes stride over the row's "
             f"{kernel.numel_text} elements, the values later passes need kept in registers")
    out.emit("const int32_t hv_lane = static_cast<int32_t>(threadIdx.x % 32);")
    out.emit("const int64_t hv_warps = blockDim.x / 32;")
    out.open("for (int64_t hv_row = static_cast<int64_t>(blockIdx.x) * hv_warps + threadIdx.x / 32; hv_row < hv_rows; "
             "hv_row += static_cast<int64_t>(gridDim.x) * hv_warps) {")
    kernel.declare_row("hv_row")
    # a scan takes the row in its order: 32 neighbouring values a step, not a lane's group of them
    groups = lane_groups(kernel.body, kernel.axes, kernel.facts, kernel.row_name, rnumel, kernel.choices) \
        if kernel.scans is None else ([], 1)
    kept = Kept(kernel.choices, rnumel, stored_pointers(kernel.facts), *groups)
    emit_persistent(out, kernel.body, kernel.axes, kernel.exprs, emitters, kernel.rnumel, kept, kernel.scans)
    kernel.end_rows()
    notes = [f"one warp per row, {ROWS_PER_BLOCK} rows a block of {32 * ROWS_PER_BLOCK} threads (grid-stride over rows); "
             "its lanes stride over the row", "per-lane partials combined by warp shuffles (no shared memory, no block barrier)",
             "each reduction is its own pass over the row; the values a pass loads (or draws at random) are kept "
             "in registers for the passes after it, when they fit"]
    return kernel.finish(kernel.launch_lines(), "hv::warp_row_blocks(hv_rows)", "32 * hv::WARP_ROWS_PER_BLOCK", notes)


def lane_groups(body: list[ast.stmt], axes: Axes, facts: ModuleFacts, row_name: str, rnumel: int,
                choices: TwinChoices) -> tuple[list, int]:
    """A warp-per-row reduction's loads and stores that are contiguous along the row in groups of the elements one
    16-byte access holds, and that many: ([], 1) unless every lane's values and the row split into whole groups (a
    group's first element in the row: all of it is). The width is set by the widest type of the accesses that move
    with the row (bf16 over a bool mask, over an int64 vector the rows share); narrower types than that stay scalar.
    Only for rows of 2-byte values (8 a lane, choices.grouped_lane_values): on the H200 (session 20) bf16 rows gained
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
    if not grouped or width < choices.grouped_lane_values or -(-rnumel // 32) % width or rnumel % width:
        return [], 1
    return grouped, width


def stored_pointers(facts: ModuleFacts) -> set[str]:
    stores = [n for n in ast.walk(ast.Module(body=facts.body, type_ignores=[])) if isinstance(n, ast.Call)
              and dotted(n.func) in ("tl.store", "tl.atomic_add", "tl.atomic_max", "tl.atomic_min")]
    return {p for p in (pointer_of(s.args[0]) for s in stores if s.args) if p is not None}
