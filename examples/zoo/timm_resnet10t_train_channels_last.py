"""One training step of timm's resnet10t (timm.create_model, pretrained=False) in channels-last memory format.

    harvest extract examples/zoo/timm_resnet10t_train_channels_last.py

resnet10t: a tiered 3-conv stem, a 3x3/2 max-pool, one BasicBlock a stage with average-pool downsampling in the
shortcut ("t" variant). Model and input are converted to torch.channels_last, as vision training scripts do, so the
BatchNorm2d (train mode) reductions, ReLU, max-pool and residual kernels see NHWC strides; cross-entropy and the
backward of all of it; SGD's update runs eagerly. Nothing is downloaded.
"""

import os

import torch
from torch.nn import functional as F

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    import timm

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    batch, size, classes = (64, 224, 1000) if device == "cuda" else (2, 32, 10)
    model = timm.create_model("resnet10t", pretrained=False, num_classes=classes)
    model = model.to(device).to(memory_format=torch.channels_last).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    x = torch.randn(batch, 3, size, size, device=device).to(memory_format=torch.channels_last)
    target = torch.randint(0, classes, (batch,), device=device)

    compiled = torch.compile(model)
    loss = F.cross_entropy(compiled(x), target)
    loss.backward()
    opt.step()

    assert torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    print(f"timm resnet10t (channels_last) on {device}: loss {loss.item():.4f}, one SGD step")


if __name__ == "__main__":
    main()
