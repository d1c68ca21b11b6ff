"""One training step of torchvision's detection neck and RPN head: FeaturePyramidNetwork + RPNHead on three feature
maps, the part of fasterrcnn_resnet50_fpn that runs between the backbone and the proposal sampling.

    harvest extract examples/zoo/torchvision_fpn_rpn_head_train.py

Exercises the FPN's lateral 1x1 convolutions, the nearest-neighbour upsample + add of the top-down path (and its
backward, a strided sum), LastLevelMaxPool (a 1x1/2 max-pool), the RPN head's shared 3x3 conv + ReLU over every level,
objectness logits with a binary cross-entropy against random labels and box deltas with a smooth-L1 loss, as
torchvision's RPN computes them (proposal sampling and NMS are outside the compiled part); SGD's update eagerly.
"""

import torch
from torch.nn import functional as F
from torchvision.models.detection.rpn import RPNHead
from torchvision.ops import FeaturePyramidNetwork
from torchvision.ops.feature_pyramid_network import LastLevelMaxPool


class NeckAndHead(torch.nn.Module):
    def __init__(self, in_channels: list[int], channels: int, anchors: int):
        super().__init__()
        self.fpn = FeaturePyramidNetwork(in_channels, channels, extra_blocks=LastLevelMaxPool())
        self.rpn = RPNHead(channels, anchors)

    def forward(self, features: dict[str, torch.Tensor]):
        levels = list(self.fpn(features).values())
        return self.rpn(levels)


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        batch, sizes, in_channels, channels = 8, (64, 32, 16), [256, 512, 1024], 256
    else:
        batch, sizes, in_channels, channels = 2, (8, 4, 2), [8, 16, 32], 16
    anchors = 3
    model = NeckAndHead(in_channels, channels, anchors).to(device).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, weight_decay=1e-4)
    features = {f"c{i}": torch.randn(batch, c, s, s, device=device) for i, (c, s) in enumerate(zip(in_channels, sizes))}

    compiled = torch.compile(model)
    objectness, deltas = compiled(features)
    labels = [torch.randint(0, 2, o.shape, device=device).float() for o in objectness]
    targets = [torch.randn_like(d) for d in deltas]
    loss = sum(F.binary_cross_entropy_with_logits(o, t) for o, t in zip(objectness, labels))
    loss = loss + sum(F.smooth_l1_loss(d, t, beta=1 / 9) for d, t in zip(deltas, targets))
    loss.backward()
    opt.step()

    assert len(objectness) == len(sizes) + 1 and torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    print(f"torchvision FPN + RPNHead on {device}: {len(objectness)} levels, loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
