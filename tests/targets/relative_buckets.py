"""T5's relative position bias: bucketed distances (arange, sub, abs, log, min) that Inductor recomputes inside the
embedding kernel that reads them: an index nine FX nodes deep."""
import math

import torch
from torch import nn


class RelativeBias(nn.Module):
    def __init__(self, buckets=8, heads=2, max_distance=16):
        super().__init__()
        self.buckets, self.max_distance = buckets, max_distance
        self.bias = nn.Embedding(buckets, heads)

    def forward(self, length):
        position = torch.arange(length)
        relative = position[None, :] - position[:, None]
        half = self.buckets // 2
        bucket = (relative > 0).long() * half
        distance = relative.abs()
        exact = half // 2
        large = exact + (torch.log(distance.float() / exact) / math.log(self.max_distance / exact) * (half - exact)).long()
        large = torch.min(large, torch.full_like(large, half - 1))
        bucket = bucket + torch.where(distance < exact, distance, large)
        return self.bias(bucket).permute(2, 0, 1)


torch.manual_seed(0)
model = RelativeBias()
print(torch.compile(model)(16).sum().item())
