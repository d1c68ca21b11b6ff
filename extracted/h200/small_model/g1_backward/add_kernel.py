"""add_kernel: pointwise kernel fusing aten.add

Source lines:
    examples/small_model.py:26 in forward: scores = (h @ x.transpose(-2, -1)) * self.scale
From examples/small_model.py, graph g1_backward: Inductor's triton_poi_fused_add_1.
Captured with torch 2.11.0+cu130, triton 3.6.0, on cuda (NVIDIA H200), by: harvest extract examples/small_model.py
Notes and names (Inductor's for each new one): at the end of this file.
Check: python g1_backward/add_kernel.py --check  (on a CPU: TRITON_INTERPRET=1 python ...);  time: --bench (GPU)
"""

import torch
import triton
import triton.language as tl


# >>> kernel add_kernel of g1_backward (edit freely: once this text differs from what harvest extracted, --check compares with tolerances)
@triton.jit
def add_kernel(bmm_add_ptr, bmm_ptr, BLOCK_SIZE : tl.constexpr):
    n_elements = 1048576  # fixed: at this size every block is full, so Inductor left out the bounds mask
    block_start = tl.program_id(0) * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)[:]
    bmm = tl.load(bmm_add_ptr + (offsets), None)
    bmm_1 = tl.load(bmm_ptr + (offsets), None)
    add = bmm + bmm_1
    tl.store(bmm_add_ptr + (offsets), add, None)
# <<< kernel


CONFIG = {'BLOCK_SIZE': 1024, 'num_warps': 4, 'num_stages': 1}  # recorded in the run; chosen by the only config


def launch(bmm_add_ptr, bmm_ptr, config=CONFIG):
    """Launch add_kernel of g1_backward on its arguments (outputs are written in place)."""
    grid = (triton.cdiv(1048576, config["BLOCK_SIZE"]),)
    add_kernel[grid](bmm_add_ptr, bmm_ptr, **config)


import os  # noqa: E402  (from here on: the run's arguments and the check, through the extraction's harness.py)
import sys  # noqa: E402

sys.dont_write_bytecode = True  # importing harness.py leaves no __pycache__ in the extraction
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Tensor, main  # noqa: E402  (tensors, record, check, bench)

# The arguments of add_kernel in g1_backward, as recorded in the real run: each a Tensor (see harness.py) or a value.
ARGUMENTS = {  # a shape, stride or value changed here is the whole edit
    "bmm_add_ptr": Tensor((8, 256, 512), (131072, 512, 1), torch.float32),
    "bmm_ptr": Tensor((8, 256, 512), (131072, 512, 1), torch.float32),
}
OUTPUTS = ['bmm_add_ptr']  # what the kernel writes: --check compares each


def reference(bmm_add_ptr, bmm_ptr):
    bmm_2 = bmm_add_ptr
    bmm_5 = bmm_ptr
    add_4 = torch.ops.aten.add.Tensor(bmm_2, bmm_5)
    return {"bmm_add_ptr": add_4}


RECORD = None  # the run's data for this launch (inputs before, outputs after), relative to this file
RECORD_DEVICE = None  # where it was made: outputs match bit for bit there
RECORD_CONFIG = None  # CONFIG as the record was made: with another, the record compares within tolerances
KERNEL_SHA256 = "8e671a7fbb854cad04dbadd012cc2fb9d107a479c935930cea568e6e366b6fdb"  # of the kernel text as extracted
EXACT_POSSIBLE = True  # False when the result depends on launch order (atomics)
UNCHECKED = {}  # outputs the reference cannot compute, and why (the record still compares them)

if __name__ == "__main__":
    sys.exit(main(globals()))

# Notes on add_kernel of g1_backward:
#     bound in_out_ptr0 to bmm_2 by read order (same meta as another input)
#     bound in_ptr0 to bmm_5 by read order (same meta as another input)
#     no data recorded for this launch: data not saved: the extraction's cap of 12 MiB is used up (--record-total-
#       cap); --check uses made-up inputs

# Names in add_kernel of g1_backward (this module <- Inductor's output_code.py  [FX node]):
#     add_kernel <- triton_poi_fused_add_1, bmm_add_ptr <- in_out_ptr0 [buf6], bmm_ptr <- in_ptr0 [buf5]
#     n_elements <- xnumel, BLOCK_SIZE <- XBLOCK, block_start <- xoffset, offsets <- xindex, bmm <- tmp0, bmm_1 <- tmp1
#     add <- tmp2 [add_4], offsets <- x0
