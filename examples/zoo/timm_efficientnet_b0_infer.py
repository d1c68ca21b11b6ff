"""Inference with timm's efficientnet_b0 (timm.create_model, pretrained=False), eval + no_grad, 32x32 images on the CPU.

    harvest extract examples/zoo/timm_efficientnet_b0_infer.py

timm's own EfficientNet (not torchvision's): BatchNormAct2d layers (eval-mode batch norm with the activation fused in
by timm, then by Inductor), SiLU, depthwise-separable and inverted-residual blocks with timm's SqueezeExcite (mean,
reduce conv, SiLU, expand conv, sigmoid gate), the 1280-channel head, SelectAdaptivePool2d and the classifier, then a
softmax. Nothing is downloaded.
"""

import os

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    import timm

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    batch, size, classes = (64, 224, 1000) if device == "cuda" else (2, 32, 10)
    model = timm.create_model("efficientnet_b0", pretrained=False, num_classes=classes).to(device).eval()
    x = torch.randn(batch, 3, size, size, device=device)

    compiled = torch.compile(lambda images: model(images).softmax(-1))
    with torch.no_grad():
        probs = compiled(x)
        expected = model(x).softmax(-1)
    assert probs.shape == (batch, classes) and torch.isfinite(probs).all()
    torch.testing.assert_close(probs, expected, rtol=1e-3, atol=1e-4)
    print(f"timm efficientnet_b0 on {device}: class probabilities {tuple(probs.shape)} match eager")


if __name__ == "__main__":
    main()
