"""One training step of torchvision's RegNet (the RegNetY design with squeeze-and-excitation; tiny widths on the CPU).

    harvest extract examples/zoo/torchvision_regnet_y_train.py

Built with torchvision's RegNet class and BlockParams.from_init_params, the way regnet_y_400mf() is (on a GPU:
regnet_y_400mf itself). Exercises grouped 3x3 convolutions (extern) between BatchNorm2d layers in train mode (batch
statistics, running-stat updates), ReLU, the SE gate (adaptive average pool, ReLU, sigmoid, broadcast multiply), the
residual adds, cross-entropy and their backward kernels; SGD's update runs eagerly.
"""

import torch
from torch.nn import functional as F
from torchvision.models import regnet


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        model = regnet.regnet_y_400mf(num_classes=1000)
        batch, size, classes = 32, 224, 1000
    else:
        params = regnet.BlockParams.from_init_params(depth=2, w_0=16, w_a=8.0, w_m=2.0, group_width=8, se_ratio=0.25)
        model = regnet.RegNet(params, num_classes=10, stem_width=8)
        batch, size, classes = 2, 16, 10
    model = model.to(device).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-5)
    x = torch.randn(batch, 3, size, size, device=device)
    target = torch.randint(0, classes, (batch,), device=device)

    compiled = torch.compile(model)
    loss = F.cross_entropy(compiled(x), target)
    loss.backward()
    opt.step()

    assert torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    print(f"torchvision RegNetY on {device}: loss {loss.item():.4f}, one SGD step")


if __name__ == "__main__":
    main()
