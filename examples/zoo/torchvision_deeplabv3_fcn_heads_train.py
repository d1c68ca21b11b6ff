"""One training step of torchvision's DeepLabV3 segmentation model with an FCN auxiliary head, on the first stages of
mobilenet_v3_small (random init).

    harvest extract examples/zoo/torchvision_deeplabv3_fcn_heads_train.py

Built from torchvision's own pieces the way deeplabv3_mobilenet_v3_large() builds it: IntermediateLayerGetter over
the backbone's features, DeepLabHead (ASPP: dilated 3x3 branches, the image-pooling branch with its bilinear
upsample, concat, projection with dropout) and FCNHead as aux_classifier; DeepLabV3.forward upsamples both outputs to
the input size. Exercises BatchNorm2d in train mode (on the pooled 1x1 branch too), ReLU/hardswish, bilinear
interpolation forward and backward, and a per-pixel cross-entropy over both heads; Adam's update runs eagerly.
"""

import torch
import torchvision
from torch.nn import functional as F
from torchvision.models._utils import IntermediateLayerGetter
from torchvision.models.segmentation.deeplabv3 import DeepLabHead, DeepLabV3
from torchvision.models.segmentation.fcn import FCNHead


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    batch, size, width, classes = (16, 256, 1.0, 21) if device == "cuda" else (2, 32, 0.5, 3)
    features = torchvision.models.mobilenet_v3_small(width_mult=width).features
    aux_layer, out_layer = "2", "4"
    channels = {name: layer.out_channels for name, layer in features.named_children() if name in (aux_layer, out_layer)}
    backbone = IntermediateLayerGetter(features, return_layers={aux_layer: "aux", out_layer: "out"})
    model = DeepLabV3(backbone, DeepLabHead(channels[out_layer], classes, atrous_rates=(2, 4, 6)),
                      FCNHead(channels[aux_layer], classes)).to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(batch, 3, size, size, device=device)
    target = torch.randint(0, classes, (batch, size, size), device=device)

    compiled = torch.compile(model)
    out = compiled(x)
    loss = F.cross_entropy(out["out"], target) + 0.5 * F.cross_entropy(out["aux"], target)
    loss.backward()
    opt.step()

    assert out["out"].shape == (batch, classes, size, size) and torch.isfinite(loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    print(f"torchvision DeepLabV3 + FCN aux head on {device}: loss {loss.item():.4f}, one Adam step")


if __name__ == "__main__":
    main()
