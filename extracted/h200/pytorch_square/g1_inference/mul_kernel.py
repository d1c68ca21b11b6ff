"""mul_kernel: pointwise kernel fusing aten.mul

Source lines:
    examples/pytorch_square.py:21 in mul_fn: return a * a
From examples/pytorch_square.py, graph g1_inference: Inductor's triton_poi_fused_mul_0.
Captured with torch 2.11.0+cu130, triton 3.6.0, on cuda (NVIDIA H200), by: harvest extract examples/pytorch_square.py
Notes and names (Inductor's for each new one): at the end of this file.
Check: python g1_inference/mul_kernel.py --check  (on a CPU: TRITON_INTERPRET=1 python ...);  time: --bench (GPU)
"""

import torch
import triton
import triton.language as tl


# >>> kernel mul_kernel of g1_inference (edit freely: once this text differs from what harvest extracted, --check compares with tolerances)
@triton.jit
def mul_kernel(a_ptr, out_ptr, n_elements, BLOCK_SIZE : tl.constexpr):
    block_start = tl.program_id(0) * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)[:]
    mask = offsets < n_elements
    a = tl.load(a_ptr + (offsets), mask)
    square = a * a
    tl.store(out_ptr + (offsets), square, mask)
# <<< kernel


CONFIG = {'BLOCK_SIZE': 1024, 'num_warps': 4, 'num_stages': 1}  # recorded in the run; chosen by the only config


def launch(a_ptr, out_ptr, n_elements, config=CONFIG):
    """Launch mul_kernel of g1_inference on its arguments (outputs are written in place)."""
    grid = (triton.cdiv(n_elements, config["BLOCK_SIZE"]),)
    mul_kernel[grid](a_ptr, out_ptr, n_elements, **config)


import os  # noqa: E402  (from here on: the run's arguments and the check, through the extraction's harness.py)
import sys  # noqa: E402

sys.dont_write_bytecode = True  # importing harness.py leaves no __pycache__ in the extraction
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Tensor, main  # noqa: E402  (tensors, record, check, bench)

# The arguments of mul_kernel in g1_inference, as recorded in the real run (its first of 12 launches in this graph, all alike): each a Tensor (see harness.py) or a value.
ARGUMENTS = {  # a shape, stride or value changed here is the whole edit
    "a_ptr": Tensor((10000, 10000), (10000, 1), torch.float32),
    "out_ptr": Tensor((10000, 10000), (10000, 1), torch.float32, zeros=True),
    "n_elements": 100000000,
}
OUTPUTS = ['out_ptr']  # what the kernel writes: --check compares each


def reference(a_ptr):
    arg0_1 = a_ptr
    mul = torch.ops.aten.mul.Tensor(arg0_1, arg0_1)
    return {"out_ptr": mul}


RECORD = None  # the run's data for this launch (inputs before, outputs after), relative to this file
RECORD_DEVICE = None  # where it was made: outputs match bit for bit there
RECORD_CONFIG = None  # CONFIG as the record was made: with another, the record compares within tolerances
KERNEL_SHA256 = "c6f928ee4cab27c5e604c1c2ec229e58de035bfcf6c7260eaeebde52f31a0229"  # of the kernel text as extracted
EXACT_POSSIBLE = True  # False when the result depends on launch order (atomics)
UNCHECKED = {}  # outputs the reference cannot compute, and why (the record still compares them)

if __name__ == "__main__":
    sys.exit(main(globals()))

# Notes on mul_kernel of g1_inference:
#     no data recorded for this launch: data not saved: 1144.4 MiB before+after is over the per-kernel cap of 1024
#       MiB (--record-cap); --check uses made-up inputs

# Names in mul_kernel of g1_inference (this module <- Inductor's output_code.py  [FX node]):
#     mul_kernel <- triton_poi_fused_mul_0, a_ptr <- in_ptr0 [arg0_1], out_ptr <- out_ptr0 [buf0], n_elements <- xnumel
#     BLOCK_SIZE <- XBLOCK, block_start <- xoffset, offsets <- xindex, mask <- xmask, a <- tmp0, square <- tmp1
#     offsets <- x0
