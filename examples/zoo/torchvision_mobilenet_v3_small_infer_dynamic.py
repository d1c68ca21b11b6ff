"""Inference with torchvision's mobilenet_v3_small (random init, width 0.5 on the CPU) at two batch sizes, batch dynamic.

    harvest extract examples/zoo/torchvision_mobilenet_v3_small_infer_dynamic.py

Exercises an eval-mode mobile CNN as a serving loop compiles it: BatchNorm2d with running statistics folded into
pointwise kernels, hardswish and hardsigmoid, the squeeze-and-excitation blocks (a spatial mean, a gate multiplied
back over the feature map), adaptive average pooling, dropout off; the batch dimension is marked dynamic, so the
kernels take the batch as a size argument and a second batch size reuses them. Convolutions stay extern.
"""

import torch
import torchvision


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batches, size, width, classes = (32, 48), 224, 1.0, 1000
    else:
        batches, size, width, classes = (2, 3), 32, 0.5, 10
    model = torchvision.models.mobilenet_v3_small(width_mult=width, num_classes=classes).to(device).eval()
    compiled = torch.compile(model)

    with torch.no_grad():
        for batch in batches:
            x = torch.randn(batch, 3, size, size, device=device)
            torch._dynamo.mark_dynamic(x, 0)
            logits = compiled(x)
            expected = model(x)
            assert logits.shape == (batch, classes) and torch.isfinite(logits).all()
            torch.testing.assert_close(logits, expected, rtol=1e-3, atol=1e-3)
    print(f"torchvision mobilenet_v3_small (width {width}) on {device}: batches {batches}, logits match eager")


if __name__ == "__main__":
    main()
