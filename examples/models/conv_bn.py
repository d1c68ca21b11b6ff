"""One training step of a small conv net: Conv2d -> BatchNorm2d -> ReLU (x2) -> adaptive avg pool -> Linear, cross-entropy.

    harvest extract examples/models/conv_bn.py

Exercises Inductor's batch-norm training kernels (per-channel mean/variance reductions over N*H*W, often split into
several reduction kernels, plus the in-place running_mean/running_var updates as mutated buffers), fused
normalize+ReLU pointwise kernels, the average-pool reduction, log-softmax/cross-entropy (forward and backward), and
the batch-norm/ReLU backward reductions; convolutions and the Linear stay extern calls.
"""

import copy

import torch
from torch import nn
from torch.nn import functional as F


class ConvNet(nn.Module):
    def __init__(self, in_ch: int, c1: int, c2: int, classes: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_ch, c1, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c1)
        self.conv2 = nn.Conv2d(c1, c2, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(c2, classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, in_ch, c1, c2, size, classes = 64, 3, 32, 64, 64, 100
    else:
        batch, in_ch, c1, c2, size, classes = 4, 3, 8, 16, 8, 10
    model = ConvNet(in_ch, c1, c2, classes).to(device).train()
    reference = copy.deepcopy(model)
    x = torch.randn(batch, in_ch, size, size, device=device)
    target = torch.randint(0, classes, (batch,), device=device)

    compiled = torch.compile(model)
    loss = F.cross_entropy(compiled(x), target)
    loss.backward()

    expected = F.cross_entropy(reference(x), target)
    expected.backward()
    tol = dict(rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(loss, expected, **tol)
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, **tol, msg=lambda m, name=name: f"grad of {name}: {m}")
    for (name, b), c in zip(model.named_buffers(), reference.buffers()):
        torch.testing.assert_close(b, c, **tol, msg=lambda m, name=name: f"buffer {name}: {m}")
    print(f"conv-bn net on {device}: loss {loss.item():.4f}, grads and running stats match eager")


if __name__ == "__main__":
    main()
