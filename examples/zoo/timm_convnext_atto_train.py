"""One training step of timm's convnext_atto (timm.create_model, pretrained=False; one block a stage on the CPU).

    harvest extract examples/zoo/timm_convnext_atto_train.py

Built by timm.create_model("convnext_atto", pretrained=False, ...) with depths/dims overridden on the CPU (on a GPU:
convnext_atto itself). convnext_atto uses conv_mlp: the MLP as 1x1 convolutions on NCHW, with timm's LayerNorm2d
(permute, layer_norm, permute back) instead of torchvision's channels-last Linear. Exercises depthwise 7x7 convs
(extern), LayerNorm2d forward/backward, GELU, layer scale (gamma) multiplies, the residual adds, the head's global
average pool + LayerNorm + Linear, cross-entropy; SGD's update runs eagerly. Nothing is downloaded.
"""

import os

import torch
from torch.nn import functional as F

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    import timm

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, size, classes = 64, 224, 1000
        model = timm.create_model("convnext_atto", pretrained=False)
    else:
        batch, size, classes = 2, 32, 10
        model = timm.create_model("convnext_atto", pretrained=False, depths=(1, 1, 1, 1), dims=(16, 24, 32, 48),
                                  num_classes=classes)
    model = model.to(device).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    x = torch.randn(batch, 3, size, size, device=device)
    target = torch.randint(0, classes, (batch,), device=device)

    compiled = torch.compile(model)
    loss = F.cross_entropy(compiled(x), target)
    loss.backward()
    opt.step()

    assert torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    print(f"timm convnext_atto on {device}: loss {loss.item():.4f}, one SGD step")


if __name__ == "__main__":
    main()
