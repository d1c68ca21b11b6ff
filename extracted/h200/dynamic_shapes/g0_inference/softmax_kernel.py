"""softmax_kernel: reduction kernel fusing aten.ge, aten.scalar_tensor, aten.neg, aten.where, aten.mul, aten.amax, aten.sub, aten._softmax, aten.relu, aten.add

Source lines:
    examples/dynamic_shapes.py:10 in scaled_softmax: return torch.softmax(x * scale, dim=-1) + torch.relu(x)
From examples/dynamic_shapes.py, graph g0_inference: Inductor's triton_red_fused__softmax_add_amax_ge_mul_neg_relu_scalar_tensor_sub_where_0.
Captured with torch 2.11.0+cu130, triton 3.6.0, on cuda (NVIDIA H200), by: harvest extract examples/dynamic_shapes.py
Names (Inductor's for each new one): at the end of this file.
Check: python g0_inference/softmax_kernel.py --check  (on a CPU: TRITON_INTERPRET=1 python ...);  time: --bench (GPU)
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


# >>> kernel softmax_kernel of g0_inference (edit freely: once this text differs from what harvest extracted, --check compares with tolerances)
# Not specialized on their values, as Inductor compiled it (the same code for every value):
@triton.jit(do_not_specialize=['scalar', 'size_0', 'n_rows', 'n_cols'])
def softmax_kernel(a_ptr, scalar, out_ptr, size_0, n_rows, n_cols, BLOCK_ROWS : tl.constexpr, BLOCK_COLS : tl.constexpr):
    row_start = tl.program_id(0) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = rows < n_rows
    col_base = tl.arange(0, BLOCK_COLS)[None, :]
    scalar_val = scalar
    amax_acc = tl.full([BLOCK_ROWS, BLOCK_COLS], float("-inf"), tl.float32)
    for col_start in tl.range(0, n_cols, BLOCK_COLS):
        cols = col_start + col_base
        col_mask = cols < n_cols
        a = tl.load(a_ptr + (cols + size_0*rows), col_mask & row_mask, eviction_policy='evict_last', other=0.0)
        as_f32 = scalar_val.to(tl.float32)
        zero = tl.full([1, 1], 0.0, tl.float32)
        ge = as_f32 >= zero
        one = tl.full([1, 1], 1.0, tl.float32)
        minus_one = tl.full([1, 1], -1.0, tl.float32)
        where = tl.where(ge, one, minus_one)
        mul = a * where
        broadcast = tl.broadcast_to(mul, [BLOCK_ROWS, BLOCK_COLS])
        maximum = triton_helpers.maximum(amax_acc, broadcast)
        amax_acc = tl.where(col_mask & row_mask, maximum, amax_acc)
    amax = triton_helpers.max2(amax_acc, 1)[:, None]
    total_acc = tl.full([BLOCK_ROWS, BLOCK_COLS], 0, tl.float32)
    for col_start in tl.range(0, n_cols, BLOCK_COLS):
        cols = col_start + col_base
        col_mask = cols < n_cols
        a_1 = tl.load(a_ptr + (cols + size_0*rows), col_mask & row_mask, eviction_policy='evict_last', other=0.0)
        as_f32_1 = scalar_val.to(tl.float32)
        zero_1 = tl.full([1, 1], 0.0, tl.float32)
        ge_1 = as_f32_1 >= zero_1
        one_1 = tl.full([1, 1], 1.0, tl.float32)
        minus_one_1 = tl.full([1, 1], -1.0, tl.float32)
        where_1 = tl.where(ge_1, one_1, minus_one_1)
        mul_1 = a_1 * where_1
        sub = mul_1 - amax
        mul_2 = where_1 * as_f32_1
        mul_3 = sub * mul_2
        exp = libdevice.exp(mul_3)
        broadcast_1 = tl.broadcast_to(exp, [BLOCK_ROWS, BLOCK_COLS])
        add = total_acc + broadcast_1
        total_acc = tl.where(col_mask & row_mask, add, total_acc)
    total = tl.sum(total_acc, 1)[:, None]
    for col_start in tl.range(0, n_cols, BLOCK_COLS):
        cols = col_start + col_base
        col_mask = cols < n_cols
        a_2 = tl.load(a_ptr + (cols + size_0*rows), col_mask & row_mask, eviction_policy='evict_first', other=0.0)
        as_f32_2 = scalar_val.to(tl.float32)
        zero_2 = tl.full([1, 1], 0.0, tl.float32)
        ge_2 = as_f32_2 >= zero_2
        one_2 = tl.full([1, 1], 1.0, tl.float32)
        minus_one_2 = tl.full([1, 1], -1.0, tl.float32)
        where_2 = tl.where(ge_2, one_2, minus_one_2)
        mul_4 = a_2 * where_2
        sub_1 = mul_4 - amax
        mul_5 = where_2 * as_f32_2
        mul_6 = sub_1 * mul_5
        exp_1 = libdevice.exp(mul_6)
        div = (exp_1 / total)
        zero_3 = tl.full([1, 1], 0, tl.int32)
        maximum_1 = triton_helpers.maximum(zero_3, a_2)
        add_1 = div + maximum_1
        tl.store(out_ptr + (cols + size_0*rows), add_1, col_mask & row_mask)
# <<< kernel


CONFIG = {'BLOCK_COLS': 128, 'BLOCK_ROWS': 2, 'num_warps': 2, 'num_stages': 1}  # recorded in the run; chosen by the only config


def launch(a_ptr, scalar, out_ptr, size_0, n_rows, n_cols, config=CONFIG):
    """Launch softmax_kernel of g0_inference on its arguments (outputs are written in place)."""
    grid = (triton.cdiv(n_rows, config["BLOCK_ROWS"]),)
    softmax_kernel[grid](a_ptr, scalar, out_ptr, size_0, n_rows, n_cols, **config)


import os  # noqa: E402  (from here on: the run's arguments and the check, through the extraction's harness.py)
import sys  # noqa: E402

sys.dont_write_bytecode = True  # importing harness.py leaves no __pycache__ in the extraction
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Tensor, main, triton_helpers  # noqa: E402  (the kernel's helpers are harvest's)

# The arguments of softmax_kernel in g0_inference, as recorded in the real run (its first of 2 launches in this graph, 2 distinct): each a Tensor (see harness.py) or a value.
ARGUMENTS = {  # a shape, stride or value changed here is the whole edit
    "a_ptr": Tensor((64, 96), (96, 1), torch.float32),
    "scalar": 0.5,
    "out_ptr": Tensor((64, 96), (96, 1), torch.float32, zeros=True),
    "size_0": 96,
    "n_rows": 64,
    "n_cols": 96,
}
OUTPUTS = ['out_ptr']  # what the kernel writes: --check compares each


def reference(a_ptr, scalar):
    arg2_1 = a_ptr
    arg3_1 = torch.as_tensor(scalar, dtype=torch.float64)
    device = a_ptr.device
    convert_element_type_default_1 = torch.ops.prims.convert_element_type.default(arg3_1, torch.float32)
    ge_scalar = torch.ops.aten.ge.Scalar(convert_element_type_default_1, 0)
    scalar_tensor_default = torch.ops.aten.scalar_tensor.default(1, dtype=torch.float32, device=device, pin_memory=False)
    neg_default = torch.ops.aten.neg.default(scalar_tensor_default)
    where_self = torch.ops.aten.where.self(ge_scalar, scalar_tensor_default, neg_default)
    mul_tensor_1 = torch.ops.aten.mul.Tensor(arg2_1, where_self)
    amax_default = torch.ops.aten.amax.default(mul_tensor_1, [-1], True)
    sub_tensor = torch.ops.aten.sub.Tensor(mul_tensor_1, amax_default)
    mul_tensor_2 = torch.ops.aten.mul.Tensor(where_self, convert_element_type_default_1)
    mul_tensor_3 = torch.ops.aten.mul.Tensor(sub_tensor, mul_tensor_2)
    exp = torch.ops.aten.exp.default(mul_tensor_3)
    sum_1 = torch.ops.aten.sum.dim_IntList(exp, [-1], True)
    div = torch.ops.aten.div.Tensor(exp, sum_1)
    relu = torch.ops.aten.relu.default(arg2_1)
    add_9 = torch.ops.aten.add.Tensor(div, relu)
    return {"out_ptr": add_9}


RECORD = '../raw/g0_inference/records/triton_red_fused__softmax_add_amax_ge_mul_neg_relu_scalar_tensor_sub_where_0.pt'  # the run's data for this launch (inputs before, outputs after), relative to this file
RECORD_DEVICE = 'cuda:NVIDIA H200'  # where it was made: outputs match bit for bit there
RECORD_CONFIG = {'BLOCK_COLS': 128, 'BLOCK_ROWS': 2, 'num_warps': 2, 'num_stages': 1}  # CONFIG as the record was made: with another, the record compares within tolerances
KERNEL_SHA256 = "40f76f553b5a3251b8245bc9aefc28e2ef87c055e638d13788aab6a0d477e51a"  # of the kernel text as extracted
EXACT_POSSIBLE = True  # False when the result depends on launch order (atomics)
UNCHECKED = {}  # outputs the reference cannot compute, and why (the record still compares them)

if __name__ == "__main__":
    sys.exit(main(globals()))

# Names in softmax_kernel of g0_inference (this module <- Inductor's output_code.py  [FX node]):
#     softmax_kernel <- triton_red_fused__softmax_add_amax_ge_mul_neg_relu_scalar_tensor_sub_where_0
#     a_ptr <- in_ptr0 [arg2_1], scalar <- in_ptr1 [arg3_1.item()], out_ptr <- out_ptr2 [buf2], size_0 <- ks0
#     n_rows <- xnumel, n_cols <- r0_numel, BLOCK_ROWS <- XBLOCK, BLOCK_COLS <- R0_BLOCK, row_start <- xoffset
#     rows <- xindex, row_mask <- xmask, col_base <- r0_base, scalar_val <- tmp1, amax_acc <- _tmp10
#     col_start <- r0_offset, cols <- r0_index, col_mask <- r0_mask, a <- tmp0, as_f32 <- tmp2, zero <- tmp3, ge <- tmp4
#     one <- tmp5, minus_one <- tmp6, where <- tmp7, mul <- tmp8, broadcast <- tmp9, maximum <- tmp11
#     amax <- tmp10 [amax_default], total_acc <- _tmp25, a_1 <- tmp12, as_f32_1 <- tmp13, zero_1 <- tmp14, ge_1 <- tmp15
#     one_1 <- tmp16, minus_one_1 <- tmp17, where_1 <- tmp18, mul_1 <- tmp19, sub <- tmp20, mul_2 <- tmp21, mul_3 <- tmp22
#     exp <- tmp23, broadcast_1 <- tmp24, add <- tmp26, total <- tmp25 [sum_1], a_2 <- tmp27, as_f32_2 <- tmp28
#     zero_2 <- tmp29, ge_2 <- tmp30, one_2 <- tmp31, minus_one_2 <- tmp32, where_2 <- tmp33, mul_4 <- tmp34
#     sub_1 <- tmp35, mul_5 <- tmp36, mul_6 <- tmp37, exp_1 <- tmp38, div <- tmp39 [div], zero_3 <- tmp40
#     maximum_1 <- tmp41, add_1 <- tmp42, rows <- x0, cols <- r0_1
