"""layer_norm_fwd_kernel: persistent_reduction kernel fusing aten.native_layer_norm

Source lines:
    examples/small_model.py:22 in forward: h = self.ln(x)
From examples/small_model.py, graph g0_forward: Inductor's triton_per_fused_native_layer_norm_0.
Captured with torch 2.11.0+cu130, triton 3.6.0, on cuda (NVIDIA H200), by: harvest extract examples/small_model.py
Notes and names (Inductor's for each new one): at the end of this file.
Check: python g0_forward/layer_norm_fwd_kernel.py --check  (on a CPU: TRITON_INTERPRET=1 python ...);  time: --bench (GPU)
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


# >>> kernel layer_norm_fwd_kernel of g0_forward (edit freely: once this text differs from what harvest extracted, --check compares with tolerances)
@triton.jit
def layer_norm_fwd_kernel(rstd_ptr, a_ptr, weight_ptr, bias_ptr, mean_ptr, out_ptr, n_rows, BLOCK_ROWS : tl.constexpr):
    n_cols = 512  # fixed: the whole row is one block (BLOCK_COLS = 512), as Inductor compiled it
    BLOCK_COLS: tl.constexpr = 512
    row_start = tl.program_id(0) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = rows < n_rows
    cols = tl.arange(0, BLOCK_COLS)[None, :]
    a = tl.load(a_ptr + (cols + 512*rows), row_mask, other=0.0)
    weight = tl.load(weight_ptr + (cols), None, eviction_policy='evict_last')
    bias = tl.load(bias_ptr + (cols), None, eviction_policy='evict_last')
    broadcast = tl.broadcast_to(a, [BLOCK_ROWS, BLOCK_COLS])
    masked = tl.where(row_mask, broadcast, 0)
    broadcast_1 = tl.broadcast_to(broadcast, [BLOCK_ROWS, BLOCK_COLS])
    masked_1 = tl.where(row_mask, broadcast_1, 0)
    total = tl.sum(masked_1, 1)[:, None].to(tl.float32)
    const = tl.full([1, 1], 512, tl.int32)
    as_f32 = const.to(tl.float32)
    mean = (total / as_f32)
    centered = broadcast - mean
    square = centered * centered
    broadcast_2 = tl.broadcast_to(square, [BLOCK_ROWS, BLOCK_COLS])
    masked_2 = tl.where(row_mask, broadcast_2, 0)
    total_1 = tl.sum(masked_2, 1)[:, None].to(tl.float32)
    const_1 = tl.full([1, 1], 512.0, tl.float32)
    var = (total_1 / const_1)
    const_2 = tl.full([1, 1], 1e-05, tl.float32)
    var_eps = var + const_2
    rstd = libdevice.rsqrt(var_eps)
    centered_1 = a - mean
    mul = centered_1 * rstd
    mul_1 = mul * weight
    add = mul_1 + bias
    tl.debug_barrier()
    tl.store(rstd_ptr + (rows), rstd, row_mask)
    tl.store(out_ptr + (cols + 512*rows), add, row_mask)
    tl.store(mean_ptr + (rows), mean, row_mask)
# <<< kernel


CONFIG = {'BLOCK_ROWS': 2, 'num_warps': 1, 'num_stages': 1}  # recorded in the run; chosen by the only config


def launch(rstd_ptr, a_ptr, weight_ptr, bias_ptr, mean_ptr, out_ptr, n_rows, config=CONFIG):
    """Launch layer_norm_fwd_kernel of g0_forward on its arguments (outputs are written in place)."""
    grid = (triton.cdiv(n_rows, config["BLOCK_ROWS"]),)
    layer_norm_fwd_kernel[grid](rstd_ptr, a_ptr, weight_ptr, bias_ptr, mean_ptr, out_ptr, n_rows, **config)


import os  # noqa: E402  (from here on: the run's arguments and the check, through the extraction's harness.py)
import sys  # noqa: E402

sys.dont_write_bytecode = True  # importing harness.py leaves no __pycache__ in the extraction
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Tensor, main  # noqa: E402  (tensors, record, check, bench)

# The arguments of layer_norm_fwd_kernel in g0_forward, as recorded in the real run: each a Tensor (see harness.py) or a value.
ARGUMENTS = {  # a shape, stride or value changed here is the whole edit
    "rstd_ptr": Tensor((8, 256, 1), (256, 1, 1), torch.float32, zeros=True),
    "a_ptr": Tensor((8, 256, 512), (131072, 512, 1), torch.float32),
    "weight_ptr": Tensor((512,), (1,), torch.float32),
    "bias_ptr": Tensor((512,), (1,), torch.float32),
    "mean_ptr": Tensor((8, 256, 1), (256, 1, 1), torch.float32, zeros=True),
    "out_ptr": Tensor((8, 256, 512), (131072, 512, 1), torch.float32, zeros=True),
    "n_rows": 2048,
}
OUTPUTS = ['rstd_ptr', 'mean_ptr', 'out_ptr']  # what the kernel writes: --check compares each


def reference(a_ptr, weight_ptr, bias_ptr):
    primals_3 = a_ptr
    primals_1 = weight_ptr
    primals_2 = bias_ptr
    var_mean = torch.ops.aten.var_mean.correction(primals_3, [2], correction=0, keepdim=True)
    getitem = var_mean[0]
    getitem_1 = var_mean[1]
    add = torch.ops.aten.add.Tensor(getitem, 1e-05)
    rsqrt = torch.ops.aten.rsqrt.default(add)
    sub = torch.ops.aten.sub.Tensor(primals_3, getitem_1)
    mul = torch.ops.aten.mul.Tensor(sub, rsqrt)
    mul_1 = torch.ops.aten.mul.Tensor(mul, primals_1)
    add_1 = torch.ops.aten.add.Tensor(mul_1, primals_2)
    return {"rstd_ptr": {"reduce": "through", "dims": [], "terms": 512, "expected": rsqrt}, "mean_ptr": {"reduce": "through", "dims": [], "terms": 512, "expected": getitem_1}, "out_ptr": {"reduce": "through", "dims": [2], "terms": 512, "expected": add_1}}


RECORD = None  # the run's data for this launch (inputs before, outputs after), relative to this file
RECORD_DEVICE = None  # where it was made: outputs match bit for bit there
RECORD_CONFIG = None  # CONFIG as the record was made: with another, the record compares within tolerances
KERNEL_SHA256 = "bdcfe49ff6fbb28dd785b53b63c7b9db774e39e213667a943e06b1b41111e7e1"  # of the kernel text as extracted
EXACT_POSSIBLE = True  # False when the result depends on launch order (atomics)
UNCHECKED = {}  # outputs the reference cannot compute, and why (the record still compares them)

if __name__ == "__main__":
    sys.exit(main(globals()))

# Notes on layer_norm_fwd_kernel of g0_forward:
#     inferred getitem = var_mean[0] (the fragment uses it but does not define it)
#     inferred getitem_1 = var_mean[1] (the fragment uses it but does not define it)
#     no data recorded for this launch: data not saved: the extraction's cap of 12 MiB is used up (--record-total-
#       cap); --check uses made-up inputs

# Names in layer_norm_fwd_kernel of g0_forward (this module <- Inductor's output_code.py  [FX node]):
#     layer_norm_fwd_kernel <- triton_per_fused_native_layer_norm_0, rstd_ptr <- in_out_ptr0 [buf3]
#     a_ptr <- in_ptr0 [primals_3], weight_ptr <- in_ptr1 [primals_1], bias_ptr <- in_ptr2 [primals_2]
#     mean_ptr <- out_ptr0 [buf0], out_ptr <- out_ptr1 [buf4], n_rows <- xnumel, n_cols <- r0_numel, BLOCK_ROWS <- XBLOCK
#     BLOCK_COLS <- R0_BLOCK, row_start <- xoffset, rows <- xindex, row_mask <- xmask, cols <- r0_index, a <- tmp0
#     weight <- tmp24, bias <- tmp26, broadcast <- tmp1, masked <- tmp3, broadcast_1 <- tmp4, masked_1 <- tmp6
#     total <- tmp7, const <- tmp8, as_f32 <- tmp9, mean <- tmp10, centered <- tmp11, square <- tmp12
#     broadcast_2 <- tmp13, masked_2 <- tmp15, total_1 <- tmp16, const_1 <- tmp17, var <- tmp18, const_2 <- tmp19
#     var_eps <- tmp20, rstd <- tmp21 [rsqrt], centered_1 <- tmp22, mul <- tmp23, mul_1 <- tmp25, add <- tmp27
#     cols <- r0_1, rows <- x0
