"""One training step of a tiny randomly initialised GPT-2 (transformers' GPT2LMHeadModel, no download), train mode.

    harvest extract examples/models/gpt2.py

Exercises a real Hugging Face model under torch.compile: token + position embedding gathers and their scatter-add
backward, layer norms forward/backward, eager attention (causal mask via torch.where, softmax, attention dropout),
residual/attention/MLP dropout (Philox random numbers in Triton), GELU (tanh approximation "gelu_new"), the shifted
cross-entropy loss over the vocabulary and its backward; matmuls (Conv1D addmm, bmm, the tied LM head) stay extern.
"""

import sys

import torch


def main():
    try:
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError as error:
        sys.exit(f"gpt2.py needs transformers (pip install transformers): {error}")

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, seq, n_embd, n_head, vocab, n_positions = 32, 256, 512, 8, 4096, 256
    else:
        batch, seq, n_embd, n_head, vocab, n_positions = 2, 16, 64, 4, 512, 64
    config = GPT2Config(
        vocab_size=vocab, n_positions=n_positions, n_embd=n_embd, n_layer=2, n_head=n_head,
        bos_token_id=vocab - 1, eos_token_id=vocab - 1, attn_implementation="eager",
    )
    model = GPT2LMHeadModel(config).to(device).train()
    input_ids = torch.randint(0, vocab, (batch, seq), device=device)

    compiled = torch.compile(model)
    out = compiled(input_ids=input_ids, labels=input_ids)
    out.loss.backward()
    # Dropout is on (train mode): compiled and eager draw different masks, so check finiteness, not values.
    assert torch.isfinite(out.loss)
    assert all(p.grad is None or torch.isfinite(p.grad).all() for p in model.parameters())
    assert model.transformer.wte.weight.grad is not None
    print(f"GPT-2 (2 layers, n_embd {n_embd}) on {device}: loss {out.loss.item():.4f}, backward ok")


if __name__ == "__main__":
    main()
