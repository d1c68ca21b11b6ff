"""Kernels whose config Inductor fixed at compile time (triton_heuristics.fixed_config): no autotuning.

    harvest extract examples/models/fixed_config.py

A choices handler (torch._inductor.choices.InductorChoices, installed with V.set_choices_handler) can hand every
Triton kernel a FixedTritonConfig: its block sizes (and num_warps) are then written into the decorator,
`@triton_heuristics.fixed_config(config={...})`, and no other config is tried. Here: a row softmax and a GELU,
with 4 rows a program, 256 columns a loop step and 2 warps. Checked against eager.
"""

import torch
from torch._inductor.choices import InductorChoices
from torch._inductor.codegen.triton import FixedTritonConfig
from torch._inductor.virtualized import V


class FixedBlocks(InductorChoices):
    def triton_kernel_kwargs(self, kernel_cls, features, groups, kernel_kwargs):
        reduction = features.is_reduction()
        config = {"XBLOCK": 4, "R0_BLOCK": 256, "num_warps": 2} if reduction else {"XBLOCK": 256, "num_warps": 2}
        return {**kernel_kwargs, "override_persistent_reduction": False, "fixed_config": FixedTritonConfig(config)}


def softmax_gelu(x, w):
    return torch.softmax(x * w, dim=-1), torch.nn.functional.gelu(x + w)


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(64, 1000, device=device)
    w = torch.randn(1000, device=device)
    with V.set_choices_handler(FixedBlocks()):
        got = torch.compile(softmax_gelu)(x, w)
    for a, b in zip(got, softmax_gelu(x, w)):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    print(f"fixed configs on {device}: a softmax and a GELU of 64 x 1000 match eager")


if __name__ == "__main__":
    main()
