"""gelu_kernel: pointwise kernel fusing aten.view, aten.gelu

Source lines:
    examples/small_model.py:23 in forward: h = self.up(h)
    examples/small_model.py:24 in forward: h = torch.nn.functional.gelu(h)
From examples/small_model.py, graph g0_forward: Inductor's triton_poi_fused_gelu_view_1.
Captured with torch 2.11.0+cu130, triton 3.6.0, on cuda (NVIDIA H200), by: harvest extract examples/small_model.py
Notes and names (Inductor's for each new one): at the end of this file.
Check: python g0_forward/gelu_kernel.py --check  (on a CPU: TRITON_INTERPRET=1 python ...);  time: --bench (GPU)
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


# >>> kernel gelu_kernel of g0_forward (edit freely: once this text differs from what harvest extracted, --check compares with tolerances)
@triton.jit
def gelu_kernel(addmm_ptr, out_ptr, BLOCK_SIZE : tl.constexpr):
    n_elements = 4194304  # fixed: at this size every block is full, so Inductor left out the bounds mask
    block_start = tl.program_id(0) * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)[:]
    addmm = tl.load(addmm_ptr + (offsets), None)
    half = tl.full([1], 0.5, tl.float32)
    mul = addmm * half
    const = tl.full([1], 0.7071067811865476, tl.float32)
    mul_1 = addmm * const
    erf = libdevice.erf(mul_1)
    one = tl.full([1], 1.0, tl.float32)
    add = erf + one
    mul_2 = mul * add
    tl.store(out_ptr + (offsets), mul_2, None)
# <<< kernel


CONFIG = {'BLOCK_SIZE': 512, 'num_warps': 8, 'num_stages': 1}  # recorded in the run; chosen by the only config


def launch(addmm_ptr, out_ptr, config=CONFIG):
    """Launch gelu_kernel of g0_forward on its arguments (outputs are written in place)."""
    grid = (triton.cdiv(4194304, config["BLOCK_SIZE"]),)
    gelu_kernel[grid](addmm_ptr, out_ptr, **config)


import os  # noqa: E402  (from here on: the run's arguments and the check, through the extraction's harness.py)
import sys  # noqa: E402

sys.dont_write_bytecode = True  # importing harness.py leaves no __pycache__ in the extraction
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Tensor, main  # noqa: E402  (tensors, record, check, bench)

# The arguments of gelu_kernel in g0_forward, as recorded in the real run: each a Tensor (see harness.py) or a value.
ARGUMENTS = {  # a shape, stride or value changed here is the whole edit
    "addmm_ptr": Tensor((2048, 2048), (2048, 1), torch.float32),
    "out_ptr": Tensor((8, 256, 2048), (524288, 2048, 1), torch.float32, zeros=True),
}
OUTPUTS = ['out_ptr']  # what the kernel writes: --check compares each


def reference(addmm_ptr):
    addmm = addmm_ptr
    view_1 = torch.ops.aten.reshape.default(addmm, [8, 256, 2048])
    mul_2 = torch.ops.aten.mul.Tensor(view_1, 0.5)
    mul_3 = torch.ops.aten.mul.Tensor(view_1, 0.7071067811865476)
    erf = torch.ops.aten.erf.default(mul_3)
    add_2 = torch.ops.aten.add.Tensor(erf, 1)
    mul_4 = torch.ops.aten.mul.Tensor(mul_2, add_2)
    return {"out_ptr": mul_4}


RECORD = None  # the run's data for this launch (inputs before, outputs after), relative to this file
RECORD_DEVICE = None  # where it was made: outputs match bit for bit there
RECORD_CONFIG = None  # CONFIG as the record was made: with another, the record compares within tolerances
KERNEL_SHA256 = "9a487e5129ddd17f9c9b258daa2cae2c45fe96133d887b66d7df0ef325ebdb03"  # of the kernel text as extracted
EXACT_POSSIBLE = True  # False when the result depends on launch order (atomics)
UNCHECKED = {}  # outputs the reference cannot compute, and why (the record still compares them)

if __name__ == "__main__":
    sys.exit(main(globals()))

# Notes on gelu_kernel of g0_forward:
#     no data recorded for this launch: data not saved: the extraction's cap of 12 MiB is used up (--record-total-
#       cap); --check uses made-up inputs

# Names in gelu_kernel of g0_forward (this module <- Inductor's output_code.py  [FX node]):
#     gelu_kernel <- triton_poi_fused_gelu_view_1, addmm_ptr <- in_ptr0 [buf5], out_ptr <- out_ptr0 [buf6]
#     n_elements <- xnumel, BLOCK_SIZE <- XBLOCK, block_start <- xoffset, offsets <- xindex, addmm <- tmp0, half <- tmp1
#     mul <- tmp2, const <- tmp3, mul_1 <- tmp4, erf <- tmp5 [erf], one <- tmp6, add <- tmp7 [add_2], mul_2 <- tmp8
#     offsets <- x0
