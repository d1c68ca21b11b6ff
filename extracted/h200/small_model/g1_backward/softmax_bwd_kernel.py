"""softmax_bwd_kernel: persistent_reduction kernel fusing aten._softmax_backward_data, aten.mul

Source lines:
    examples/small_model.py:26 in forward: scores = (h @ x.transpose(-2, -1)) * self.scale
    examples/small_model.py:27 in forward: attn = torch.softmax(scores, dim=-1)
From examples/small_model.py, graph g1_backward: Inductor's triton_per_fused__softmax_backward_data_mul_0.
Captured with torch 2.11.0+cu130, triton 3.6.0, on cuda (NVIDIA H200), by: harvest extract examples/small_model.py
Names (Inductor's for each new one): at the end of this file.
Check: python g1_backward/softmax_bwd_kernel.py --check  (on a CPU: TRITON_INTERPRET=1 python ...);  time: --bench (GPU)
"""

import torch
import triton
import triton.language as tl


# >>> kernel softmax_bwd_kernel of g1_backward (edit freely: once this text differs from what harvest extracted, --check compares with tolerances)
@triton.jit
def softmax_bwd_kernel(bmm_mul_ptr, div_ptr, n_rows, BLOCK_ROWS : tl.constexpr):
    n_cols = 256  # fixed: the whole row is one block (BLOCK_COLS = 256), as Inductor compiled it
    BLOCK_COLS: tl.constexpr = 256
    row_start = tl.program_id(0) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = rows < n_rows
    cols = tl.arange(0, BLOCK_COLS)[None, :]
    bmm = tl.load(bmm_mul_ptr + (cols + 256*rows), row_mask, other=0.0)
    div = tl.load(div_ptr + (cols + 256*rows), row_mask, other=0.0)
    mul = bmm * div
    broadcast = tl.broadcast_to(mul, [BLOCK_ROWS, BLOCK_COLS])
    masked = tl.where(row_mask, broadcast, 0)
    total = tl.sum(masked, 1)[:, None].to(tl.float32)
    neg = -div
    fma = tl.fma(neg, total, mul)
    const = tl.full([1, 1], 0.04419417382415922, tl.float32)
    mul_1 = fma * const
    tl.store(bmm_mul_ptr + (cols + 256*rows), mul_1, row_mask)
# <<< kernel


CONFIG = {'BLOCK_ROWS': 4, 'num_warps': 1, 'num_stages': 1}  # recorded in the run; chosen by the only config


def launch(bmm_mul_ptr, div_ptr, n_rows, config=CONFIG):
    """Launch softmax_bwd_kernel of g1_backward on its arguments (outputs are written in place)."""
    grid = (triton.cdiv(n_rows, config["BLOCK_ROWS"]),)
    softmax_bwd_kernel[grid](bmm_mul_ptr, div_ptr, n_rows, **config)


import os  # noqa: E402  (from here on: the run's arguments and the check, through the extraction's harness.py)
import sys  # noqa: E402

sys.dont_write_bytecode = True  # importing harness.py leaves no __pycache__ in the extraction
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Tensor, main  # noqa: E402  (tensors, record, check, bench)

# The arguments of softmax_bwd_kernel in g1_backward, as recorded in the real run: each a Tensor (see harness.py) or a value.
ARGUMENTS = {  # a shape, stride or value changed here is the whole edit
    "bmm_mul_ptr": Tensor((8, 256, 256), (65536, 256, 1), torch.float32),
    "div_ptr": Tensor((8, 256, 256), (65536, 256, 1), torch.float32),
    "n_rows": 2048,
}
OUTPUTS = ['bmm_mul_ptr']  # what the kernel writes: --check compares each


def reference(bmm_mul_ptr, div_ptr):
    bmm_3 = bmm_mul_ptr
    div = div_ptr
    mul_6 = torch.ops.aten.mul.Tensor(bmm_3, div)
    sum_2 = torch.ops.aten.sum.dim_IntList(mul_6, [-1], True)
    neg = torch.ops.aten.neg.default(div)
    fma = torch.ops.aten.add.Tensor(torch.ops.aten.mul.Tensor(neg, sum_2), mul_6)
    mul_7 = torch.ops.aten.mul.Tensor(fma, 0.04419417382415922)
    return {"bmm_mul_ptr": {"reduce": "through", "dims": [2], "terms": 256, "expected": mul_7}}


RECORD = '../raw/g1_backward/records/triton_per_fused__softmax_backward_data_mul_0.pt'  # the run's data for this launch (inputs before, outputs after), relative to this file
RECORD_DEVICE = 'cuda:NVIDIA H200'  # where it was made: outputs match bit for bit there
RECORD_CONFIG = {'BLOCK_ROWS': 4, 'num_warps': 1, 'num_stages': 1}  # CONFIG as the record was made: with another, the record compares within tolerances
KERNEL_SHA256 = "a2c5329c09c42c7ac9987e3bccbd7ce2ced8dcf626a8b93ee11b6ac9ce35409e"  # of the kernel text as extracted
EXACT_POSSIBLE = True  # False when the result depends on launch order (atomics)
UNCHECKED = {}  # outputs the reference cannot compute, and why (the record still compares them)

if __name__ == "__main__":
    sys.exit(main(globals()))

# Names in softmax_bwd_kernel of g1_backward (this module <- Inductor's output_code.py  [FX node]):
#     softmax_bwd_kernel <- triton_per_fused__softmax_backward_data_mul_0, bmm_mul_ptr <- in_out_ptr0 [buf3]
#     div_ptr <- in_ptr0 [div], n_rows <- xnumel, n_cols <- r0_numel, BLOCK_ROWS <- XBLOCK, BLOCK_COLS <- R0_BLOCK
#     row_start <- xoffset, rows <- xindex, row_mask <- xmask, cols <- r0_index, bmm <- tmp0, div <- tmp1, mul <- tmp2
#     broadcast <- tmp3, masked <- tmp5, total <- tmp6 [sum_2], neg <- tmp7, fma <- tmp8, const <- tmp9, mul_1 <- tmp10
#     cols <- r0_1, rows <- x0
