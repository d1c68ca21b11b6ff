"""One training step of torchvision's EfficientNet-B0 layout (random init; width and depth scaled down on the CPU).

    harvest extract examples/zoo/torchvision_efficientnet_b0_train.py

Built with torchvision's own EfficientNet-B0 configuration (`_efficientnet_conf("efficientnet_b0", ...)`, the
function `efficientnet_b0()` calls) at width/depth multipliers 0.25 on the CPU. Exercises MBConv blocks in train
mode: depthwise convolutions (extern), BatchNorm2d batch statistics and running-stat updates, SiLU, the
squeeze-and-excitation gate (mean, SiLU, sigmoid, broadcast multiply), stochastic depth (a per-sample Bernoulli mask),
classifier dropout, cross-entropy, and all of their backward kernels; Adam's update runs eagerly.
"""

import torch
from torch.nn import functional as F
from torchvision.models import efficientnet


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, size, width, depth, classes = 32, 224, 1.0, 1.0, 1000
    else:
        batch, size, width, depth, classes = 2, 32, 0.25, 0.25, 10
    setting, last_channel = efficientnet._efficientnet_conf("efficientnet_b0", width_mult=width, depth_mult=depth)
    model = efficientnet.EfficientNet(setting, dropout=0.2, num_classes=classes, last_channel=last_channel)
    model = model.to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(batch, 3, size, size, device=device)
    target = torch.randint(0, classes, (batch,), device=device)

    compiled = torch.compile(model)
    loss = F.cross_entropy(compiled(x), target)
    loss.backward()
    opt.step()

    assert torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    print(f"torchvision EfficientNet-B0 (width {width}, depth {depth}) on {device}: loss {loss.item():.4f}, one Adam step")


if __name__ == "__main__":
    main()
