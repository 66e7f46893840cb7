"""Residual and densely connected networks of the catalog.

* ``resnet50``/``resnet101``: He et al. (2016) ImageNet ResNets with bottleneck blocks
  ([3,4,6,3] and [3,4,23,3]; stride on the 3×3 conv, "v1.5", as tf_cnn_benchmarks and
  torchvision), projection shortcuts. They run unchanged on 32×32 inputs thanks to the
  adaptive global pool (the last stage sees a 1×1 map).
* ``resnet20``/``resnet32``: He et al. (2016) §4.2 CIFAR ResNets, 6n+2 layers (n = 3, 5), widths
  16/32/64, parameter-free shortcuts (option A: stride-2 subsampling plus zero channels).
* ``densenet40_k12``/``densenet100_k12``: Huang et al. (2017) DenseNet (L=40/100, k=12) as in
  tf_cnn_benchmarks: three dense blocks of (L−4)/3 BN-ReLU-conv3×3 layers, transitions
  BN-ReLU-conv1×1-avgpool2 without compression.

The CIFAR-native networks (resnet20/32, densenets) receive, on ImageNet-size inputs, the ImageNet
stem of their papers (conv 7×7/2 + max-pool 3×3/2) so that their first stage sees 56×56 maps.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from gpuscope.workloads.layers import Head


def imagenet_stem(cin: int, cout: int) -> nn.Sequential:
    """conv 7×7 stride 2 -> BN -> ReLU -> max-pool 3×3 stride 2 (He et al. 2016, Table 1)."""
    return nn.Sequential(
        nn.Conv2d(cin, cout, 7, stride=2, padding=3, bias=False),
        nn.BatchNorm2d(cout), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, padding=1),
    )


def _stem(cin: int, cout: int, size: int) -> nn.Module:
    if size >= 64:
        return imagenet_stem(cin, cout)
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)
    )


class Bottleneck(nn.Module):
    """1×1 reduce -> 3×3 (stride) -> 1×1 expand (×4), BN after each, projection when needed."""

    expansion = 4

    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        cout = width * self.expansion
        self.body = nn.Sequential(
            nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
            nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(width), nn.ReLU(inplace=True),
            nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout),
        )
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.body(x) + self.shortcut(x))


class BasicBlockA(nn.Module):
    """Two 3×3 convs with BN; option-A shortcut (subsample + zero-pad channels, no weights)."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
        )
        self.stride = stride
        self.pad = cout - cin

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        sc = x
        if self.stride != 1 or self.pad:
            sc = x[:, :, :: self.stride, :: self.stride]
            sc = F.pad(sc, (0, 0, 0, 0, self.pad // 2, self.pad - self.pad // 2))
        return F.relu(self.body(x) + sc)


def resnet_imagenet(depth: int, channels: int, size: int, num_classes: int) -> nn.Module:
    """ResNet-50/101 (bottleneck); ``size`` is unused: the global pool is adaptive."""
    blocks = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3)}[depth]
    layers: list[nn.Module] = [imagenet_stem(channels, 64)]
    cin = 64
    for stage, (n, width) in enumerate(zip(blocks, (64, 128, 256, 512))):
        for i in range(n):
            layers.append(Bottleneck(cin, width, 2 if (i == 0 and stage > 0) else 1))
            cin = width * Bottleneck.expansion
    layers.append(Head(cin, num_classes))
    return nn.Sequential(*layers)


def resnet_cifar(depth: int, channels: int, size: int, num_classes: int) -> nn.Module:
    """CIFAR ResNet with 6n+2 layers (depth 20 -> n=3, 32 -> n=5)."""
    n = (depth - 2) // 6
    layers: list[nn.Module] = [_stem(channels, 16, size)]
    cin = 16
    for stage, width in enumerate((16, 32, 64)):
        for i in range(n):
            layers.append(BasicBlockA(cin, width, 2 if (i == 0 and stage > 0) else 1))
            cin = width
    layers.append(Head(cin, num_classes))
    return nn.Sequential(*layers)


class DenseLayer(nn.Module):
    """BN -> ReLU -> conv 3×3 producing k new maps, concatenated to the input."""

    def __init__(self, cin: int, growth: int) -> None:
        super().__init__()
        self.f = nn.Sequential(
            nn.BatchNorm2d(cin), nn.ReLU(inplace=False),
            nn.Conv2d(cin, growth, 3, padding=1, bias=False),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, self.f(x)], dim=1)


def densenet(depth: int, growth: int, channels: int, size: int, num_classes: int) -> nn.Module:
    """DenseNet (L=depth, k=growth), three dense blocks, no bottleneck, no compression."""
    per_block = (depth - 4) // 3
    cin = 16
    layers: list[nn.Module] = [
        imagenet_stem(channels, cin) if size >= 64
        else nn.Conv2d(channels, cin, 3, padding=1, bias=False)
    ]
    for block in range(3):
        for _ in range(per_block):
            layers.append(DenseLayer(cin, growth))
            cin += growth
        if block < 2:
            layers += [nn.BatchNorm2d(cin), nn.ReLU(inplace=True),
                       nn.Conv2d(cin, cin, 1, bias=False), nn.AvgPool2d(2)]
    layers += [nn.BatchNorm2d(cin), nn.ReLU(inplace=True), Head(cin, num_classes)]
    return nn.Sequential(*layers)
