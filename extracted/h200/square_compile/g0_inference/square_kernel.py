"""square_kernel: pointwise kernel fusing aten.pow

Source lines:
    examples/square_compile.py:13 in square: return torch.square(a)
From examples/square_compile.py, graph g0_inference: Inductor's triton_poi_fused_pow_0.
Captured with torch 2.11.0+cu130, triton 3.6.0, on cuda (NVIDIA H200), by: harvest extract examples/square_compile.py
Notes and names (Inductor's for each new one): at the end of this file.
Check: python g0_inference/square_kernel.py --check  (on a CPU: TRITON_INTERPRET=1 python ...);  time: --bench (GPU)
"""

import torch
import triton
import triton.language as tl


# >>> kernel square_kernel of g0_inference (edit freely: once this text differs from what harvest extracted, --check compares with tolerances)
@triton.jit
def square_kernel(a_ptr, out_ptr, n_elements, BLOCK_SIZE : tl.constexpr):
    block_start = tl.program_id(0) * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)[:]
    mask = offsets < n_elements
    a = tl.load(a_ptr + (offsets), mask)
    square = a * a
    tl.store(out_ptr + (offsets), square, mask)
# <<< kernel


CONFIG = {'BLOCK_SIZE': 1024, 'num_warps': 4, 'num_stages': 1}  # recorded in the run; chosen by the only config


def launch(a_ptr, out_ptr, n_elements, config=CONFIG):
    """Launch square_kernel of g0_inference on its arguments (outputs are written in place)."""
    grid = (triton.cdiv(n_elements, config["BLOCK_SIZE"]),)
    square_kernel[grid](a_ptr, out_ptr, n_elements, **config)


import os  # noqa: E402  (from here on: the run's arguments and the check, through the extraction's harness.py)
import sys  # noqa: E402

sys.dont_write_bytecode = True  # importing harness.py leaves no __pycache__ in the extraction
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Tensor, main  # noqa: E402  (tensors, record, check, bench)

# The arguments of square_kernel in g0_inference, as recorded in the real run: each a Tensor (see harness.py) or a value.
ARGUMENTS = {  # a shape, stride or value changed here is the whole edit
    "a_ptr": Tensor((10000, 10000), (10000, 1), torch.float32),
    "out_ptr": Tensor((10000, 10000), (10000, 1), torch.float32, zeros=True),
    "n_elements": 100000000,
}
OUTPUTS = ['out_ptr']  # what the kernel writes: --check compares each


def reference(a_ptr):
    arg0_1 = a_ptr
    pow_1 = torch.ops.aten.pow.Tensor_Scalar(arg0_1, 2)
    return {"out_ptr": pow_1}


RECORD = None  # the run's data for this launch (inputs before, outputs after), relative to this file
RECORD_DEVICE = None  # where it was made: outputs match bit for bit there
RECORD_CONFIG = None  # CONFIG as the record was made: with another, the record compares within tolerances
KERNEL_SHA256 = "b1b1c4b93b85bef9b6e16be6f5e45e9971a08b1ab5967324fbff89070dc75cfd"  # of the kernel text as extracted
EXACT_POSSIBLE = True  # False when the result depends on launch order (atomics)
UNCHECKED = {}  # outputs the reference cannot compute, and why (the record still compares them)

if __name__ == "__main__":
    sys.exit(main(globals()))

# Notes on square_kernel of g0_inference:
#     no data recorded for this launch: data not saved: 1144.4 MiB before+after is over the per-kernel cap of 1024
#       MiB (--record-cap); --check uses made-up inputs

# Names in square_kernel of g0_inference (this module <- Inductor's output_code.py  [FX node]):
#     square_kernel <- triton_poi_fused_pow_0, a_ptr <- in_ptr0 [arg0_1], out_ptr <- out_ptr0 [buf0], n_elements <- xnumel
#     BLOCK_SIZE <- XBLOCK, block_start <- xoffset, offsets <- xindex, mask <- xmask, a <- tmp0, square <- tmp1 [pow_1]
#     offsets <- x0
