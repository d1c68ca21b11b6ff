"""A token-type embedding added before a LayerNorm, one training step: Inductor fuses the norm's backward with the
embedding's backward, which adds every position's gradient into one of two rows with tl.atomic_add (BERT's shape).
The loss weighs the norm's output with random values, so the embedding's gradient is of the order of 10."""
import torch


def main():
    torch.manual_seed(0)
    embedding, norm = torch.nn.Embedding(2, 32), torch.nn.LayerNorm(32)
    ids = torch.randint(0, 2, (4, 16))
    x = torch.randn(4, 16, 32, requires_grad=True)
    weights = torch.randn(4, 16, 32) * 4

    def step(x, ids):
        return (norm(x + embedding(ids)) * weights).sum()

    torch.compile(step)(x, ids).backward()
    print("ok", float(embedding.weight.grad.abs().amax()))


if __name__ == "__main__":
    main()
