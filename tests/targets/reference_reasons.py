"""Every reason the comment-built reference failed on unseen models, on tiny tensors, forward and backward: tuple
outputs (chunk, var_mean, dropout, group and batch norm), buffers reused in place, index_put / scatter_add and dtype
conversions, an extern matmul's output read by a kernel, split reductions, and Inductor's random numbers."""
import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(32, 64)
        self.conv = nn.Conv2d(4, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.gn = nn.GroupNorm(2, 8)
        self.drop = nn.Dropout(0.2)

    def forward(self, x, img):
        a, b = self.lin(x).chunk(2, dim=-1)                  # extern addmm, a tuple split into two kernels' inputs
        h = self.drop(a * torch.sigmoid(b))                  # Inductor's random numbers (the dropout mask)
        var, mean = torch.var_mean(h, dim=-1, keepdim=True)  # a tuple reduction
        y = (h - mean) * torch.rsqrt(var + 1e-5)
        g = self.gn(F.relu(self.bn(self.conv(img))))         # batch norm's two-pass statistics, group norm's tuple
        return y.sum() + g.square().mean()


def scatter(x, idx, v):
    y = x.clone()
    y.index_put_((idx,), v, accumulate=True)                 # a buffer one kernel fills and another scatters into
    z = torch.zeros(8, 4, device=x.device).scatter_add(0, idx[:, None].expand(-1, 4), v)
    return y.relu().bfloat16().float() + z.sum()             # dtype conversions


def update(x, buf):
    buf.add_(x.sum(0))                                       # a split reduction into an in-place graph input
    head = x[:16]
    return torch.relu(head @ head.t()) + 1                   # an extern mm's output updated in place


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"  # on a CPU, harvest compiles Triton kernels too
    block = Block().to(device)
    x = torch.randn(8, 32, requires_grad=True, device=device)
    img = torch.randn(2, 4, 8, 8, device=device)
    torch.compile(block)(x, img).backward()
    idx = torch.tensor([1, 3, 1], device=device)
    torch.compile(scatter)(torch.randn(16, 4, device=device), idx, torch.randn(3, 4, device=device))
    torch.compile(update)(torch.randn(4096, 8, device=device), torch.zeros(8, device=device))
    print("ok")


if __name__ == "__main__":
    main()
