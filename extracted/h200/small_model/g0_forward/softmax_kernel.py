"""softmax_kernel: persistent_reduction kernel fusing aten.mul, aten.amax, aten.sub, aten._softmax

Source lines:
    examples/small_model.py:27 in forward: attn = torch.softmax(scores, dim=-1)
From examples/small_model.py, graph g0_forward: Inductor's triton_per_fused__softmax_amax_mul_sub_2.
Captured with torch 2.11.0+cu130, triton 3.6.0, on cuda (NVIDIA H200), by: harvest extract examples/small_model.py
Names (Inductor's for each new one): at the end of this file.
Check: python g0_forward/softmax_kernel.py --check  (on a CPU: TRITON_INTERPRET=1 python ...);  time: --bench (GPU)
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


# >>> kernel softmax_kernel of g0_forward (edit freely: once this text differs from what harvest extracted, --check compares with tolerances)
@triton.jit
def softmax_kernel(bmm_div_ptr, n_rows, BLOCK_ROWS : tl.constexpr):
    n_cols = 256  # fixed: the whole row is one block (BLOCK_COLS = 256), as Inductor compiled it
    BLOCK_COLS: tl.constexpr = 256
    row_start = tl.program_id(0) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = rows < n_rows
    cols = tl.arange(0, BLOCK_COLS)[None, :]
    bmm = tl.load(bmm_div_ptr + (cols + 256*rows), row_mask, other=0.0)
    one = tl.full([1, 1], 1.0, tl.float32)
    mul = bmm * one
    broadcast = tl.broadcast_to(mul, [BLOCK_ROWS, BLOCK_COLS])
    masked = tl.where(row_mask, broadcast, float("-inf"))
    amax = triton_helpers.max2(masked, 1)[:, None].to(tl.float32)
    sub = mul - amax
    const = tl.full([1, 1], 0.04419417382415922, tl.float32)
    mul_1 = sub * const
    exp = libdevice.exp(mul_1)
    broadcast_1 = tl.broadcast_to(exp, [BLOCK_ROWS, BLOCK_COLS])
    masked_1 = tl.where(row_mask, broadcast_1, 0)
    total = tl.sum(masked_1, 1)[:, None].to(tl.float32)
    div = (exp / total)
    tl.store(bmm_div_ptr + (cols + 256*rows), div, row_mask)
# <<< kernel


CONFIG = {'BLOCK_ROWS': 4, 'num_warps': 1, 'num_stages': 1}  # recorded in the run; chosen by the only config


def launch(bmm_div_ptr, n_rows, config=CONFIG):
    """Launch softmax_kernel of g0_forward on its arguments (outputs are written in place)."""
    grid = (triton.cdiv(n_rows, config["BLOCK_ROWS"]),)
    softmax_kernel[grid](bmm_div_ptr, n_rows, **config)


import os  # noqa: E402  (from here on: the run's arguments and the check, through the extraction's harness.py)
import sys  # noqa: E402

sys.dont_write_bytecode = True  # importing harness.py leaves no __pycache__ in the extraction
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Tensor, main, triton_helpers  # noqa: E402  (the kernel's helpers are harvest's)

# The arguments of softmax_kernel in g0_forward, as recorded in the real run: each a Tensor (see harness.py) or a value.
ARGUMENTS = {  # a shape, stride or value changed here is the whole edit
    "bmm_div_ptr": Tensor((8, 256, 256), (65536, 256, 1), torch.float32),
    "n_rows": 2048,
}
OUTPUTS = ['bmm_div_ptr']  # what the kernel writes: --check compares each


def reference(bmm_div_ptr):
    bmm = bmm_div_ptr
    mul_tensor = torch.ops.aten.mul.Tensor(bmm, 1)
    amax_default = torch.ops.aten.amax.default(mul_tensor, [-1], True)
    sub_tensor = torch.ops.aten.sub.Tensor(mul_tensor, amax_default)
    mul_tensor_1 = torch.ops.aten.mul.Tensor(sub_tensor, 0.04419417382415922)
    exp = torch.ops.aten.exp.default(mul_tensor_1)
    sum_1 = torch.ops.aten.sum.dim_IntList(exp, [-1], True)
    div = torch.ops.aten.div.Tensor(exp, sum_1)
    return {"bmm_div_ptr": {"reduce": "through", "dims": [2], "terms": 256, "expected": div}}


RECORD = '../raw/g0_forward/records/triton_per_fused__softmax_amax_mul_sub_2.pt'  # the run's data for this launch (inputs before, outputs after), relative to this file
RECORD_DEVICE = 'cuda:NVIDIA H200'  # where it was made: outputs match bit for bit there
RECORD_CONFIG = {'BLOCK_ROWS': 4, 'num_warps': 1, 'num_stages': 1}  # CONFIG as the record was made: with another, the record compares within tolerances
KERNEL_SHA256 = "08d93e24628af6f3f1b7ddd8012e9178dd6c49f50b1efa8c7094f1e92c991785"  # of the kernel text as extracted
EXACT_POSSIBLE = True  # False when the result depends on launch order (atomics)
UNCHECKED = {}  # outputs the reference cannot compute, and why (the record still compares them)

if __name__ == "__main__":
    sys.exit(main(globals()))

# Names in softmax_kernel of g0_forward (this module <- Inductor's output_code.py  [FX node]):
#     softmax_kernel <- triton_per_fused__softmax_amax_mul_sub_2, bmm_div_ptr <- in_out_ptr0 [buf11], n_rows <- xnumel
#     n_cols <- r0_numel, BLOCK_ROWS <- XBLOCK, BLOCK_COLS <- R0_BLOCK, row_start <- xoffset, rows <- xindex
#     row_mask <- xmask, cols <- r0_index, bmm <- tmp0, one <- tmp1, mul <- tmp2, broadcast <- tmp3, masked <- tmp5
#     amax <- tmp6 [amax_default], sub <- tmp7 [sub_tensor], const <- tmp8, mul_1 <- tmp9, exp <- tmp10 [exp]
#     broadcast_1 <- tmp11, masked_1 <- tmp13, total <- tmp14 [sum_1], div <- tmp15 [div], cols <- r0_1, rows <- x0
