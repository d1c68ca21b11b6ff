"""Inference with transformers' ViTForImageClassification (random init from a config), eval + no_grad.

    harvest extract examples/zoo/transformers_vit_classify_infer.py

Exercises the Hugging Face vision encoder path: the patch embedding (extern conv) flattened and transposed, the CLS
token cat and position embeddings, pre-norm LayerNorms, SDPA attention without a mask, GELU MLPs, the final LayerNorm
and the classifier on the CLS token, then a softmax over the classes. Nothing is downloaded.
"""

import os

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    from transformers import ViTConfig, ViTForImageClassification

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, size, patch, hidden, layers, heads, labels = 32, 224, 16, 384, 4, 6, 1000
    else:
        batch, size, patch, hidden, layers, heads, labels = 2, 32, 8, 32, 2, 2, 10
    config = ViTConfig(image_size=size, patch_size=patch, hidden_size=hidden, num_hidden_layers=layers,
                       num_attention_heads=heads, intermediate_size=4 * hidden, num_labels=labels,
                       attn_implementation="sdpa")
    model = ViTForImageClassification(config).to(device).eval()
    pixel_values = torch.randn(batch, 3, size, size, device=device)

    compiled = torch.compile(lambda pixels: model(pixel_values=pixels).logits.softmax(-1))
    with torch.no_grad():
        probs = compiled(pixel_values)
        expected = model(pixel_values=pixel_values).logits.softmax(-1)
    assert probs.shape == (batch, labels) and torch.isfinite(probs).all()
    torch.testing.assert_close(probs, expected, rtol=1e-3, atol=1e-4)
    print(f"transformers ViT on {device}: class probabilities {tuple(probs.shape)} match eager")


if __name__ == "__main__":
    main()
