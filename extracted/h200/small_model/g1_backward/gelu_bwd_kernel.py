"""gelu_bwd_kernel: pointwise kernel fusing aten.view, aten.gelu, aten.gelu_backward

Source lines:
    examples/small_model.py:23 in forward: h = self.up(h)
    examples/small_model.py:24 in forward: h = torch.nn.functional.gelu(h)
    examples/small_model.py:25 in forward: h = self.down(h)
From examples/small_model.py, graph g1_backward: Inductor's triton_poi_fused_gelu_gelu_backward_view_4.
Captured with torch 2.11.0+cu130, triton 3.6.0, on cuda (NVIDIA H200), by: harvest extract examples/small_model.py
Notes and names (Inductor's for each new one): at the end of this file.
Check: python g1_backward/gelu_bwd_kernel.py --check  (on a CPU: TRITON_INTERPRET=1 python ...);  time: --bench (GPU)
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


# >>> kernel gelu_bwd_kernel of g1_backward (edit freely: once this text differs from what harvest extracted, --check compares with tolerances)
@triton.jit
def gelu_bwd_kernel(mm_mul_ptr, addmm_ptr, BLOCK_SIZE : tl.constexpr):
    n_elements = 4194304  # fixed: at this size every block is full, so Inductor left out the bounds mask
    block_start = tl.program_id(0) * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)[:]
    mm = tl.load(mm_mul_ptr + (offsets), None)
    addmm = tl.load(addmm_ptr + (offsets), None)
    const = tl.full([1], 0.7071067811865476, tl.float32)
    mul = addmm * const
    erf = libdevice.erf(mul)
    one = tl.full([1], 1.0, tl.float32)
    add = erf + one
    half = tl.full([1], 0.5, tl.float32)
    mul_1 = add * half
    square = addmm * addmm
    const_1 = tl.full([1], -0.5, tl.float32)
    mul_2 = square * const_1
    exp = libdevice.exp(mul_2)
    const_2 = tl.full([1], 0.3989422804014327, tl.float32)
    mul_3 = exp * const_2
    mul_4 = addmm * mul_3
    add_1 = mul_1 + mul_4
    mul_5 = mm * add_1
    tl.store(mm_mul_ptr + (offsets), mul_5, None)
# <<< kernel


CONFIG = {'BLOCK_SIZE': 512, 'num_warps': 8, 'num_stages': 1}  # recorded in the run; chosen by the only config


def launch(mm_mul_ptr, addmm_ptr, config=CONFIG):
    """Launch gelu_bwd_kernel of g1_backward on its arguments (outputs are written in place)."""
    grid = (triton.cdiv(4194304, config["BLOCK_SIZE"]),)
    gelu_bwd_kernel[grid](mm_mul_ptr, addmm_ptr, **config)


import os  # noqa: E402  (from here on: the run's arguments and the check, through the extraction's harness.py)
import sys  # noqa: E402

sys.dont_write_bytecode = True  # importing harness.py leaves no __pycache__ in the extraction
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import Tensor, main  # noqa: E402  (tensors, record, check, bench)

# The arguments of gelu_bwd_kernel in g1_backward, as recorded in the real run: each a Tensor (see harness.py) or a value.
ARGUMENTS = {  # a shape, stride or value changed here is the whole edit
    "mm_mul_ptr": Tensor((8, 256, 2048), (524288, 2048, 1), torch.float32),
    "addmm_ptr": Tensor((2048, 2048), (2048, 1), torch.float32),
}
OUTPUTS = ['mm_mul_ptr']  # what the kernel writes: --check compares each


def reference(mm_mul_ptr, addmm_ptr):
    mm = mm_mul_ptr.reshape(2048, 2048)
    addmm = addmm_ptr
    view_18 = torch.ops.aten.reshape.default(mm, [8, 256, 2048])
    view_1 = torch.ops.aten.reshape.default(addmm, [8, 256, 2048])
    mul_3 = torch.ops.aten.mul.Tensor(view_1, 0.7071067811865476)
    erf = torch.ops.aten.erf.default(mul_3)
    add_2 = torch.ops.aten.add.Tensor(erf, 1)
    mul_9 = torch.ops.aten.mul.Tensor(add_2, 0.5)
    mul_10 = torch.ops.aten.mul.Tensor(view_1, view_1)
    mul_11 = torch.ops.aten.mul.Tensor(mul_10, -0.5)
    exp_1 = torch.ops.aten.exp.default(mul_11)
    mul_12 = torch.ops.aten.mul.Tensor(exp_1, 0.3989422804014327)
    mul_13 = torch.ops.aten.mul.Tensor(view_1, mul_12)
    add_7 = torch.ops.aten.add.Tensor(mul_9, mul_13)
    mul_14 = torch.ops.aten.mul.Tensor(view_18, add_7)
    return {"mm_mul_ptr": mul_14}


RECORD = None  # the run's data for this launch (inputs before, outputs after), relative to this file
RECORD_DEVICE = None  # where it was made: outputs match bit for bit there
RECORD_CONFIG = None  # CONFIG as the record was made: with another, the record compares within tolerances
KERNEL_SHA256 = "62868afe1c1c00dafad320fc97e20d8cf0d9cea1d8e988d52c340963720e1fc9"  # of the kernel text as extracted
EXACT_POSSIBLE = True  # False when the result depends on launch order (atomics)
UNCHECKED = {}  # outputs the reference cannot compute, and why (the record still compares them)

if __name__ == "__main__":
    sys.exit(main(globals()))

# Notes on gelu_bwd_kernel of g1_backward:
#     no data recorded for this launch: data not saved: the extraction's cap of 12 MiB is used up (--record-total-
#       cap); --check uses made-up inputs

# Names in gelu_bwd_kernel of g1_backward (this module <- Inductor's output_code.py  [FX node]):
#     gelu_bwd_kernel <- triton_poi_fused_gelu_gelu_backward_view_4, mm_mul_ptr <- in_out_ptr0 [buf11]
#     addmm_ptr <- in_ptr0 [addmm], n_elements <- xnumel, BLOCK_SIZE <- XBLOCK, block_start <- xoffset, offsets <- xindex
#     mm <- tmp0, addmm <- tmp1, const <- tmp2, mul <- tmp3, erf <- tmp4 [erf], one <- tmp5, add <- tmp6, half <- tmp7
#     mul_1 <- tmp8, square <- tmp9, const_1 <- tmp10, mul_2 <- tmp11, exp <- tmp12 [exp_1], const_2 <- tmp13
#     mul_3 <- tmp14, mul_4 <- tmp15, add_1 <- tmp16, mul_5 <- tmp17, offsets <- x0
