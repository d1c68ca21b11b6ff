"""Inference with transformers' DistilBertForSequenceClassification (random init from a config) at two sequence lengths.

    harvest extract examples/zoo/transformers_distilbert_infer_dynamic.py

Exercises eval-mode encoder serving: embeddings + LayerNorm, SDPA attention with a padding mask, GELU feed-forward,
the pre-classifier ReLU and the [CLS] slice; called at sequence length 16 and then 24, as a server does, so Dynamo
recompiles the second call with a dynamic sequence length (kernels with size arguments). Nothing is downloaded.
"""

import os

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, seqs, dim, layers, heads, vocab = 32, (128, 192), 384, 4, 6, 8192
    else:
        batch, seqs, dim, layers, heads, vocab = 2, (16, 24), 32, 2, 2, 256
    config = DistilBertConfig(vocab_size=vocab, dim=dim, n_layers=layers, n_heads=heads, hidden_dim=4 * dim,
                              max_position_embeddings=64 if device == "cpu" else 512, num_labels=3,
                              attn_implementation="sdpa")
    model = DistilBertForSequenceClassification(config).to(device).eval()
    compiled = torch.compile(model)

    with torch.no_grad():
        for seq in seqs:
            input_ids = torch.randint(0, vocab, (batch, seq), device=device)
            attention_mask = torch.ones(batch, seq, dtype=torch.long, device=device)
            attention_mask[0, seq - 3:] = 0
            logits = compiled(input_ids=input_ids, attention_mask=attention_mask).logits
            expected = model(input_ids=input_ids, attention_mask=attention_mask).logits
            assert logits.shape == (batch, 3) and torch.isfinite(logits).all()
            torch.testing.assert_close(logits, expected, rtol=1e-3, atol=1e-3)
    print(f"transformers DistilBert on {device}: sequence lengths {seqs}, logits match eager")


if __name__ == "__main__":
    main()
