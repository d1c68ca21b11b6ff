"""One training step of torchvision's VisionTransformer (the vit_b_16 class; 2 layers, hidden 32 on the CPU).

    harvest extract examples/zoo/torchvision_vit_train.py

vit_b_16 is VisionTransformer(image_size=224, patch_size=16, num_layers=12, num_heads=12, hidden_dim=768, ...); here the
same class at a size the Triton interpreter runs in seconds (on a GPU: 224 px, patch 16, 4 layers, hidden 384).
Exercises the patch embedding's reshape/permute, the class token cat, the position-embedding add, pre-norm LayerNorm
forward/backward, nn.MultiheadAttention in train mode (in-projection split, scaled dot-product attention, dropout),
GELU MLP, the class-token slice, cross-entropy; SGD's update runs eagerly.
"""

import torch
from torch.nn import functional as F
from torchvision.models.vision_transformer import VisionTransformer


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, size, patch, layers, heads, hidden, classes = 32, 224, 16, 4, 6, 384, 1000
    else:
        batch, size, patch, layers, heads, hidden, classes = 2, 32, 8, 2, 2, 32, 10
    model = VisionTransformer(image_size=size, patch_size=patch, num_layers=layers, num_heads=heads,
                              hidden_dim=hidden, mlp_dim=4 * hidden, dropout=0.1, num_classes=classes)
    model = model.to(device).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 3, size, size, device=device)
    target = torch.randint(0, classes, (batch,), device=device)

    compiled = torch.compile(model)
    loss = F.cross_entropy(compiled(x), target)
    loss.backward()
    opt.step()

    assert torch.isfinite(loss)
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    print(f"torchvision VisionTransformer ({layers} layers, hidden {hidden}) on {device}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
