"""One training step of torchvision's resnet18 (random init) under autocast: bf16 on the CPU, fp16 + GradScaler on a GPU.

    harvest extract examples/zoo/torchvision_resnet18_train_amp.py

Exercises what an image-classification training loop compiles: the stem's 3x3/2 max-pool (Inductor's low-memory
max-pool with offsets, and its backward's index decode), BatchNorm2d in train mode (batch statistics, the in-place
running_mean/running_var/num_batches_tracked updates), ReLU and residual adds under autocast casts, adaptive average
pooling, cross-entropy forward/backward, and the SGD-with-momentum update (eager); convolutions stay extern.
"""

import torch
import torchvision
from torch.nn import functional as F


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, size, classes, amp_dtype = 64, 224, 1000, torch.float16
    else:
        batch, size, classes, amp_dtype = 2, 32, 10, torch.bfloat16
    model = torchvision.models.resnet18(num_classes=classes).to(device).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler(device, enabled=amp_dtype == torch.float16)
    x = torch.randn(batch, 3, size, size, device=device)
    target = torch.randint(0, classes, (batch,), device=device)

    compiled = torch.compile(model)
    with torch.autocast(device, dtype=amp_dtype):
        loss = F.cross_entropy(compiled(x), target)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()

    assert torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    assert model.bn1.num_batches_tracked.item() == 1
    print(f"torchvision resnet18 on {device} ({amp_dtype}): loss {loss.item():.4f}, one SGD step")


if __name__ == "__main__":
    main()
