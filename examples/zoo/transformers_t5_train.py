"""One seq2seq training step of transformers' T5ForConditionalGeneration (random init from a config).

    harvest extract examples/zoo/transformers_t5_train.py

Exercises an encoder-decoder: T5's relative position buckets (log of distances, clamps, a bias embedding gather
shared across layers) added to unscaled attention scores, T5's RMS LayerNorm, ReLU feed-forward, dropout, the
decoder's causal self-attention and cross-attention to the encoder output, the shift of labels into decoder inputs
(done by the model), the rescaled tied LM head and a cross-entropy with -100 padding; AdamW's update runs eagerly.
Nothing is downloaded.
"""

import os

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, src, tgt, d_model, layers, heads, vocab = 16, 128, 64, 256, 4, 4, 8192
    else:
        batch, src, tgt, d_model, layers, heads, vocab = 2, 16, 8, 32, 1, 2, 256
    config = T5Config(vocab_size=vocab, d_model=d_model, d_kv=d_model // heads, d_ff=2 * d_model, num_layers=layers,
                      num_decoder_layers=layers, num_heads=heads, relative_attention_num_buckets=8,
                      decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    model = T5ForConditionalGeneration(config).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    input_ids = torch.randint(2, vocab, (batch, src), device=device)
    labels = torch.randint(2, vocab, (batch, tgt), device=device)
    labels[0, tgt - 2:] = -100

    compiled = torch.compile(model)
    loss = compiled(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), labels=labels).loss
    loss.backward()
    opt.step()

    assert torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    print(f"transformers T5 ({layers}+{layers} layers, d_model {d_model}) on {device}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
