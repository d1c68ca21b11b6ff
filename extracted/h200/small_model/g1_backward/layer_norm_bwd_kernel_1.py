"""layer_norm_bwd_kernel_1: reduction kernel fusing aten.view, aten.native_layer_norm, aten.native_layer_norm_backward

Source lines:
    examples/small_model.py:22 in forward: h = self.ln(x)
    examples/small_model.py:23 in forward: h = self.up(h)
From examples/small_model.py, graph g1_backward: Inductor's triton_red_fused_native_layer_norm_native_layer_norm_backward_view_8.
Captured with torch 2.11.0+cu130, triton 3.6.0, on cuda (NVIDIA H200), by: harvest extract examples/small_model.py
Notes and names (Inductor's for each new one): at the end of this file.
Check: python g1_backward/layer_norm_bwd_kernel_1.py --check  (on a CPU: TRITON_INTERPRET=1 python ...);  time: --bench (GPU)
"""

import torch
import triton
import triton.language as tl


# >>> kernel layer_norm_bwd_kernel_1 of g1_backward (edit freely: once this text differs from what harvest extracted, --check compares with tolerances)
@triton.jit
def layer_norm_bwd_kernel_1(mm_ptr, a_ptr, getitem_1_ptr, rsqrt_ptr, total_ptr, total_1_ptr, BLOCK_ROWS : tl.constexpr, BLOCK_COLS : tl.constexpr):
    n_rows = 8192  # fixed: at this size every block is full, so Inductor left out the bounds mask
    n_cols = 128  # fixed: a loop bound, as Inductor compiled it (a run-time bound compiles to code whose last bits differ)
    row_start = tl.program_id(0) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    col_base = tl.arange(0, BLOCK_COLS)[None, :]
    row_inner = (rows % 512)
    row_outer = rows // 512
    total_acc = tl.full([BLOCK_ROWS, BLOCK_COLS], 0, tl.float32)
    total_acc_1 = tl.full([BLOCK_ROWS, BLOCK_COLS], 0, tl.float32)
    for col_start in tl.range(0, n_cols, BLOCK_COLS):
        cols = col_start + col_base
        col_mask = cols < n_cols
        mm = tl.load(mm_ptr + (row_inner + 512*cols + 65536*row_outer), col_mask, eviction_policy='evict_first', other=0.0)
        a = tl.load(a_ptr + (row_inner + 512*cols + 65536*row_outer), col_mask, eviction_policy='evict_first', other=0.0)
        getitem_1 = tl.load(getitem_1_ptr + (cols + 128*row_outer), col_mask, eviction_policy='evict_last', other=0.0)
        rsqrt = tl.load(rsqrt_ptr + (cols + 128*row_outer), col_mask, eviction_policy='evict_last', other=0.0)
        sub = a - getitem_1
        mul = sub * rsqrt
        mul_1 = mm * mul
        broadcast = tl.broadcast_to(mul_1, [BLOCK_ROWS, BLOCK_COLS])
        add = total_acc + broadcast
        total_acc = tl.where(col_mask, add, total_acc)
        broadcast_1 = tl.broadcast_to(mm, [BLOCK_ROWS, BLOCK_COLS])
        add_1 = total_acc_1 + broadcast_1
        total_acc_1 = tl.where(col_mask, add_1, total_acc_1)
    total = tl.sum(total_acc, 1)[:, None]
    total_1 = tl.sum(total_acc_1, 1)[:, None]
    tl.store(total_ptr + (rows), total, None)
    tl.store(total_1_ptr + (rows), total_1, None)
# <<< kernel


CONFIG = {'BLOCK_COLS': 32, 'BLOCK_ROWS': 16, 'num_warps': 4, 'num_stages': 1}  # recorded in the run; chosen by the only config


def launch(mm_ptr, a_ptr, getitem_1_ptr, rsqrt_ptr, total_ptr, total_1_ptr, config=CONFIG):
    """Launch layer_norm_bwd_kernel_1 of g1_backward on its arguments (outputs are written in place)."""
    grid = (triton.cdiv(8192, config["BLOCK_ROWS"]),)
    layer_norm_bwd_kernel_1[grid](mm_ptr, a_ptr, getitem_1_ptr, rsqrt_ptr, total_ptr, total_1_ptr, **config)


import os  # noqa: E402  (from here on: the run's arguments and the check, through the extraction's harness.py)
import sys  # noqa: E402

sys.dont_write_bytecode = True  # importing harness.py leaves no __pycache__ in the extraction
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Tensor, main  # noqa: E402  (tensors, record, check, bench)

# The arguments of layer_norm_bwd_kernel_1 in g1_backward, as recorded in the real run: each a Tensor (see harness.py) or a value.
ARGUMENTS = {  # a shape, stride or value changed here is the whole edit
    "mm_ptr": Tensor((2048, 512), (512, 1), torch.float32),
    "a_ptr": Tensor((8, 256, 512), (131072, 512, 1), torch.float32),
    "getitem_1_ptr": Tensor((8, 256, 1), (256, 1, 1), torch.float32),
    "rsqrt_ptr": Tensor((8, 256, 1), (256, 1, 1), torch.float32),
    "total_ptr": Tensor((512, 16), (1, 512), torch.float32, zeros=True),
    "total_1_ptr": Tensor((512, 16), (1, 512), torch.float32, zeros=True),
}
OUTPUTS = ['total_ptr', 'total_1_ptr']  # what the kernel writes: --check compares each


def reference(mm_ptr, a_ptr, getitem_1_ptr, rsqrt_ptr):
    mm_2 = mm_ptr
    primals_3 = a_ptr
    getitem_1 = getitem_1_ptr
    rsqrt = rsqrt_ptr
    view_21 = torch.ops.aten.reshape.default(mm_2, [8, 256, 512])
    sub = torch.ops.aten.sub.Tensor(primals_3, getitem_1)
    mul = torch.ops.aten.mul.Tensor(sub, rsqrt)
    mul_21 = torch.ops.aten.mul.Tensor(view_21, mul)
    sum_7 = torch.ops.aten.sum.dim_IntList(mul_21, [0, 1])
    sum_8 = torch.ops.aten.sum.dim_IntList(view_21, [0, 1])
    # Split reduction, stage 1: the kernel stores sum_7 as 16 partial sums along dim [1];
    # check() sums them over that dim and compares with sum_7 (2048 values per element).
    # Split reduction, stage 1: the kernel stores sum_8 as 16 partial sums along dim [1];
    # check() sums them over that dim and compares with sum_8 (2048 values per element).
    return {"total_ptr": {"reduce": "sum", "dims": [1], "terms": 2048, "expected": sum_7}, "total_1_ptr": {"reduce": "sum", "dims": [1], "terms": 2048, "expected": sum_8}}


RECORD = None  # the run's data for this launch (inputs before, outputs after), relative to this file
RECORD_DEVICE = None  # where it was made: outputs match bit for bit there
RECORD_CONFIG = None  # CONFIG as the record was made: with another, the record compares within tolerances
KERNEL_SHA256 = "7b67e03bb07c96d663656330263b5cb3e07d83a436b8a58e547a4a422be5b5e4"  # of the kernel text as extracted
EXACT_POSSIBLE = True  # False when the result depends on launch order (atomics)
UNCHECKED = {}  # outputs the reference cannot compute, and why (the record still compares them)

if __name__ == "__main__":
    sys.exit(main(globals()))

# Notes on layer_norm_bwd_kernel_1 of g1_backward:
#     bound out_ptr0, out_ptr1 to partials of sum_7, sum_8 by store order (look-alike split reductions)
#     no data recorded for this launch: data not saved: the extraction's cap of 12 MiB is used up (--record-total-
#       cap); --check uses made-up inputs

# Names in layer_norm_bwd_kernel_1 of g1_backward (this module <- Inductor's output_code.py  [FX node]):
#     layer_norm_bwd_kernel_1 <- triton_red_fused_native_layer_norm_native_layer_norm_backward_view_8
#     mm_ptr <- in_ptr0 [buf12], a_ptr <- in_ptr1 [primals_3], getitem_1_ptr <- in_ptr2 [getitem_1]
#     rsqrt_ptr <- in_ptr3 [rsqrt], total_ptr <- out_ptr0 [buf18], total_1_ptr <- out_ptr1 [buf20], n_rows <- xnumel
#     n_cols <- r0_numel, BLOCK_ROWS <- XBLOCK, BLOCK_COLS <- R0_BLOCK, row_start <- xoffset, rows <- xindex
#     col_base <- r0_base, row_inner <- x0, row_outer <- x1, total_acc <- _tmp8, total_acc_1 <- _tmp11
#     col_start <- r0_offset, cols <- r0_index, col_mask <- r0_mask, mm <- tmp0, a <- tmp1, getitem_1 <- tmp2
#     rsqrt <- tmp4, sub <- tmp3 [sub], mul <- tmp5, mul_1 <- tmp6, broadcast <- tmp7, add <- tmp9, broadcast_1 <- tmp10
#     add_1 <- tmp12, total <- tmp8, total_1 <- tmp11, rows <- x3, cols <- r0_2
