"""Inference with torchvision's shufflenet_v2_x0_5 (random init) compiled with dynamic=True, at two batch sizes.

    harvest extract examples/zoo/torchvision_shufflenet_v2_infer_dynamic.py

Exercises the channel shuffle (view, transpose, contiguous copy, view back), channel split (chunk) and cat of the
two branches, eval-mode BatchNorm2d folded into pointwise kernels with ReLU, the stem's max-pool and the global mean
over H and W; `torch.compile(dynamic=True)` makes batch and sizes symbolic (kernels take `ks0`-style size arguments).
"""

import torch
import torchvision


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    batches, size, classes = ((32, 48), 224, 1000) if device == "cuda" else ((2, 3), 32, 10)
    model = torchvision.models.shufflenet_v2_x0_5(num_classes=classes).to(device).eval()
    compiled = torch.compile(model, dynamic=True)

    with torch.no_grad():
        for batch in batches:
            x = torch.randn(batch, 3, size, size, device=device)
            logits = compiled(x)
            assert logits.shape == (batch, classes) and torch.isfinite(logits).all()
            torch.testing.assert_close(logits, model(x), rtol=1e-3, atol=1e-3)
    print(f"torchvision shufflenet_v2_x0_5 on {device}: batches {batches}, logits match eager")


if __name__ == "__main__":
    main()
