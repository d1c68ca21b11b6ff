"""A causal-LM training step of transformers' Qwen2ForCausalLM (random init from a config) under autocast.

    harvest extract examples/zoo/transformers_qwen2_train_amp.py

Exercises Qwen2's decoder under bf16 autocast (fp16 + GradScaler on a GPU): q/k/v projections with bias, rotary
embeddings, grouped-query SDPA attention with the causal mask, RMSNorm's fp32 upcast and cast back, SwiGLU, the LM
head, a shifted cross-entropy in fp32, and the backward of all of it with the casts autocast inserts; AdamW's
update runs eagerly. Nothing is downloaded.
"""

import os

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, seq, hidden, layers, heads, kv_heads, vocab, amp_dtype = 8, 256, 512, 4, 8, 2, 8192, torch.float16
    else:
        batch, seq, hidden, layers, heads, kv_heads, vocab, amp_dtype = 2, 16, 32, 2, 4, 2, 256, torch.bfloat16
    config = Qwen2Config(vocab_size=vocab, hidden_size=hidden, intermediate_size=3 * hidden, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=kv_heads, max_position_embeddings=2 * seq,
                         tie_word_embeddings=True, attn_implementation="sdpa")
    model = Qwen2ForCausalLM(config).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler(device, enabled=amp_dtype == torch.float16)
    input_ids = torch.randint(0, vocab, (batch, seq), device=device)

    compiled = torch.compile(model)
    with torch.autocast(device, dtype=amp_dtype):
        loss = compiled(input_ids=input_ids, labels=input_ids).loss
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()

    assert torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    print(f"transformers Qwen2 ({layers} layers, hidden {hidden}) on {device} ({amp_dtype}): loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
