"""One training step of a pre-norm TransformerEncoderLayer (norm_first=True, dropout 0.1, train mode), compiled.

    harvest extract examples/models/encoder_norm_first.py

Pre-norm puts each dropout right before a residual add, so Inductor fuses the dropout mask, the scale and the add
into one kernel that stores both the sum and the mask (a bool buffer kept for backward): the kernel whose mask the
eager reference must draw exactly as Inductor's Philox stream does, or leave to the record.
"""

import torch
from torch import nn


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, seq, d_model, nhead, ff = 8, 256, 512, 8, 2048
    else:
        batch, seq, d_model, nhead, ff = 2, 16, 32, 4, 64
    layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=ff, dropout=0.1, batch_first=True,
                                       norm_first=True).to(device)
    layer.train()
    x = torch.randn(batch, seq, d_model, device=device, requires_grad=True)
    out = torch.compile(layer)(x)
    loss = out.pow(2).mean()
    loss.backward()
    # Dropout draws other random numbers than eager does: check shapes and finiteness, not values.
    assert out.shape == (batch, seq, d_model)
    assert torch.isfinite(loss) and torch.isfinite(x.grad).all()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in layer.parameters())
    print(f"pre-norm encoder layer on {device}: loss {loss.item():.4f}, backward ok")


if __name__ == "__main__":
    main()
