"""One training step of torch.nn.TransformerEncoderLayer (batch_first, dropout 0.1, train mode) under torch.compile.

    harvest extract examples/models/transformer_encoder.py

Exercises Inductor's layer-norm reductions (forward and backward), attention softmax + dropout and their backward
(scaled_dot_product_attention's math decomposition on the CPU path; on a GPU attention may stay a fused extern
kernel), dropout (Philox random numbers generated inside Triton kernels, masks saved for backward), ReLU in the
feed-forward block, residual adds, and the loss out.pow(2).mean() as a full reduction; matmuls stay extern
(mm/bmm/addmm).
"""

import torch
from torch import nn


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, seq, d_model, nhead, ff = 16, 512, 1024, 16, 4096
    else:
        batch, seq, d_model, nhead, ff = 2, 16, 32, 4, 64
    layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=ff, dropout=0.1, batch_first=True).to(device)
    layer.train()
    x = torch.randn(batch, seq, d_model, device=device, requires_grad=True)
    compiled = torch.compile(layer)
    out = compiled(x)
    loss = out.pow(2).mean()
    loss.backward()
    # Dropout makes the compiled and eager results differ (different random streams): check shapes and finiteness.
    assert out.shape == (batch, seq, d_model)
    assert torch.isfinite(loss) and torch.isfinite(x.grad).all()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in layer.parameters())
    print(f"transformer encoder layer on {device}: loss {loss.item():.4f}, backward ok")


if __name__ == "__main__":
    main()
