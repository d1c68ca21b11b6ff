"""One masked-language-model training step of transformers' BertForMaskedLM (random init from a config) under autocast.

    harvest extract examples/zoo/transformers_bert_mlm_train_amp.py

Exercises a BERT encoder as pre-training runs it: word + position + token-type embedding gathers and their
scatter-add backward, embedding LayerNorm and dropout, SDPA attention with a padding mask (the mask built from
attention_mask), GELU (erf) feed-forward, the MLM head's transform (dense, GELU, LayerNorm) and the tied decoder,
cross-entropy over masked positions only (labels -100 elsewhere), bf16 autocast casts on the CPU (fp16 + GradScaler on
a GPU), and the backward of all of it; AdamW's update runs eagerly. Nothing is downloaded.
"""

import os

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, seq, hidden, layers, heads, vocab, amp_dtype = 16, 128, 256, 4, 4, 8192, torch.float16
    else:
        batch, seq, hidden, layers, heads, vocab, amp_dtype = 2, 16, 32, 2, 2, 256, torch.bfloat16
    config = BertConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                        intermediate_size=4 * hidden, max_position_embeddings=2 * seq, attn_implementation="sdpa")
    model = BertForMaskedLM(config).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler(device, enabled=amp_dtype == torch.float16)
    input_ids = torch.randint(5, vocab, (batch, seq), device=device)
    attention_mask = torch.ones(batch, seq, dtype=torch.long, device=device)
    attention_mask[1:, seq - seq // 4:] = 0  # the second sequence is padded
    labels = torch.full_like(input_ids, -100)
    masked = torch.rand(batch, seq, device=device) < 0.3
    labels[masked] = input_ids[masked]

    compiled = torch.compile(model)
    with torch.autocast(device, dtype=amp_dtype):
        loss = compiled(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()

    assert torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    print(f"transformers BertForMaskedLM ({layers} layers, hidden {hidden}) on {device} ({amp_dtype}): loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
