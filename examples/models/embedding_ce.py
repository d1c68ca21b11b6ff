"""One training step of a tiny language-model head: nn.Embedding -> Linear LM head -> F.cross_entropy.

    harvest extract examples/models/embedding_ce.py

Exercises Inductor's embedding gather (indirect loads), the log-softmax reductions over the vocabulary (max, sum of
exp) fused with cross-entropy's gather of the target logit, ignore_index masking and label smoothing (an extra
mean-over-vocab reduction), the loss mean over non-ignored tokens, the softmax backward, and the embedding backward
(embedding_dense_backward: a zero fill plus an index scatter-add with atomic adds); the LM-head matmul stays extern.
"""

import copy

import torch
from torch import nn
from torch.nn import functional as F

IGNORE = -100


class TinyLM(nn.Module):
    def __init__(self, vocab: int, dim: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens, labels):
        logits = self.head(torch.tanh(self.embed(tokens)))
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=IGNORE, label_smoothing=0.1)


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    batch, seq, vocab, dim = (16, 256, 8192, 256) if device == "cuda" else (2, 16, 256, 32)
    model = TinyLM(vocab, dim).to(device).train()
    reference = copy.deepcopy(model)
    tokens = torch.randint(0, vocab, (batch, seq), device=device)
    labels = torch.roll(tokens, -1, dims=1)
    labels[:, -1] = IGNORE  # no next token for the last position
    labels[0, :3] = IGNORE  # and some padding

    compiled = torch.compile(model)
    loss = compiled(tokens, labels)
    loss.backward()
    expected = reference(tokens, labels)
    expected.backward()
    torch.testing.assert_close(loss, expected, rtol=1e-4, atol=1e-4)
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
    print(f"embedding + cross-entropy on {device}: loss {loss.item():.4f}, grads match eager")


if __name__ == "__main__":
    main()
