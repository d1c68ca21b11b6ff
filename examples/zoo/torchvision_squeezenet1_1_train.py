"""One training step of torchvision's squeezenet1_1 (random init, 10 classes), as torchvision builds it.

    harvest extract examples/zoo/torchvision_squeezenet1_1_train.py

Exercises ceil-mode 3x3/2 max-pooling (three of them, and their backward), the Fire modules' concatenation of two
ReLU'd expand branches, classifier dropout, the final 1x1-conv + ReLU + adaptive average pool head and cross-entropy;
convolutions stay extern, SGD's update runs eagerly. No BatchNorm: a plain ReLU/max-pool CNN.
"""

import torch
import torchvision
from torch.nn import functional as F


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    batch, size, classes = (64, 224, 1000) if device == "cuda" else (2, 32, 10)
    model = torchvision.models.squeezenet1_1(num_classes=classes).to(device).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 3, size, size, device=device)
    target = torch.randint(0, classes, (batch,), device=device)

    compiled = torch.compile(model)
    loss = F.cross_entropy(compiled(x), target)
    loss.backward()
    opt.step()

    assert torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    print(f"torchvision squeezenet1_1 on {device}: loss {loss.item():.4f}, one SGD step")


if __name__ == "__main__":
    main()
