"""The eager reference's misses on unseen library models (issue 45), on tiny tensors: first stages of split
reductions (sum, any, max, var_mean of a permuted input), mutated graph inputs and in-place buffers, a cast fused
away under autocast, max-pooling forward and backward, a convolution whose bias the next kernel adds under autocast,
GroupNorm backward, attention backward; a matmul's output reused in place under a transposed layout (an attention
block's out-projection added to its residual), a mean whose division the next kernel does (a loss), randn's
normal numbers, an upsampling's backward (index_put into zeros, read by the next kernel), and a channels-last
classifier head's drop-path mask and global average pool."""
import torch
import torch.nn.functional as F
from torch import nn


def split_reductions(x, flags):
    total = x.sum()
    largest = x.amax()
    anything = (flags > 0).any()
    var, mean = torch.var_mean(x.view(64, 1024).permute(1, 0), dim=1)
    return total, largest, anything, var, mean


def mutate(x, state, both):
    state.copy_(state * 0.9 + x.mean(0) * 0.1)   # copy_ into a graph input
    both.add_(1.0)                                # an input both read and written
    return both * x


class ConvPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.gn = nn.GroupNorm(2, 8)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, img):
        h = F.max_pool2d(F.relu(self.bn(self.conv(img))), 2)
        h = self.gn(h) + h
        return self.fc(h.flatten(1))


class ResidualConv(nn.Module):
    """Under autocast: a convolution whose bias (and cast) the next kernel adds, then a residual."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3, padding=1)
        self.norm = nn.LayerNorm(8)
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        h = F.relu(self.conv(x) + x)
        h = self.norm(h.permute(0, 2, 3, 1))
        return F.gelu(self.lin(h))


class ProjectBack(nn.Module):
    """An attention block's tail as diffusers writes it: the out-projection (addmm) transposed back to an image and
    added to the residual, rescaled; then an L1 loss plus a small penalty (a mean the next kernel divides)."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(32, 32)
        self.conv = nn.Conv2d(32, 3, 1)

    def forward(self, img, target):
        b, c, h, w = img.shape
        tokens = img.reshape(b, c, h * w).transpose(1, 2)
        out = self.proj(tokens).transpose(1, 2).reshape(b, c, h, w)
        out = (out + img) / 1.0
        rec = self.conv(out)
        return (rec - target).abs().mean() + 1e-6 * tokens.sum(-1).mean()


class Upsample(nn.Module):
    """A decoder's up-block (diffusers' Upsample2D, a VAE's sampling): nearest-neighbour upsampling then a
    convolution, after a latent drawn with randn; its backward scatters (index_put) into a buffer of zeros."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(32, 32, 3, padding=1)

    def forward(self, mean, logvar):
        latent = mean + torch.exp(0.5 * logvar.clamp(-30.0, 20.0)) * torch.randn_like(mean)
        return self.conv(F.interpolate(latent, scale_factor=2.0, mode="nearest"))


class PoolHead(nn.Module):
    """A classifier's head as timm writes it, channels-last in train mode: a drop-path mask (`new_empty().bernoulli_`:
    Inductor fills the buffer, a library call draws into it) and a global average pool whose backward copies the
    gradient into a view of zeros (`copy_(as_strided(full, ...), grad)`)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        h = F.relu(self.bn(self.conv(x)))
        keep = h.new_empty((h.shape[0], 1, 1, 1)).bernoulli_(0.9) / 0.9
        return self.fc(F.adaptive_avg_pool2d(h * keep + h, 1).flatten(1))


def attention(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(65536, device=device)
    torch.compile(split_reductions)(x, torch.randn(65536, device=device))
    torch.compile(mutate)(torch.randn(16, 32, device=device), torch.zeros(32, device=device), torch.randn(16, 32, device=device))
    model = ConvPool().to(device).train()
    img = torch.randn(2, 3, 8, 8, device=device)
    amp = torch.bfloat16 if device == "cpu" else torch.float16
    with torch.autocast(device, dtype=amp):
        out = torch.compile(model)(img)
    out.float().sum().backward()
    residual = ResidualConv().to(device).train()
    with torch.autocast(device, dtype=amp):
        torch.compile(residual)(torch.randn(2, 8, 8, 8, device=device)).float().square().mean().backward()
    project = ProjectBack().to(device)
    torch.compile(project)(torch.randn(2, 32, 16, 16, device=device), torch.randn(2, 3, 16, 16, device=device)).backward()
    up = Upsample().to(device)
    mean, logvar = (torch.randn(2, 32, 8, 8, device=device, requires_grad=True) for _ in range(2))
    torch.compile(up)(mean, logvar).square().mean().backward()
    head = PoolHead().to(device).to(memory_format=torch.channels_last).train()
    image = torch.randn(2, 8, 8, 8, device=device).to(memory_format=torch.channels_last)
    torch.compile(head)(image).square().mean().backward()
    q, k, v = (torch.randn(1, 2, 8, 16, device=device, requires_grad=True) for _ in range(3))
    torch.compile(attention)(q, k, v).sum().backward()
    print("ok")


if __name__ == "__main__":
    main()
