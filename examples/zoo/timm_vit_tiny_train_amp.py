"""One training step of timm's vit_tiny_patch16_224 (timm.create_model, pretrained=False; shrunk on the CPU) under
autocast.

    harvest extract examples/zoo/timm_vit_tiny_train_amp.py

Built by timm.create_model("vit_tiny_patch16_224", pretrained=False, ...) with img_size/patch_size/depth/embed_dim
overridden on the CPU (on a GPU: the real vit_tiny at 224 px). Exercises timm's ViT: PatchEmbed (extern conv, flatten,
transpose), class token + position embedding, pre-norm blocks with fused-qkv attention through F.scaled_dot_product_attention,
GELU MLPs, drop path (stochastic depth), the head's token pooling, label-smoothed cross-entropy, bf16 autocast casts on
the CPU (fp16 + GradScaler on a GPU) and the backward; AdamW's update runs eagerly. Nothing is downloaded.
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
        batch, size, classes, amp_dtype = 64, 224, 1000, torch.float16
        model = timm.create_model("vit_tiny_patch16_224", pretrained=False, drop_path_rate=0.1)
    else:
        batch, size, classes, amp_dtype = 2, 32, 10, torch.bfloat16
        model = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=size, patch_size=8, depth=2,
                                  embed_dim=32, num_heads=2, num_classes=classes, drop_path_rate=0.1)
    model = model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    scaler = torch.amp.GradScaler(device, enabled=amp_dtype == torch.float16)
    x = torch.randn(batch, 3, size, size, device=device)
    target = torch.randint(0, classes, (batch,), device=device)

    compiled = torch.compile(model)
    with torch.autocast(device, dtype=amp_dtype):
        loss = F.cross_entropy(compiled(x), target, label_smoothing=0.1)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()

    assert torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    print(f"timm vit_tiny_patch16_224 on {device} ({amp_dtype}): loss {loss.item():.4f}, one AdamW step")


if __name__ == "__main__":
    main()
