"""One class-conditional diffusion training step of diffusers' DiTTransformer2DModel (random init from a config).

    harvest extract examples/zoo/diffusers_dit_train.py

Exercises a DiT: the latent patch embedding (extern conv, flatten, transpose) with fixed 2-D sin-cos position
embeddings, the timestep + class-label embedding (with class dropout in train mode), adaLN-Zero (shift, scale and
gate from the conditioning for attention and MLP: LayerNorm without affine, x * (1 + scale) + shift, gated residuals),
SDPA self-attention, tanh-GELU MLPs, the final modulation and the unpatchify (reshape + einsum permute), then an
MSE noise loss and the backward; AdamW's update runs eagerly. Nothing is downloaded.
"""

import os

import torch
from torch.nn import functional as F

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    from diffusers import DiTTransformer2DModel

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, size, heads, head_dim, layers, classes = 32, 32, 6, 64, 4, 1000
    else:
        batch, size, heads, head_dim, layers, classes = 2, 8, 2, 16, 2, 10
    model = DiTTransformer2DModel(num_attention_heads=heads, attention_head_dim=head_dim, in_channels=4,
                                  num_layers=layers, sample_size=size, patch_size=2, num_embeds_ada_norm=classes)
    model = model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0)
    latents = torch.randn(batch, 4, size, size, device=device)
    noise = torch.randn_like(latents)
    timesteps = torch.randint(0, 1000, (batch,), device=device)
    labels = torch.randint(0, classes, (batch,), device=device)
    alpha = (1 - timesteps.float() / 1000).view(-1, 1, 1, 1)
    noisy = alpha.sqrt() * latents + (1 - alpha).sqrt() * noise

    compiled = torch.compile(model)
    prediction = compiled(noisy, timestep=timesteps, class_labels=labels).sample
    loss = F.mse_loss(prediction, noise)
    loss.backward()
    opt.step()

    assert torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    print(f"diffusers DiTTransformer2DModel ({layers} layers, {heads}x{head_dim}) on {device}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
