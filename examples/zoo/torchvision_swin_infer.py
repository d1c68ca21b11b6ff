"""Inference with torchvision's SwinTransformer (the swin_t class; two stages of embed 16 on the CPU), eval + no_grad.

    harvest extract examples/zoo/torchvision_swin_infer.py

swin_t is SwinTransformer(patch_size=[4, 4], embed_dim=96, depths=[2, 2, 6, 2], num_heads=[3, 6, 12, 24],
window_size=[7, 7]); here two stages of embed 16 with 4x4 windows (on a GPU: swin_t itself). Exercises window
partitioning (pad, view, permute), the cyclic shift (torch.roll) and its attention mask, the relative position bias
gathered from a table, softmax attention, PatchMerging (strided slices + cat + LayerNorm), GELU MLPs and the final
permute/average pool.
"""

import torch
from torchvision.models import swin_transformer


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        model = swin_transformer.swin_t(num_classes=1000)
        batch, size, classes = 32, 224, 1000
    else:
        model = swin_transformer.SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[1, 2],
                                                 window_size=[4, 4], num_classes=10)
        batch, size, classes = 2, 32, 10
    model = model.to(device).eval()
    x = torch.randn(batch, 3, size, size, device=device)

    compiled = torch.compile(model)
    with torch.no_grad():
        logits = compiled(x)
        expected = model(x)
    assert logits.shape == (batch, classes) and torch.isfinite(logits).all()
    torch.testing.assert_close(logits, expected, rtol=1e-3, atol=1e-3)
    print(f"torchvision SwinTransformer on {device}: logits {tuple(logits.shape)} match eager")


if __name__ == "__main__":
    main()
