"""A causal-LM training step of transformers' Gemma2ForCausalLM (random init from a config), eager attention.

    harvest extract examples/zoo/transformers_gemma2_train.py

Exercises what sets Gemma 2 apart from Llama: the embedding scaled by sqrt(hidden), RMSNorm with (1 + weight), four
norms a layer (pre and post attention, pre and post MLP), alternating sliding-window and global attention layers,
attention-logit soft-capping (tanh(scores / cap) * cap, with eager attention as Gemma 2 asks for), the GeGLU MLP
(tanh-approximate GELU gate), final-logit soft-capping before the cross-entropy, and the backward of all of it; SGD's
update runs eagerly. Nothing is downloaded.
"""

import os

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    from transformers import Gemma2Config, Gemma2ForCausalLM

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, seq, hidden, layers, heads, kv_heads, head_dim, vocab, window = 8, 256, 512, 4, 8, 4, 64, 8192, 128
    else:
        batch, seq, hidden, layers, heads, kv_heads, head_dim, vocab, window = 2, 16, 32, 2, 2, 1, 16, 256, 8
    config = Gemma2Config(vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                          num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=head_dim,
                          max_position_embeddings=2 * seq, sliding_window=window, attn_logit_softcapping=50.0,
                          final_logit_softcapping=30.0, attn_implementation="eager")
    model = Gemma2ForCausalLM(config).to(device).train()
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    input_ids = torch.randint(0, vocab, (batch, seq), device=device)

    compiled = torch.compile(model)
    loss = compiled(input_ids=input_ids, labels=input_ids).loss
    loss.backward()
    opt.step()

    assert torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    print(f"transformers Gemma2 ({layers} layers, hidden {hidden}) on {device}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
