"""A causal-LM training step of transformers' MixtralForCausalLM (random init from a config): a sparse MoE with its
router's load-balancing loss.

    harvest extract examples/zoo/transformers_mixtral_moe_train.py

Exercises a mixture-of-experts decoder: the router (linear, softmax in fp32, top-2 selection, renormalised weights),
the experts through transformers' "batched_mm" implementation (each token's chosen experts' weights gathered, batched
matmuls, SiLU gate times up, the weighted sum over its experts), the auxiliary load-balancing loss (one-hot of the
selected experts, means over tokens), RMSNorm, rotary SDPA attention, and the backward of all of it (index
gathers become scatter-adds); Adam's update runs eagerly. Nothing is downloaded.
"""

import os

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    from transformers import MixtralConfig, MixtralForCausalLM

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, seq, hidden, layers, heads, kv_heads, experts, vocab = 8, 128, 256, 2, 8, 2, 8, 8192
    else:
        batch, seq, hidden, layers, heads, kv_heads, experts, vocab = 2, 16, 32, 1, 4, 2, 4, 256
    config = MixtralConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                           num_attention_heads=heads, num_key_value_heads=kv_heads, num_local_experts=experts,
                           num_experts_per_tok=2, max_position_embeddings=2 * seq, router_aux_loss_coef=0.02,
                           output_router_logits=True, attn_implementation="sdpa", experts_implementation="batched_mm")
    model = MixtralForCausalLM(config).to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    input_ids = torch.randint(0, vocab, (batch, seq), device=device)

    compiled = torch.compile(model)
    out = compiled(input_ids=input_ids, labels=input_ids)
    out.loss.backward()
    opt.step()

    assert torch.isfinite(out.loss) and torch.isfinite(out.aux_loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    print(f"transformers Mixtral ({experts} experts, top-2) on {device}: loss {out.loss.item():.4f}, aux {out.aux_loss.item():.4f}")


if __name__ == "__main__":
    main()
