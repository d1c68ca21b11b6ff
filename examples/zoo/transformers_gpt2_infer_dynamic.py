"""Inference with transformers' GPT2LMHeadModel (random init from a config), SDPA attention, two prompt lengths.

    harvest extract examples/zoo/transformers_gpt2_infer_dynamic.py

Exercises a decoder's prefill as a server compiles it: token + position embedding gathers, pre-norm LayerNorms,
causal SDPA attention with a padding mask (left padding of one prompt), "gelu_new" (tanh) MLPs, the final LayerNorm
and the tied LM head, then a next-token argmax; the second call has another prompt length, so Dynamo recompiles it
with a dynamic sequence length. Nothing is downloaded.
"""

import os

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, seqs, n_embd, layers, heads, vocab = 16, (128, 160), 512, 4, 8, 8192
    else:
        batch, seqs, n_embd, layers, heads, vocab = 2, (16, 12), 32, 2, 2, 256
    config = GPT2Config(vocab_size=vocab, n_positions=64 if device == "cpu" else 512, n_embd=n_embd, n_layer=layers,
                        n_head=heads, bos_token_id=vocab - 1, eos_token_id=vocab - 1, attn_implementation="sdpa")
    model = GPT2LMHeadModel(config).to(device).eval()
    compiled = torch.compile(model)

    with torch.no_grad():
        for seq in seqs:
            input_ids = torch.randint(0, vocab - 1, (batch, seq), device=device)
            attention_mask = torch.ones(batch, seq, dtype=torch.long, device=device)
            attention_mask[1, :3] = 0  # left padding
            logits = compiled(input_ids=input_ids, attention_mask=attention_mask).logits
            expected = model(input_ids=input_ids, attention_mask=attention_mask).logits
            next_token = logits[:, -1].argmax(-1)
            assert logits.shape == (batch, seq, vocab) and torch.isfinite(logits).all()
            torch.testing.assert_close(logits, expected, rtol=1e-3, atol=1e-3)
    print(f"transformers GPT-2 on {device}: prompt lengths {seqs}, logits match eager, next tokens {next_token.tolist()}")


if __name__ == "__main__":
    main()
