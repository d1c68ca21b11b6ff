"""A training step through a deep stem (three convolution -> BatchNorm -> ReLU blocks, max-pooling) and two residual
blocks, channels_last: the shape of timm's resnet10t, small (tests/test_reference_zoo.py)."""
import torch
from torch import nn

torch.manual_seed(0)


def conv_bn(c_in, c_out):
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU())


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.a, self.b = conv_bn(c, c), nn.Sequential(nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        return torch.relu(x + self.b(self.a(x)))


model = nn.Sequential(conv_bn(3, 8), conv_bn(8, 8), conv_bn(8, 16), nn.MaxPool2d(3, 2, 1), Block(16), Block(16),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 4)).to(memory_format=torch.channels_last)
step = torch.compile(lambda x, y: nn.functional.cross_entropy(model(x), y))
x = torch.randn(2, 3, 16, 16).to(memory_format=torch.channels_last)
y = torch.tensor([1, 3])
loss = step(x, y)
loss.backward()
print(float(loss))
