"""A causal-LM training step of transformers' LlamaForCausalLM (random init from a config) with a compiled AdamW step.

    harvest extract examples/zoo/transformers_llama_train_compiled_adamw.py

Exercises a Llama decoder as fine-tuning runs it: RMSNorm forward/backward (fp32 upcast), rotary position
embeddings (cos/sin, rotate_half's slice + neg + cat), grouped-query attention (repeat of key/value heads) through
SDPA with the causal mask, the SwiGLU MLP (SiLU gate times up), the LM head and a shifted cross-entropy; then the
optimizer step is compiled as its own graph (`torch.compile` around `opt.step()`: AdamW, one kernel per parameter on
the CPU, foreach kernels on a GPU) and a second step reuses it. Nothing is downloaded.
"""

import os

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, seq, hidden, layers, heads, kv_heads, vocab = 8, 256, 512, 4, 8, 2, 8192
    else:
        batch, seq, hidden, layers, heads, kv_heads, vocab = 2, 16, 32, 2, 4, 2, 256
    config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=int(2.75 * hidden),
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
                         max_position_embeddings=2 * seq, attn_implementation="sdpa")
    model = LlamaForCausalLM(config).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
    compiled = torch.compile(model)

    @torch.compile
    def opt_step():
        opt.step()

    for _ in range(2):
        input_ids = torch.randint(0, vocab, (batch, seq), device=device)
        loss = compiled(input_ids=input_ids, labels=input_ids).loss
        loss.backward()
        opt_step()
        opt.zero_grad(set_to_none=True)
        assert torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    print(f"transformers Llama ({layers} layers, hidden {hidden}) on {device}: loss {loss.item():.4f} after 2 compiled AdamW steps")


if __name__ == "__main__":
    main()
