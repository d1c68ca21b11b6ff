"""gelu_bwd_sum_kernel: reduction kernel fusing aten.view, aten.gelu, aten.gelu_backward, aten.sum

Source lines:
    examples/small_model.py:23 in forward: h = self.up(h)
    examples/small_model.py:24 in forward: h = torch.nn.functional.gelu(h)
    examples/small_model.py:25 in forward: h = self.down(h)
From examples/small_model.py, graph g1_backward: Inductor's triton_red_fused_gelu_gelu_backward_sum_view_5.
Captured with torch 2.11.0+cu130, triton 3.6.0, on cuda (NVIDIA H200), by: harvest extract examples/small_model.py
Notes and names (Inductor's for each new one): at the end of this file.
Check: python g1_backward/gelu_bwd_sum_kernel.py --check  (on a CPU: TRITON_INTERPRET=1 python ...);  time: --bench (GPU)
"""

import torch
import triton
import triton.language as tl


# >>> kernel gelu_bwd_sum_kernel of g1_backward (edit freely: once this text differs from what harvest extracted, --check compares with tolerances)
@triton.jit
def gelu_bwd_sum_kernel(mm_ptr, out_ptr, BLOCK_ROWS : tl.constexpr, BLOCK_COLS : tl.constexpr):
    n_rows = 32768  # fixed: at this size every block is full, so Inductor left out the bounds mask
    n_cols = 128  # fixed: a loop bound, as Inductor compiled it (a run-time bound compiles to code whose last bits differ)
    row_start = tl.program_id(0) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    col_base = tl.arange(0, BLOCK_COLS)[None, :]
    row_inner = (rows % 2048)
    row_outer = rows // 2048
    total_acc = tl.full([BLOCK_ROWS, BLOCK_COLS], 0, tl.float32)
    for col_start in tl.range(0, n_cols, BLOCK_COLS):
        cols = col_start + col_base
        col_mask = cols < n_cols
        mm = tl.load(mm_ptr + (row_inner + 2048*cols + 262144*row_outer), col_mask, eviction_policy='evict_first', other=0.0)
        broadcast = tl.broadcast_to(mm, [BLOCK_ROWS, BLOCK_COLS])
        add = total_acc + broadcast
        total_acc = tl.where(col_mask, add, total_acc)
    total = tl.sum(total_acc, 1)[:, None]
    tl.store(out_ptr + (rows), total, None)
# <<< kernel


CONFIG = {'BLOCK_COLS': 32, 'BLOCK_ROWS': 16, 'num_warps': 4, 'num_stages': 1}  # recorded in the run; chosen by the only config


def launch(mm_ptr, out_ptr, config=CONFIG):
    """Launch gelu_bwd_sum_kernel of g1_backward on its arguments (outputs are written in place)."""
    grid = (triton.cdiv(32768, config["BLOCK_ROWS"]),)
    gelu_bwd_sum_kernel[grid](mm_ptr, out_ptr, **config)


import os  # noqa: E402  (from here on: the run's arguments and the check, through the extraction's harness.py)
import sys  # noqa: E402

sys.dont_write_bytecode = True  # importing harness.py leaves no __pycache__ in the extraction
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Tensor, main  # noqa: E402  (tensors, record, check, bench)

# The arguments of gelu_bwd_sum_kernel in g1_backward, as recorded in the real run: each a Tensor (see harness.py) or a value.
ARGUMENTS = {  # a shape, stride or value changed here is the whole edit
    "mm_ptr": Tensor((8, 256, 2048), (524288, 2048, 1), torch.float32),
    "out_ptr": Tensor((1, 2048, 16), (32768, 1, 2048), torch.float32, zeros=True),
}
OUTPUTS = ['out_ptr']  # what the kernel writes: --check compares each


def reference(mm_ptr):
    mul_14 = mm_ptr
    view_19 = torch.ops.aten.reshape.default(mul_14, [2048, 2048])
    sum_4 = torch.ops.aten.sum.dim_IntList(view_19, [0], True)
    # Split reduction, stage 1: the kernel stores sum_4 as 16 partial sums along dim [2];
    # check() sums them over that dim and compares with sum_4 (2048 values per element).
    return {"out_ptr": {"reduce": "sum", "dims": [2], "terms": 2048, "expected": sum_4}}


RECORD = None  # the run's data for this launch (inputs before, outputs after), relative to this file
RECORD_DEVICE = None  # where it was made: outputs match bit for bit there
RECORD_CONFIG = None  # CONFIG as the record was made: with another, the record compares within tolerances
KERNEL_SHA256 = "ec4bccf25d56d980f48fd010ef6c4390c7287d1cd1eed8ea48217de91c0093b1"  # of the kernel text as extracted
EXACT_POSSIBLE = True  # False when the result depends on launch order (atomics)
UNCHECKED = {}  # outputs the reference cannot compute, and why (the record still compares them)

if __name__ == "__main__":
    sys.exit(main(globals()))

# Notes on gelu_bwd_sum_kernel of g1_backward:
#     no data recorded for this launch: data not saved: the extraction's cap of 12 MiB is used up (--record-total-
#       cap); --check uses made-up inputs

# Names in gelu_bwd_sum_kernel of g1_backward (this module <- Inductor's output_code.py  [FX node]):
#     gelu_bwd_sum_kernel <- triton_red_fused_gelu_gelu_backward_sum_view_5, mm_ptr <- in_ptr0 [buf11]
#     out_ptr <- out_ptr0 [buf14], n_rows <- xnumel, n_cols <- r0_numel, BLOCK_ROWS <- XBLOCK, BLOCK_COLS <- R0_BLOCK
#     row_start <- xoffset, rows <- xindex, col_base <- r0_base, row_inner <- x0, row_outer <- x1, total_acc <- _tmp2
#     col_start <- r0_offset, cols <- r0_index, col_mask <- r0_mask, mm <- tmp0, broadcast <- tmp1, add <- tmp3
#     total <- tmp2 [sum_4], rows <- x3, cols <- r0_2
