"""Where the memory-efficient attention forward leaves its dropout seed and offset (H200, issue 24): the device of
each, outside CUDA graph capture, and the backward called with them as they are (it must not crash)."""

import torch

q, k, v = (torch.randn(2, 4, 128, 64, device="cuda", requires_grad=True) for _ in range(3))
out, lse, seed, offset = torch.ops.aten._scaled_dot_product_efficient_attention.default(q, k, v, None, True, 0.1)
print(f"seed on {seed.device} ({seed.dtype}, shape {tuple(seed.shape)}), offset on {offset.device}")
grads = torch.ops.aten._scaled_dot_product_efficient_attention_backward.default(
    torch.ones_like(out), q, k, v, None, out, lse, seed, offset, 0.1, [True, True, True, False])
torch.cuda.synchronize()
print("backward with the forward's own seed and offset: ok,", [tuple(g.shape) for g in grads if g is not None])
