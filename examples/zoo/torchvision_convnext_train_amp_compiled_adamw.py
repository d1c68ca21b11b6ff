"""A training step of torchvision's ConvNeXt (the convnext_tiny design, two small stages on the CPU) under bf16/fp16
autocast, with the AdamW step compiled too.

    harvest extract examples/zoo/torchvision_convnext_train_amp_compiled_adamw.py

Built with torchvision's ConvNeXt class and CNBlockConfig (convnext_tiny is ConvNeXt([96/3, 192/3, 384/9, 768/3]));
on a GPU the real convnext_tiny. Exercises 7x7 depthwise convolutions (extern), channels-last LayerNorm (permute,
LayerNorm over the last dim, permute back) and the LayerNorm2d of the downsampling layers, GELU, the learned layer
scale, stochastic depth, autocast casts, cross-entropy with label smoothing, their backward kernels, and a compiled
`opt.step()` (AdamW, one kernel per parameter on the CPU, foreach kernels on a GPU).
"""

import torch
from torch.nn import functional as F
from torchvision.models import convnext


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        model = convnext.convnext_tiny(num_classes=1000, stochastic_depth_prob=0.1)
        batch, size, classes, amp_dtype = 32, 224, 1000, torch.bfloat16
    else:
        blocks = [convnext.CNBlockConfig(16, 32, 1), convnext.CNBlockConfig(32, None, 1)]
        model = convnext.ConvNeXt(blocks, stochastic_depth_prob=0.1, num_classes=10)
        batch, size, classes, amp_dtype = 2, 16, 10, torch.bfloat16
    model = model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    x = torch.randn(batch, 3, size, size, device=device)
    target = torch.randint(0, classes, (batch,), device=device)

    @torch.compile
    def opt_step():
        opt.step()

    compiled = torch.compile(model)
    with torch.autocast(device, dtype=amp_dtype):
        loss = F.cross_entropy(compiled(x), target, label_smoothing=0.1)
    loss.backward()
    opt_step()
    opt.zero_grad(set_to_none=True)

    assert torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    print(f"torchvision ConvNeXt on {device} ({amp_dtype}): loss {loss.item():.4f}, one compiled AdamW step")


if __name__ == "__main__":
    main()
