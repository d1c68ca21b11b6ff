"""add_sum_kernel: reduction kernel fusing aten.add, aten.view, aten.sum

Source lines:
    examples/small_model.py:25 in forward: h = self.down(h)
    examples/small_model.py:26 in forward: scores = (h @ x.transpose(-2, -1)) * self.scale
From examples/small_model.py, graph g1_backward: Inductor's triton_red_fused_add_sum_view_2.
Captured with torch 2.11.0+cu130, triton 3.6.0, on cuda (NVIDIA H200), by: harvest extract examples/small_model.py
Notes and names (Inductor's for each new one): at the end of this file.
Check: python g1_backward/add_sum_kernel.py --check  (on a CPU: TRITON_INTERPRET=1 python ...);  time: --bench (GPU)
"""

import torch
import triton
import triton.language as tl


# >>> kernel add_sum_kernel of g1_backward (edit freely: once this text differs from what harvest extracted, --check compares with tolerances)
@triton.jit
def add_sum_kernel(bmm_ptr, out_ptr, BLOCK_ROWS : tl.constexpr, BLOCK_COLS : tl.constexpr):
    n_rows = 8192  # fixed: at this size every block is full, so Inductor left out the bounds mask
    n_cols = 128  # fixed: a loop bound, as Inductor compiled it (a run-time bound compiles to code whose last bits differ)
    row_start = tl.program_id(0) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    col_base = tl.arange(0, BLOCK_COLS)[None, :]
    row_inner = (rows % 512)
    row_outer = rows // 512
    total_acc = tl.full([BLOCK_ROWS, BLOCK_COLS], 0, tl.float32)
    for col_start in tl.range(0, n_cols, BLOCK_COLS):
        cols = col_start + col_base
        col_mask = cols < n_cols
        bmm = tl.load(bmm_ptr + (row_inner + 512*cols + 65536*row_outer), col_mask, eviction_policy='evict_first', other=0.0)
        broadcast = tl.broadcast_to(bmm, [BLOCK_ROWS, BLOCK_COLS])
        add = total_acc + broadcast
        total_acc = tl.where(col_mask, add, total_acc)
    total = tl.sum(total_acc, 1)[:, None]
    tl.store(out_ptr + (rows), total, None)
# <<< kernel


CONFIG = {'BLOCK_COLS': 32, 'BLOCK_ROWS': 16, 'num_warps': 4, 'num_stages': 1}  # recorded in the run; chosen by the only config


def launch(bmm_ptr, out_ptr, config=CONFIG):
    """Launch add_sum_kernel of g1_backward on its arguments (outputs are written in place)."""
    grid = (triton.cdiv(8192, config["BLOCK_ROWS"]),)
    add_sum_kernel[grid](bmm_ptr, out_ptr, **config)


import os  # noqa: E402  (from here on: the run's arguments and the check, through the extraction's harness.py)
import sys  # noqa: E402

sys.dont_write_bytecode = True  # importing harness.py leaves no __pycache__ in the extraction
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Tensor, main  # noqa: E402  (tensors, record, check, bench)

# The arguments of add_sum_kernel in g1_backward, as recorded in the real run: each a Tensor (see harness.py) or a value.
ARGUMENTS = {  # a shape, stride or value changed here is the whole edit
    "bmm_ptr": Tensor((8, 256, 512), (131072, 512, 1), torch.float32),
    "out_ptr": Tensor((1, 512, 16), (8192, 1, 512), torch.float32, zeros=True),
}
OUTPUTS = ['out_ptr']  # what the kernel writes: --check compares each


def reference(bmm_ptr):
    add_4 = bmm_ptr
    view_16 = torch.ops.aten.reshape.default(add_4, [2048, 512])
    sum_3 = torch.ops.aten.sum.dim_IntList(view_16, [0], True)
    # Split reduction, stage 1: the kernel stores sum_3 as 16 partial sums along dim [2];
    # check() sums them over that dim and compares with sum_3 (2048 values per element).
    return {"out_ptr": {"reduce": "sum", "dims": [2], "terms": 2048, "expected": sum_3}}


RECORD = None  # the run's data for this launch (inputs before, outputs after), relative to this file
RECORD_DEVICE = None  # where it was made: outputs match bit for bit there
RECORD_CONFIG = None  # CONFIG as the record was made: with another, the record compares within tolerances
KERNEL_SHA256 = "62fdef3502bc7a7e25ccf9f57ec5f2214122cd10f054d06544e109dbefce9b75"  # of the kernel text as extracted
EXACT_POSSIBLE = True  # False when the result depends on launch order (atomics)
UNCHECKED = {}  # outputs the reference cannot compute, and why (the record still compares them)

if __name__ == "__main__":
    sys.exit(main(globals()))

# Notes on add_sum_kernel of g1_backward:
#     no data recorded for this launch: data not saved: the extraction's cap of 12 MiB is used up (--record-total-
#       cap); --check uses made-up inputs

# Names in add_sum_kernel of g1_backward (this module <- Inductor's output_code.py  [FX node]):
#     add_sum_kernel <- triton_red_fused_add_sum_view_2, bmm_ptr <- in_ptr0 [buf6], out_ptr <- out_ptr0 [buf9]
#     n_rows <- xnumel, n_cols <- r0_numel, BLOCK_ROWS <- XBLOCK, BLOCK_COLS <- R0_BLOCK, row_start <- xoffset
#     rows <- xindex, col_base <- r0_base, row_inner <- x0, row_outer <- x1, total_acc <- _tmp2, col_start <- r0_offset
#     cols <- r0_index, col_mask <- r0_mask, bmm <- tmp0, broadcast <- tmp1, add <- tmp3 [add_4], total <- tmp2 [sum_3]
#     rows <- x3, cols <- r0_2
