"""Block rows: one thread block per row (grid-stride over rows), its threads striding over the row; per-thread
partials combined by warp shuffles and shared memory. A persistent row is a pass per reduction (persistent.py), a
looped one the threads' own loops (looped.py); with TwinChoices.constant_row_block a looped row of a constant
length takes a block whose size is a constant of the kernel."""

from __future__ import annotations

from dataclasses import replace

from harvest.twin.facts import TwinSource
from harvest.twin.looped import LoopedRows
from harvest.twin.persistent import emit_persistent
from harvest.twin.row_kernel import RECOMPUTED, Lanes, RowKernel

LANES = Lanes("static_cast<int32_t>(threadIdx.x)", "blockDim.x", "hv::block_reduce", ("threadIdx.x == 0",), ())


def translate(kernel: RowKernel) -> TwinSource:
    out, looped, row_length = kernel.out, kernel.looped, kernel.row_length
    # the block's size a constant of the kernel (hv_block, set below): loops of a known trip count
    fixed_block = kernel.choices.constant_row_block and looped and isinstance(row_length, int)
    emitters = kernel.begin(replace(LANES, count="hv_block") if fixed_block else LANES)
    out.emit(f"// one thread block per row; its threads stride over the row's {kernel.numel_text} elements")
    out.open("for (int64_t hv_row = blockIdx.x; hv_row < hv_rows; hv_row += gridDim.x) {")
    kernel.declare_row("hv_row")
    step = 1  # columns a thread takes a step (the launcher sizes the block by it); a persistent row's threads take one
    if looped:
        step = LoopedRows(kernel, emitters).emit()
    else:
        emit_persistent(out, kernel.body, kernel.axes, kernel.exprs, emitters, kernel.rnumel, None, kernel.scans)
    kernel.end_rows()
    if fixed_block:
        block = _row_threads(-(-row_length // step))
        out.lines.insert(0, f"    constexpr int32_t hv_block = {block};  // the block's threads (the launcher's): a row of {row_length}, {step} a thread a step")
        threads = str(block)
        notes = ["one thread block per row (grid-stride over rows), threads stride over the row, the block's size a constant "
                 "of the kernel", "per-thread partials combined by warp shuffles and shared memory"]
    else:
        # 32 to 512 threads a row: a looped reduction's threads each take `step` columns a step
        threads = f"hv::row_threads((hv_rnumel + {step - 1}) / {step})" if looped else "hv::row_threads(hv_rnumel)"
        notes = ["one thread block per row (grid-stride over rows), threads stride over the row",
                 "per-thread partials combined by warp shuffles and shared memory"]
    if not looped:
        notes.append(RECOMPUTED)
    return kernel.finish(kernel.launch_lines(), "hv::row_blocks(hv_rows)", threads, notes)


def _row_threads(work: int) -> int:
    """hv::row_threads of the launch helpers: a power of two from 32 to 512, about one thread per unit of work."""
    threads = 32
    while threads < work and threads < 512:
        threads *= 2
    return threads
