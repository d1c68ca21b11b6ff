"""One training step of diffusers' AutoencoderKL (the VAE of latent diffusion; random init from a tiny config).

    harvest extract examples/zoo/diffusers_autoencoder_kl_train.py

Exercises the VAE: the encoder's ResnetBlock2D stacks (GroupNorm, SiLU, residual), strided downsampling (with its
asymmetric pad), the mid-block attention over spatial positions, the diagonal Gaussian posterior (chunk into mean and
log-variance, clamp, exp, the reparameterised sample with randn), the decoder with nearest upsampling, then an L1
reconstruction loss plus the KL term, and the backward; Adam's update runs eagerly. Nothing is downloaded.
"""

import os

import torch
from torch.nn import functional as F

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    from diffusers import AutoencoderKL

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, size, channels, groups = 8, 128, (64, 128, 256), 32
    else:
        batch, size, channels, groups = 2, 16, (16, 32), 8
    model = AutoencoderKL(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * len(channels),
                          up_block_types=("UpDecoderBlock2D",) * len(channels), block_out_channels=channels,
                          layers_per_block=1, latent_channels=4, norm_num_groups=groups, sample_size=size)
    model = model.to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    images = torch.rand(batch, 3, size, size, device=device) * 2 - 1

    def vae_loss(x):
        posterior = model.encode(x).latent_dist
        reconstruction = model.decode(posterior.sample()).sample
        return F.l1_loss(reconstruction, x) + 1e-6 * posterior.kl().mean()

    loss = torch.compile(vae_loss)(images)
    loss.backward()
    opt.step()

    assert torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    print(f"diffusers AutoencoderKL {channels} on {device}: loss {loss.item():.4f}, one Adam step")


if __name__ == "__main__":
    main()
