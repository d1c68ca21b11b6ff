"""One denoising step of diffusers' UNet2DConditionModel (a Stable-Diffusion-style UNet, random init from a tiny
config) with text conditioning, under autocast, eval + no_grad.

    harvest extract examples/zoo/diffusers_unet2d_condition_infer_amp.py

Exercises what a text-to-image sampler compiles: the timestep embedding, ResnetBlock2D (GroupNorm, SiLU, time
embedding add), Transformer2DModel blocks (GroupNorm, proj_in, self-attention and cross-attention to the text
states through SDPA, GEGLU feed-forward, LayerNorms), down/up sampling with skip concatenation, then classifier-free
guidance (the conditional and unconditional halves of one batch) and diffusers' DDIMScheduler.step outside the
compiled model; bf16 autocast on the CPU, fp16 on a GPU. Nothing is downloaded.
"""

import os

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    from diffusers import DDIMScheduler, UNet2DConditionModel

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, size, channels, text_dim, tokens, groups, amp_dtype = 4, 64, (128, 256), 256, 77, 32, torch.float16
    else:
        batch, size, channels, text_dim, tokens, groups, amp_dtype = 1, 8, (16, 32), 16, 6, 8, torch.bfloat16
    model = UNet2DConditionModel(sample_size=size, in_channels=4, out_channels=4, layers_per_block=1,
                                 block_out_channels=channels, down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                                 up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=text_dim,
                                 attention_head_dim=8, norm_num_groups=groups).to(device).eval()
    scheduler = DDIMScheduler(num_train_timesteps=1000)
    scheduler.set_timesteps(20)
    latents = torch.randn(batch, 4, size, size, device=device)
    text = torch.randn(batch, tokens, text_dim, device=device)
    states = torch.cat([torch.zeros_like(text), text])  # unconditional, conditional
    t = scheduler.timesteps[0]

    compiled = torch.compile(model)
    with torch.no_grad(), torch.autocast(device, dtype=amp_dtype):
        noise = compiled(torch.cat([latents] * 2), t, encoder_hidden_states=states).sample
    uncond, cond = noise.float().chunk(2)
    guided = uncond + 7.5 * (cond - uncond)
    latents = scheduler.step(guided, t, latents).prev_sample

    assert torch.isfinite(latents).all()
    print(f"diffusers UNet2DConditionModel {channels} on {device} ({amp_dtype}): one guided DDIM step, latents {tuple(latents.shape)}")


if __name__ == "__main__":
    main()
