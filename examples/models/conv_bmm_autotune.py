"""A convolution stem and a batched attention-score matmul compiled with mode="max-autotune-no-cudagraphs", with
Triton as the only matmul and convolution backend, one training step.

    harvest extract examples/models/conv_bmm_autotune.py

On a GPU the convolutions become Inductor's Triton convolution template (triton_tem_fused_convolution_*) and the
batched matmuls its bmm template, each with what fused into it as an epilogue (the bias and ReLU, the scale). On
the CPU Triton path they stay ATen calls (tests/test_kernel_kinds.py checks a bmm template on that path).
"""

import copy

import torch
import torch._inductor.config as inductor_config
from torch import nn


class ConvAttention(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.stem = nn.Conv2d(3, channels, 3, padding=1)
        self.mix = nn.Conv2d(channels, channels, 1)

    def forward(self, images):
        x = torch.relu(self.stem(images))
        x = self.mix(x)
        tokens = x.flatten(2)  # (batch, channels, pixels)
        scores = torch.bmm(tokens.transpose(1, 2), tokens) * tokens.shape[1] ** -0.5
        return torch.bmm(tokens, scores.softmax(-1))


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    batch, channels, side = (8, 64, 16) if device == "cuda" else (2, 16, 4)  # (autotuning each template takes a while)
    model = ConvAttention(channels).to(device)
    reference = copy.deepcopy(model)
    images = torch.randn(batch, 3, side, side, device=device)
    # Triton only: with cuBLAS and cuDNN in the race they often win, and the templates would not be the kernels
    # (on a CPU, ATen: its Triton path has no convolution template, and a 1x1 convolution lowered to a matmul there
    # has no Triton matmul choice either)
    backends = "TRITON" if device == "cuda" else "ATEN"
    with inductor_config.patch(max_autotune_gemm_backends=backends, max_autotune_conv_backends=backends):
        out = torch.compile(model, mode="max-autotune-no-cudagraphs")(images)
        out.pow(2).mean().backward()
    expected = reference(images)
    expected.pow(2).mean().backward()
    torch.testing.assert_close(out, expected, rtol=1e-2, atol=1e-2)  # (TF32 allowed in the templates' dots)
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-2, atol=1e-2 * q.grad.abs().max().item())
    print(f"max-autotune conv + bmm on {device}: {batch}x{channels}x{side}x{side}, output and grads match eager")


if __name__ == "__main__":
    main()
