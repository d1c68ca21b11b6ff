"""layer_norm_bwd_kernel: reduction kernel fusing aten.transpose, aten.add, aten.view, aten.native_layer_norm_backward, aten.native_layer_norm

Source lines:
    examples/small_model.py:22 in forward: h = self.ln(x)
    examples/small_model.py:23 in forward: h = self.up(h)
    examples/small_model.py:26 in forward: scores = (h @ x.transpose(-2, -1)) * self.scale
From examples/small_model.py, graph g1_backward: Inductor's triton_red_fused_add_native_layer_norm_native_layer_norm_backward_transpose_view_7.
Captured with torch 2.11.0+cu130, triton 3.6.0, on cuda (NVIDIA H200), by: harvest extract examples/small_model.py
Notes and names (Inductor's for each new one): at the end of this file.
Check: python g1_backward/layer_norm_bwd_kernel.py --check  (on a CPU: TRITON_INTERPRET=1 python ...);  time: --bench (GPU)
"""

import torch
import triton
import triton.language as tl


# >>> kernel layer_norm_bwd_kernel of g1_backward (edit freely: once this text differs from what harvest extracted, --check compares with tolerances)
@triton.jit
def layer_norm_bwd_kernel(mm_ptr, weight_ptr, a_ptr, getitem_1_ptr, rsqrt_ptr, grad_ptr, bmm_ptr, out_ptr, n_rows, BLOCK_ROWS : tl.constexpr, BLOCK_COLS : tl.constexpr):
    n_cols = 512  # fixed: a loop bound, as Inductor compiled it (a run-time bound compiles to code whose last bits differ)
    row_start = tl.program_id(0) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = rows < n_rows
    col_base = tl.arange(0, BLOCK_COLS)[None, :]
    total_acc = tl.full([BLOCK_ROWS, BLOCK_COLS], 0, tl.float32)
    getitem_1 = tl.load(getitem_1_ptr + (rows), row_mask, eviction_policy='evict_last')
    rsqrt = tl.load(rsqrt_ptr + (rows), row_mask, eviction_policy='evict_last')
    total_acc_1 = tl.full([BLOCK_ROWS, BLOCK_COLS], 0, tl.float32)
    for col_start in tl.range(0, n_cols, BLOCK_COLS):
        cols = col_start + col_base
        col_mask = cols < n_cols
        mm = tl.load(mm_ptr + (cols + 512*rows), col_mask & row_mask, eviction_policy='evict_last', other=0.0)
        weight = tl.load(weight_ptr + (cols), col_mask, eviction_policy='evict_last', other=0.0)
        a = tl.load(a_ptr + (cols + 512*rows), col_mask & row_mask, eviction_policy='evict_last', other=0.0)
        mul = mm * weight
        broadcast = tl.broadcast_to(mul, [BLOCK_ROWS, BLOCK_COLS])
        add = total_acc + broadcast
        total_acc = tl.where(col_mask & row_mask, add, total_acc)
        sub = a - getitem_1
        mul_1 = sub * rsqrt
        square = mul * mul_1
        broadcast_1 = tl.broadcast_to(square, [BLOCK_ROWS, BLOCK_COLS])
        add_1 = total_acc_1 + broadcast_1
        total_acc_1 = tl.where(col_mask & row_mask, add_1, total_acc_1)
    total = tl.sum(total_acc, 1)[:, None]
    total_1 = tl.sum(total_acc_1, 1)[:, None]
    row_inner = (rows % 256)
    row_outer = rows // 256
    for col_start in tl.range(0, n_cols, BLOCK_COLS):
        cols = col_start + col_base
        col_mask = cols < n_cols
        grad = tl.load(grad_ptr + (cols + 512*rows), col_mask & row_mask, eviction_policy='evict_first', other=0.0)
        bmm = tl.load(bmm_ptr + (row_inner + 256*cols + 131072*row_outer), col_mask & row_mask, eviction_policy='evict_first', other=0.0)
        mm_1 = tl.load(mm_ptr + (cols + 512*rows), col_mask & row_mask, eviction_policy='evict_first', other=0.0)
        weight_1 = tl.load(weight_ptr + (cols), col_mask, eviction_policy='evict_last', other=0.0)
        a_1 = tl.load(a_ptr + (cols + 512*rows), col_mask & row_mask, eviction_policy='evict_first', other=0.0)
        add_2 = grad + bmm
        const = tl.full([1, 1], 0.001953125, tl.float32)
        mul_2 = rsqrt * const
        mul_3 = mm_1 * weight_1
        const_1 = tl.full([1, 1], 512.0, tl.float32)
        mul_4 = mul_3 * const_1
        sub_1 = mul_4 - total
        sub_2 = a_1 - getitem_1
        mul_5 = sub_2 * rsqrt
        mul_6 = mul_5 * total_1
        sub_3 = sub_1 - mul_6
        mul_7 = mul_2 * sub_3
        add_3 = add_2 + mul_7
        tl.store(out_ptr + (cols + 512*rows), add_3, col_mask & row_mask)
# <<< kernel


CONFIG = {'BLOCK_COLS': 512, 'BLOCK_ROWS': 8, 'num_warps': 16, 'num_stages': 1}  # recorded in the run; chosen by the only config


def launch(mm_ptr, weight_ptr, a_ptr, getitem_1_ptr, rsqrt_ptr, grad_ptr, bmm_ptr, out_ptr, n_rows, config=CONFIG):
    """Launch layer_norm_bwd_kernel of g1_backward on its arguments (outputs are written in place)."""
    grid = (triton.cdiv(n_rows, config["BLOCK_ROWS"]),)
    layer_norm_bwd_kernel[grid](mm_ptr, weight_ptr, a_ptr, getitem_1_ptr, rsqrt_ptr, grad_ptr, bmm_ptr, out_ptr, n_rows, **config)


import os  # noqa: E402  (from here on: the run's arguments and the check, through the extraction's harness.py)
import sys  # noqa: E402

sys.dont_write_bytecode = True  # importing harness.py leaves no __pycache__ in the extraction
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Tensor, main  # noqa: E402  (tensors, record, check, bench)

# The arguments of layer_norm_bwd_kernel in g1_backward, as recorded in the real run: each a Tensor (see harness.py) or a value.
ARGUMENTS = {  # a shape, stride or value changed here is the whole edit
    "mm_ptr": Tensor((2048, 512), (512, 1), torch.float32),
    "weight_ptr": Tensor((512,), (1,), torch.float32),
    "a_ptr": Tensor((8, 256, 512), (131072, 512, 1), torch.float32),
    "getitem_1_ptr": Tensor((8, 256, 1), (256, 1, 1), torch.float32),
    "rsqrt_ptr": Tensor((8, 256, 1), (256, 1, 1), torch.float32),
    "grad_ptr": Tensor((8, 256, 512), (131072, 512, 1), torch.float32),
    "bmm_ptr": Tensor((8, 512, 256), (131072, 256, 1), torch.float32),
    "out_ptr": Tensor((8, 256, 512), (131072, 512, 1), torch.float32, zeros=True),
    "n_rows": 2048,
}
OUTPUTS = ['out_ptr']  # what the kernel writes: --check compares each


def reference(mm_ptr, weight_ptr, a_ptr, getitem_1_ptr, rsqrt_ptr, grad_ptr, bmm_ptr):
    mm_2 = mm_ptr
    primals_1 = weight_ptr
    primals_3 = a_ptr
    getitem_1 = getitem_1_ptr
    rsqrt = rsqrt_ptr
    tangents_1 = grad_ptr
    bmm_4 = bmm_ptr
    permute_7 = torch.ops.aten.permute.default(bmm_4, [0, 2, 1])
    add_5 = torch.ops.aten.add.Tensor(tangents_1, permute_7)
    view_21 = torch.ops.aten.reshape.default(mm_2, [8, 256, 512])
    mul_16 = torch.ops.aten.mul.Tensor(view_21, primals_1)
    mul_17 = torch.ops.aten.mul.Tensor(mul_16, 512)
    sum_5 = torch.ops.aten.sum.dim_IntList(mul_16, [2], True)
    sub = torch.ops.aten.sub.Tensor(primals_3, getitem_1)
    mul = torch.ops.aten.mul.Tensor(sub, rsqrt)
    mul_18 = torch.ops.aten.mul.Tensor(mul_16, mul)
    sum_6 = torch.ops.aten.sum.dim_IntList(mul_18, [2], True)
    mul_19 = torch.ops.aten.mul.Tensor(mul, sum_6)
    sub_3 = torch.ops.aten.sub.Tensor(mul_17, sum_5)
    sub_4 = torch.ops.aten.sub.Tensor(sub_3, mul_19)
    div_1 = torch.ops.aten.div.Tensor(rsqrt, 512)
    mul_20 = torch.ops.aten.mul.Tensor(div_1, sub_4)
    add_8 = torch.ops.aten.add.Tensor(add_5, mul_20)
    return {"out_ptr": {"reduce": "through", "dims": [2], "terms": 512, "expected": add_8}}


RECORD = None  # the run's data for this launch (inputs before, outputs after), relative to this file
RECORD_DEVICE = None  # where it was made: outputs match bit for bit there
RECORD_CONFIG = None  # CONFIG as the record was made: with another, the record compares within tolerances
KERNEL_SHA256 = "06b72e558b8e451bad6f4e9eaa693ccec78aa420047382d0e3c1d4e80067ef69"  # of the kernel text as extracted
EXACT_POSSIBLE = True  # False when the result depends on launch order (atomics)
UNCHECKED = {}  # outputs the reference cannot compute, and why (the record still compares them)

if __name__ == "__main__":
    sys.exit(main(globals()))

# Notes on layer_norm_bwd_kernel of g1_backward:
#     no data recorded for this launch: data not saved: the extraction's cap of 12 MiB is used up (--record-total-
#       cap); --check uses made-up inputs

# Names in layer_norm_bwd_kernel of g1_backward (this module <- Inductor's output_code.py  [FX node]):
#     layer_norm_bwd_kernel <- triton_red_fused_add_native_layer_norm_native_layer_norm_backward_transpose_view_7
#     mm_ptr <- in_ptr0 [buf12], weight_ptr <- in_ptr1 [primals_1], a_ptr <- in_ptr2 [primals_3]
#     getitem_1_ptr <- in_ptr3 [getitem_1], rsqrt_ptr <- in_ptr4 [rsqrt], grad_ptr <- in_ptr5 [tangents_1]
#     bmm_ptr <- in_ptr6 [buf4], out_ptr <- out_ptr2 [buf22], n_rows <- xnumel, n_cols <- r0_numel, BLOCK_ROWS <- XBLOCK
#     BLOCK_COLS <- R0_BLOCK, row_start <- xoffset, rows <- xindex, row_mask <- xmask, col_base <- r0_base
#     total_acc <- _tmp4, getitem_1 <- tmp7, rsqrt <- tmp9, total_acc_1 <- _tmp13, col_start <- r0_offset
#     cols <- r0_index, col_mask <- r0_mask, mm <- tmp0, weight <- tmp1, a <- tmp6, mul <- tmp2, broadcast <- tmp3
#     add <- tmp5, sub <- tmp8, mul_1 <- tmp10, square <- tmp11, broadcast_1 <- tmp12, add_1 <- tmp14, total <- tmp4
#     total_1 <- tmp13, row_inner <- x2, row_outer <- x3, grad <- tmp15, bmm <- tmp16, mm_1 <- tmp20, weight_1 <- tmp21
#     a_1 <- tmp26, add_2 <- tmp17, const <- tmp18, mul_2 <- tmp19, mul_3 <- tmp22, const_1 <- tmp23, mul_4 <- tmp24
#     sub_1 <- tmp25, sub_2 <- tmp27, mul_5 <- tmp28, mul_6 <- tmp29, sub_3 <- tmp30, mul_7 <- tmp31, add_3 <- tmp32
#     rows <- x0, cols <- r0_1
