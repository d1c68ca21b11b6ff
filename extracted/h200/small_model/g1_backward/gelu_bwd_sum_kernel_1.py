"""gelu_bwd_sum_kernel_1: persistent_reduction kernel fusing aten.view, aten.gelu, aten.gelu_backward, aten.sum

Source lines:
    examples/small_model.py:23 in forward: h = self.up(h)
    examples/small_model.py:24 in forward: h = torch.nn.functional.gelu(h)
    examples/small_model.py:25 in forward: h = self.down(h)
From examples/small_model.py, graph g1_backward: Inductor's triton_per_fused_gelu_gelu_backward_sum_view_6.
Captured with torch 2.11.0+cu130, triton 3.6.0, on cuda (NVIDIA H200), by: harvest extract examples/small_model.py
Names (Inductor's for each new one): at the end of this file.
Check: python g1_backward/gelu_bwd_sum_kernel_1.py --check  (on a CPU: TRITON_INTERPRET=1 python ...);  time: --bench (GPU)
"""

import torch
import triton
import triton.language as tl


# >>> kernel gelu_bwd_sum_kernel_1 of g1_backward (edit freely: once this text differs from what harvest extracted, --check compares with tolerances)
@triton.jit
def gelu_bwd_sum_kernel_1(a_ptr, out_ptr, n_rows, BLOCK_ROWS : tl.constexpr):
    n_cols = 16  # fixed: the whole row is one block (BLOCK_COLS = 16), as Inductor compiled it
    BLOCK_COLS: tl.constexpr = 16
    row_start = tl.program_id(0) * BLOCK_ROWS
    rows = row_start + tl.arange(0, BLOCK_ROWS)[:, None]
    row_mask = rows < n_rows
    cols = tl.arange(0, BLOCK_COLS)[None, :]
    a = tl.load(a_ptr + (rows + 2048*cols), row_mask, other=0.0)
    broadcast = tl.broadcast_to(a, [BLOCK_ROWS, BLOCK_COLS])
    masked = tl.where(row_mask, broadcast, 0)
    total = tl.sum(masked, 1)[:, None].to(tl.float32)
    tl.store(out_ptr + (rows), total, row_mask)
# <<< kernel


CONFIG = {'BLOCK_ROWS': 128, 'num_warps': 8, 'num_stages': 1}  # recorded in the run; chosen by the only config


def launch(a_ptr, out_ptr, n_rows, config=CONFIG):
    """Launch gelu_bwd_sum_kernel_1 of g1_backward on its arguments (outputs are written in place)."""
    grid = (triton.cdiv(n_rows, config["BLOCK_ROWS"]),)
    gelu_bwd_sum_kernel_1[grid](a_ptr, out_ptr, n_rows, **config)


import os  # noqa: E402  (from here on: the run's arguments and the check, through the extraction's harness.py)
import sys  # noqa: E402

sys.dont_write_bytecode = True  # importing harness.py leaves no __pycache__ in the extraction
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Tensor, main  # noqa: E402  (tensors, record, check, bench)

# The arguments of gelu_bwd_sum_kernel_1 in g1_backward, as recorded in the real run: each a Tensor (see harness.py) or a value.
ARGUMENTS = {  # a shape, stride or value changed here is the whole edit
    "a_ptr": Tensor((1, 2048, 16), (32768, 1, 2048), torch.float32),
    "out_ptr": Tensor((1, 2048), (2048, 1), torch.float32, zeros=True),
    "n_rows": 2048,
}
OUTPUTS = ['out_ptr']  # what the kernel writes: --check compares each


def reference(a_ptr):
    buf14 = a_ptr
    # Split reduction, stage 2: buf14 holds partial sums of sum_4 along dim [2]; the kernel sums them.
    sum_4 = torch.ops.aten.sum.dim_IntList(buf14, [2])
    return {"out_ptr": {"reduce": "through", "dims": [], "terms": 2048, "expected": sum_4}}


RECORD = '../raw/g1_backward/records/triton_per_fused_gelu_gelu_backward_sum_view_6.pt'  # the run's data for this launch (inputs before, outputs after), relative to this file
RECORD_DEVICE = 'cuda:NVIDIA H200'  # where it was made: outputs match bit for bit there
RECORD_CONFIG = {'BLOCK_ROWS': 128, 'num_warps': 8, 'num_stages': 1}  # CONFIG as the record was made: with another, the record compares within tolerances
KERNEL_SHA256 = "b58f933cd1e868863db7a86cef5f00ff047b0523b1a0379d04c7d3c8aea3b253"  # of the kernel text as extracted
EXACT_POSSIBLE = True  # False when the result depends on launch order (atomics)
UNCHECKED = {}  # outputs the reference cannot compute, and why (the record still compares them)

if __name__ == "__main__":
    sys.exit(main(globals()))

# Names in gelu_bwd_sum_kernel_1 of g1_backward (this module <- Inductor's output_code.py  [FX node]):
#     gelu_bwd_sum_kernel_1 <- triton_per_fused_gelu_gelu_backward_sum_view_6, a_ptr <- in_ptr0 [buf14]
#     out_ptr <- out_ptr0 [buf15], n_rows <- xnumel, n_cols <- r0_numel, BLOCK_ROWS <- XBLOCK, BLOCK_COLS <- R0_BLOCK
#     row_start <- xoffset, rows <- xindex, row_mask <- xmask, cols <- r0_index, a <- tmp0, broadcast <- tmp1
#     masked <- tmp3, total <- tmp4 [sum_4], cols <- r0_1, rows <- x0
