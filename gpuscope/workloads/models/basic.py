"""Plain CNNs of the catalog: trivial, LeNet-5, AlexNet, VGG-11/16/19.

* ``trivial``: tf_cnn_benchmarks' TrivialModel — flatten, dense 1, dense 4096, logits.
* ``lenet``: LeCun et al. (1998) LeNet-5 (conv 6, conv 16, fc 120, 84), ReLU + max-pool as in
  modern re-implementations; an adaptive max-pool to 5×5 before the classifier lets it take
  224×224 inputs with the 32×32 classifier (identity at 32×32).
* ``alexnet``: ImageNet — Krizhevsky (2014) "one weird trick" single-tower AlexNet (conv
  64/192/384/256/256, fc 4096, 4096; 61.1 M parameters, as tf_cnn_benchmarks and torchvision).
  CIFAR-10 — the 32×32 network ImageNet AlexNet cannot run on is replaced by tf_cnn_benchmarks'
  AlexnetCifar10 (cuda-convnet layers: conv5×5 64 ×2 with LRN, fc 384, 192).
* ``vgg11/16/19``: Simonyan & Zisserman (2015) configurations A, D, E. The classifier takes the
  flattened last feature map (7×7 at 224, 1×1 at 32), as tf_cnn_benchmarks does.
"""

from __future__ import annotations

from torch import nn

#: VGG configurations (Simonyan & Zisserman 2015, Table 1): channels, "M" = max-pool.
VGG_CFG: dict[str, list[int | str]] = {
    "vgg11": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "vgg16": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
              512, 512, 512, "M"],
    "vgg19": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M",
              512, 512, 512, 512, "M"],
}


def trivial(channels: int, size: int, num_classes: int) -> nn.Module:
    """tf_cnn_benchmarks TrivialModel: reshape, affine(1), affine(4096), logits."""
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(channels * size * size, 1), nn.ReLU(inplace=True),
        nn.Linear(1, 4096), nn.ReLU(inplace=True),
        nn.Linear(4096, num_classes),
    )


def lenet(channels: int, size: int, num_classes: int) -> nn.Module:
    """LeNet-5: two conv/pool stages and three fully connected layers."""
    return nn.Sequential(
        nn.Conv2d(channels, 6, 5), nn.ReLU(inplace=True), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(inplace=True), nn.MaxPool2d(2),
        nn.AdaptiveMaxPool2d(5),  # 224-pixel inputs reach the 5x5 map LeNet's fc expects
        nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120), nn.ReLU(inplace=True),
        nn.Linear(120, 84), nn.ReLU(inplace=True),
        nn.Linear(84, num_classes),
    )


def alexnet(channels: int, size: int, num_classes: int) -> nn.Module:
    """AlexNet for ImageNet-size inputs; the CIFAR-10 AlexNet for inputs smaller than 64."""
    if size < 64:
        return nn.Sequential(
            nn.Conv2d(channels, 64, 5, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, padding=1), nn.LocalResponseNorm(4, alpha=0.001 / 9.0, beta=0.75),
            nn.Conv2d(64, 64, 5, padding=2), nn.ReLU(inplace=True),
            nn.LocalResponseNorm(4, alpha=0.001 / 9.0, beta=0.75), nn.MaxPool2d(3, 2, padding=1),
            nn.Flatten(),
            nn.Linear(64 * (size // 4) ** 2, 384), nn.ReLU(inplace=True),
            nn.Linear(384, 192), nn.ReLU(inplace=True),
            nn.Linear(192, num_classes),
        )
    return nn.Sequential(
        nn.Conv2d(channels, 64, 11, stride=4, padding=2), nn.ReLU(inplace=True),
        nn.MaxPool2d(3, 2),
        nn.Conv2d(64, 192, 5, padding=2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
        nn.Conv2d(192, 384, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(384, 256, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
        nn.AdaptiveAvgPool2d(6),
        nn.Flatten(),
        nn.Dropout(0.5), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(inplace=True),
        nn.Dropout(0.5), nn.Linear(4096, 4096), nn.ReLU(inplace=True),
        nn.Linear(4096, num_classes),
    )


def vgg(name: str, channels: int, size: int, num_classes: int) -> nn.Module:
    """VGG configuration ``name`` (vgg11, vgg16, vgg19): 3×3 convs + ReLU, 5 max-pools,
    fc 4096, 4096, logits (dropout 0.5 before the two hidden fc layers)."""
    layers: list[nn.Module] = []
    cin = channels
    for v in VGG_CFG[name]:
        if v == "M":
            layers.append(nn.MaxPool2d(2))
        else:
            layers += [nn.Conv2d(cin, int(v), 3, padding=1), nn.ReLU(inplace=True)]
            cin = int(v)
    side = max(1, size // 32)  # the feature map left after five 2x2 pools: 7 at 224, 1 at 32
    layers += [
        nn.AdaptiveAvgPool2d(side), nn.Flatten(),
        nn.Linear(512 * side * side, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5),
        nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5),
        nn.Linear(4096, num_classes),
    ]
    return nn.Sequential(*layers)
