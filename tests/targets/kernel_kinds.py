"""Every kind of Inductor Triton kernel the recorder must see, forward and backward, on tiny tensors."""
import torch
import torch.nn.functional as F


def step(x, w, buf, idx):
    h = F.dropout(x @ w, p=0.2, training=True)          # extern mm, then a dropout kernel (seeds, load_seed_offset)
    s = torch.softmax(h, dim=-1)                         # persistent reduction
    total = x.sum()                                      # split reduction (two stages) over many elements
    buf.add_(x[:, :8])                                   # in-place update of a graph input (a view)
    e = F.embedding(idx, w)                              # indirect loads with index bounds
    return (s * 2).sum(dim=0) + total + e.sum(dim=1).sum(), (x.abs() + 1).log().mean(dim=1)


def main():
    torch.manual_seed(0)
    x = torch.randn(64, 4096, requires_grad=True)
    w = torch.randn(4096, 16, requires_grad=True)
    buf = torch.zeros(64, 8)
    idx = torch.randint(0, 4096, (32,))
    out, row_mean = torch.compile(step)(x, w, buf, idx)
    (out.sum() + row_mean.sum()).backward()
    print("ok", float(out.sum()), float(buf.sum()))


if __name__ == "__main__":
    main()
