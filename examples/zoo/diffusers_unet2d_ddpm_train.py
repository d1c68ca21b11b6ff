"""One DDPM training step of diffusers' UNet2DModel (random init from a config), the noise-prediction loss.

    harvest extract examples/zoo/diffusers_unet2d_ddpm_train.py

Exercises a diffusion UNet as a DDPM training loop runs it: the sinusoidal timestep embedding (exp, sin/cos, cat) and
its MLP, ResnetBlock2D (GroupNorm, SiLU, the time embedding added per channel, dropout, the residual), attention
blocks over spatial positions (GroupNorm, SDPA), strided-conv downsampling and nearest upsampling with skip
concatenation, then the MSE between predicted and true noise, and the backward; noise is added by diffusers'
DDPMScheduler outside the compiled model; AdamW's update runs eagerly. Nothing is downloaded.
"""

import os

import torch
from torch.nn import functional as F

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    from diffusers import DDPMScheduler, UNet2DModel

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, size, channels, groups = 16, 64, (64, 128, 128), 32
    else:
        batch, size, channels, groups = 2, 16, (16, 32), 8
    down = ("DownBlock2D",) * (len(channels) - 1) + ("AttnDownBlock2D",)
    up = ("AttnUpBlock2D",) + ("UpBlock2D",) * (len(channels) - 1)
    model = UNet2DModel(sample_size=size, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=channels,
                        down_block_types=down, up_block_types=up, norm_num_groups=groups, attention_head_dim=8)
    model = model.to(device).train()
    scheduler = DDPMScheduler(num_train_timesteps=1000)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    images = torch.randn(batch, 3, size, size, device=device)
    noise = torch.randn_like(images)
    timesteps = torch.randint(0, scheduler.config.num_train_timesteps, (batch,), device=device)
    noisy = scheduler.add_noise(images, noise, timesteps)

    compiled = torch.compile(model)
    loss = F.mse_loss(compiled(noisy, timesteps).sample, noise)
    loss.backward()
    opt.step()

    assert torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    print(f"diffusers UNet2DModel {channels} on {device}: DDPM loss {loss.item():.4f}, one AdamW step")


if __name__ == "__main__":
    main()
