"""Greedy decoding with transformers' MistralForCausalLM (random init from a config): a prefill, then decode steps
with the KV cache, compiled as a user compiles a model for generation.

    harvest extract examples/zoo/transformers_mistral_decode_infer.py

Exercises sliding-window attention masks, grouped-query SDPA attention, rotary embeddings at growing positions,
RMSNorm and the SwiGLU MLP in eval mode, the KV cache's concatenation of new keys/values, and the greedy argmax;
the decode steps have sequence length 1 and a growing cache (Dynamo marks the cache length dynamic after the first
decode step). Nothing is downloaded.
"""

import os

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    from transformers import MistralConfig, MistralForCausalLM

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, prompt, new_tokens, hidden, layers, heads, kv_heads, vocab, window = 8, 128, 4, 512, 4, 8, 2, 8192, 64
    else:
        batch, prompt, new_tokens, hidden, layers, heads, kv_heads, vocab, window = 2, 12, 3, 32, 2, 4, 2, 256, 8
    config = MistralConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden,
                           num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
                           max_position_embeddings=4 * prompt, sliding_window=window, attn_implementation="sdpa")
    model = MistralForCausalLM(config).to(device).eval()
    compiled = torch.compile(model)
    input_ids = torch.randint(0, vocab, (batch, prompt), device=device)

    with torch.no_grad():
        out = compiled(input_ids=input_ids, use_cache=True)
        tokens = [out.logits[:, -1].argmax(-1, keepdim=True)]
        for _ in range(new_tokens - 1):
            out = compiled(input_ids=tokens[-1], cache=out.cache, use_cache=True)
            tokens.append(out.logits[:, -1].argmax(-1, keepdim=True))
        generated = torch.cat(tokens, dim=1)
        expected = model.generate(input_ids, attention_mask=torch.ones_like(input_ids), max_new_tokens=new_tokens,
                                  do_sample=False, pad_token_id=0)
    assert torch.isfinite(out.logits).all()
    assert torch.equal(generated, expected[:, prompt:]), (generated, expected[:, prompt:])
    print(f"transformers Mistral on {device}: {new_tokens} greedy tokens per sequence match generate(): {generated.tolist()}")


if __name__ == "__main__":
    main()
