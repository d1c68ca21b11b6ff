"""One fine-tuning step of transformers' RobertaForSequenceClassification (random init from a config), fp32.

    harvest extract examples/zoo/transformers_roberta_classify_train.py

Exercises RoBERTa's position ids computed from the input (cumsum over the non-pad mask, offset by padding_idx), the
embeddings' LayerNorm and dropout, eager attention (softmax over scores with an additive padding mask, attention
dropout), GELU feed-forward, the classification head (the <s> token, dense, tanh, dropout, out_proj) and a
cross-entropy over 3 labels, with its backward; AdamW's update runs eagerly. Nothing is downloaded.
"""

import os

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    from transformers import RobertaConfig, RobertaForSequenceClassification

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, seq, hidden, layers, heads, vocab = 16, 128, 256, 4, 4, 8192
    else:
        batch, seq, hidden, layers, heads, vocab = 2, 16, 32, 2, 2, 256
    config = RobertaConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                           intermediate_size=4 * hidden, max_position_embeddings=seq + 2, num_labels=3,
                           pad_token_id=1, attn_implementation="eager")
    model = RobertaForSequenceClassification(config).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=0.01)
    input_ids = torch.randint(3, vocab, (batch, seq), device=device)
    input_ids[0, seq - 4:] = config.pad_token_id
    attention_mask = (input_ids != config.pad_token_id).long()
    labels = torch.randint(0, 3, (batch,), device=device)

    compiled = torch.compile(model)
    loss = compiled(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
    loss.backward()
    opt.step()

    assert torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    print(f"transformers RobertaForSequenceClassification on {device}: loss {loss.item():.4f}, one AdamW step")


if __name__ == "__main__":
    main()
