"""One seq2seq training step of transformers' BartForConditionalGeneration (random init from a config) under autocast.

    harvest extract examples/zoo/transformers_bart_train_amp.py

Exercises BART's encoder-decoder under bf16 autocast on the CPU (fp16 + GradScaler on a GPU): learned positional
embeddings with their offset, post-norm LayerNorms, GELU feed-forward, SDPA self-attention (padding mask in the
encoder, causal in the decoder) and cross-attention, the decoder inputs shifted from the labels, the final-logits bias
add and the cross-entropy, with the backward; AdamW's update runs eagerly. Nothing is downloaded.
"""

import os

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    from transformers import BartConfig, BartForConditionalGeneration

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, src, tgt, d_model, layers, heads, vocab, amp_dtype = 16, 128, 64, 256, 3, 4, 8192, torch.float16
    else:
        batch, src, tgt, d_model, layers, heads, vocab, amp_dtype = 2, 16, 8, 32, 1, 2, 256, torch.bfloat16
    config = BartConfig(vocab_size=vocab, d_model=d_model, encoder_layers=layers, decoder_layers=layers,
                        encoder_attention_heads=heads, decoder_attention_heads=heads, encoder_ffn_dim=2 * d_model,
                        decoder_ffn_dim=2 * d_model, max_position_embeddings=2 * src, attn_implementation="sdpa")
    model = BartForConditionalGeneration(config).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler(device, enabled=amp_dtype == torch.float16)
    input_ids = torch.randint(4, vocab, (batch, src), device=device)
    input_ids[1, src - 3:] = config.pad_token_id
    attention_mask = (input_ids != config.pad_token_id).long()
    labels = torch.randint(4, vocab, (batch, tgt), device=device)

    compiled = torch.compile(model)
    with torch.autocast(device, dtype=amp_dtype):
        loss = compiled(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()

    assert torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    print(f"transformers BART ({layers}+{layers} layers, d_model {d_model}) on {device} ({amp_dtype}): loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
