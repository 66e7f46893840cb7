"""torchvision's ImageNet classifiers, written from their published definitions.

The 32 architectures pytorch-gpu-benchmark times (``../shared/data/pytorch-gpu-benchmark``):
ResNet-18/34/50/101/152, ResNeXt-50 32x4d / 101 32x8d, Wide ResNet-50/101-2, DenseNet-121/
161/169/201, VGG-11/13/16/19 with and without batch norm, SqueezeNet 1.0/1.1, MobileNetV2,
ShuffleNetV2 x0.5-x2.0, MNASNet 0.5-1.3, as ``torchvision.models`` builds them (no
torchvision here: each follows its paper and torchvision's layer choices: bias-free
convolutions before batch norm, ``ReLU(inplace=True)``, adaptive average pooling, the
classifier heads and dropouts; parameter counts equal torchvision's documented ones, test).
Factories take no argument and build a 1000-class model for 3 x 224 x 224 inputs, for
``--module gpuscope.workloads.models.torchvision:<name>`` (``FACTORIES``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch
from torch import nn

CLASSES = 1000


def _bn_relu(c: int, relu: type[nn.Module] = nn.ReLU) -> list[nn.Module]:
    return [nn.BatchNorm2d(c), relu(inplace=True)]


# -- ResNet, ResNeXt, Wide ResNet (He et al. 2016; Xie et al. 2017; Zagoruyko & Komodakis 2016)
class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin: int, planes: int, stride: int, down: nn.Module | None,
                 groups: int = 1, width: int = 64) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = down

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idt = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + idt)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin: int, planes: int, stride: int, down: nn.Module | None,
                 groups: int = 1, width: int = 64) -> None:
        super().__init__()
        w = int(planes * (width / 64.0)) * groups
        self.conv1 = nn.Conv2d(cin, w, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(w)
        self.conv2 = nn.Conv2d(w, w, 3, stride, 1, groups=groups, bias=False)
        self.bn2 = nn.BatchNorm2d(w)
        self.conv3 = nn.Conv2d(w, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = down

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idt = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        return self.relu(self.bn3(self.conv3(out)) + idt)


class ResNet(nn.Module):
    def __init__(self, block: type[BasicBlock] | type[Bottleneck], layers: list[int],
                 groups: int = 1, width: int = 64) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin, stages = 64, []
        for i, (n, planes) in enumerate(zip(layers, (64, 128, 256, 512))):
            stride = 1 if i == 0 else 2
            down = None
            if stride != 1 or cin != planes * block.expansion:
                down = nn.Sequential(nn.Conv2d(cin, planes * block.expansion, 1, stride, bias=False),
                                     nn.BatchNorm2d(planes * block.expansion))
            blocks = [block(cin, planes, stride, down, groups, width)]
            cin = planes * block.expansion
            blocks += [block(cin, planes, 1, None, groups, width) for _ in range(n - 1)]
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# -- DenseNet (Huang et al. 2017, BC variant with bottleneck and compression 0.5) ------------
class _DenseLayer(nn.Module):
    def __init__(self, cin: int, growth: int, bn_size: int) -> None:
        super().__init__()
        self.norm1, self.relu1 = nn.BatchNorm2d(cin), nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(cin, bn_size * growth, 1, bias=False)
        self.norm2, self.relu2 = nn.BatchNorm2d(bn_size * growth), nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth, growth, 3, 1, 1, bias=False)

    def forward(self, feats: list[torch.Tensor]) -> torch.Tensor:
        x = self.conv1(self.relu1(self.norm1(torch.cat(feats, 1))))
        return self.conv2(self.relu2(self.norm2(x)))


class _DenseBlock(nn.ModuleDict):
    def __init__(self, n: int, cin: int, growth: int, bn_size: int) -> None:
        super().__init__({f"denselayer{i + 1}": _DenseLayer(cin + i * growth, growth, bn_size)
                          for i in range(n)})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        feats = [x]
        for layer in self.values():
            feats.append(layer(feats))
        return torch.cat(feats, 1)


class DenseNet(nn.Module):
    def __init__(self, growth: int, blocks: tuple[int, ...], init: int, bn_size: int = 4) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(3, init, 7, 2, 3, bias=False), *_bn_relu(init),
                                   nn.MaxPool2d(3, 2, 1)]
        c = init
        for i, n in enumerate(blocks):
            layers.append(_DenseBlock(n, c, growth, bn_size))
            c += n * growth
            if i != len(blocks) - 1:
                layers += [nn.BatchNorm2d(c), nn.ReLU(inplace=True),
                           nn.Conv2d(c, c // 2, 1, bias=False), nn.AvgPool2d(2, 2)]
                c //= 2
        layers.append(nn.BatchNorm2d(c))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(c, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu_(self.features(x))
        return self.classifier(torch.flatten(nn.functional.adaptive_avg_pool2d(x, (1, 1)), 1))


# -- VGG (Simonyan & Zisserman 2015, configurations A, B, D, E) ------------------------------
VGG_CFGS: dict[str, list[int | str]] = {
    "vgg11": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "vgg13": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "vgg16": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "vgg19": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M",
              512, 512, 512, 512, "M"],
}


class VGG(nn.Module):
    def __init__(self, cfg: str, bn: bool) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        cin = 3
        for v in VGG_CFGS[cfg]:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
                continue
            layers.append(nn.Conv2d(cin, int(v), 3, padding=1))
            layers += [nn.BatchNorm2d(int(v)), nn.ReLU(inplace=True)] if bn else [nn.ReLU(inplace=True)]
            cin = int(v)
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(0.5),
            nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(0.5), nn.Linear(4096, CLASSES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


# -- SqueezeNet (Iandola et al. 2016; 1.1 from the SqueezeNet repository) --------------------
class Fire(nn.Module):
    def __init__(self, cin: int, squeeze: int, e1: int, e3: int) -> None:
        super().__init__()
        self.squeeze, self.squeeze_activation = nn.Conv2d(cin, squeeze, 1), nn.ReLU(inplace=True)
        self.expand1x1, self.expand1x1_activation = nn.Conv2d(squeeze, e1, 1), nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze, e3, 3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.squeeze_activation(self.squeeze(x))
        return torch.cat([self.expand1x1_activation(self.expand1x1(x)),
                          self.expand3x3_activation(self.expand3x3(x))], 1)


class SqueezeNet(nn.Module):
    def __init__(self, version: str) -> None:
        super().__init__()
        pool = partial(nn.MaxPool2d, 3, 2, ceil_mode=True)
        if version == "1_0":
            layers: list[nn.Module] = [
                nn.Conv2d(3, 96, 7, 2), nn.ReLU(inplace=True), pool(), Fire(96, 16, 64, 64),
                Fire(128, 16, 64, 64), Fire(128, 32, 128, 128), pool(), Fire(256, 32, 128, 128),
                Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256), pool(),
                Fire(512, 64, 256, 256)]
        else:
            layers = [
                nn.Conv2d(3, 64, 3, 2), nn.ReLU(inplace=True), pool(), Fire(64, 16, 64, 64),
                Fire(128, 16, 64, 64), pool(), Fire(128, 32, 128, 128), Fire(256, 32, 128, 128),
                pool(), Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256),
                Fire(512, 64, 256, 256)]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.5), nn.Conv2d(512, CLASSES, 1),
                                        nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flatten(self.classifier(self.features(x)), 1)


# -- MobileNetV2 (Sandler et al. 2018) --------------------------------------------------------
def _divisible(v: float, d: int = 8) -> int:
    new = max(d, int(v + d / 2) // d * d)
    return new + d if new < 0.9 * v else new


def _cbr(cin: int, cout: int, k: int = 3, stride: int = 1, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU6(inplace=True))


class _MBv2Block(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, t: int) -> None:
        super().__init__()
        hidden = int(round(cin * t))
        self.use_res = stride == 1 and cin == cout
        layers: list[nn.Module] = [_cbr(cin, hidden, 1)] if t != 1 else []
        layers += [_cbr(hidden, hidden, 3, stride, hidden), nn.Conv2d(hidden, cout, 1, bias=False),
                   nn.BatchNorm2d(cout)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv(x) if self.use_res else self.conv(x)


class MobileNetV2(nn.Module):
    SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1))

    def __init__(self) -> None:
        super().__init__()
        cin = _divisible(32)
        layers: list[nn.Module] = [_cbr(3, cin, 3, 2)]
        for t, c, n, s in self.SETTINGS:
            for i in range(n):
                layers.append(_MBv2Block(cin, _divisible(c), s if i == 0 else 1, t))
                cin = _divisible(c)
        layers.append(_cbr(cin, 1280, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, CLASSES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


# -- ShuffleNetV2 (Ma et al. 2018) ------------------------------------------------------------
def _shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    b, c, h, w = x.size()
    x = x.view(b, groups, c // groups, h, w).transpose(1, 2).contiguous()
    return x.view(b, -1, h, w)


class _ShuffleBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.stride = stride
        bf = cout // 2
        if stride > 1:
            self.branch1 = nn.Sequential(
                nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False), nn.BatchNorm2d(cin),
                nn.Conv2d(cin, bf, 1, bias=False), *_bn_relu(bf))
        else:
            self.branch1 = nn.Sequential()
        self.branch2 = nn.Sequential(
            nn.Conv2d(cin if stride > 1 else bf, bf, 1, bias=False), *_bn_relu(bf),
            nn.Conv2d(bf, bf, 3, stride, 1, groups=bf, bias=False), nn.BatchNorm2d(bf),
            nn.Conv2d(bf, bf, 1, bias=False), *_bn_relu(bf))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
        return _shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    def __init__(self, channels: tuple[int, int, int, int, int]) -> None:
        super().__init__()
        self.conv1 = nn.Sequential(nn.Conv2d(3, channels[0], 3, 2, 1, bias=False),
                                   *_bn_relu(channels[0]))
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin, stages = channels[0], []
        for n, cout in zip((4, 8, 4), channels[1:4]):
            stages.append(nn.Sequential(_ShuffleBlock(cin, cout, 2),
                                        *[_ShuffleBlock(cout, cout, 1) for _ in range(n - 1)]))
            cin = cout
        self.stage2, self.stage3, self.stage4 = stages
        self.conv5 = nn.Sequential(nn.Conv2d(cin, channels[4], 1, bias=False), *_bn_relu(channels[4]))
        self.fc = nn.Linear(channels[4], CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.conv1(x))
        x = self.conv5(self.stage4(self.stage3(self.stage2(x))))
        return self.fc(x.mean([2, 3]))


# -- MNASNet (Tan et al. 2019, B1) ------------------------------------------------------------
class _MnasBlock(nn.Module):
    def __init__(self, cin: int, cout: int, k: int, stride: int, t: int) -> None:
        super().__init__()
        mid = cin * t
        self.apply_residual = cin == cout and stride == 1
        self.layers = nn.Sequential(
            nn.Conv2d(cin, mid, 1, bias=False), *_bn_relu(mid),
            nn.Conv2d(mid, mid, k, stride, k // 2, groups=mid, bias=False), *_bn_relu(mid),
            nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x) + x if self.apply_residual else self.layers(x)


def _mnas_depths(alpha: float) -> list[int]:
    def rnd(v: float) -> int:
        new = max(8, int(v + 4) // 8 * 8)
        return new if new >= 0.9 * v else new + 8
    return [rnd(d * alpha) for d in (32, 16, 24, 40, 80, 96, 192, 320)]


class MNASNet(nn.Module):
    STACKS = ((3, 2, 3, 3), (5, 2, 3, 3), (5, 2, 6, 3), (3, 1, 6, 2), (5, 2, 6, 4), (3, 1, 6, 1))

    def __init__(self, alpha: float) -> None:
        super().__init__()
        d = _mnas_depths(alpha)
        layers: list[nn.Module] = [
            nn.Conv2d(3, d[0], 3, 2, 1, bias=False), *_bn_relu(d[0]),
            nn.Conv2d(d[0], d[0], 3, 1, 1, groups=d[0], bias=False), *_bn_relu(d[0]),
            nn.Conv2d(d[0], d[1], 1, bias=False), nn.BatchNorm2d(d[1])]
        for i, (k, s, t, n) in enumerate(self.STACKS):
            layers.append(_MnasBlock(d[i + 1], d[i + 2], k, s, t))
            layers += [_MnasBlock(d[i + 2], d[i + 2], k, 1, t) for _ in range(n - 1)]
        layers += [nn.Conv2d(d[7], 1280, 1, bias=False), *_bn_relu(1280)]
        self.layers = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2, inplace=True), nn.Linear(1280, CLASSES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.layers(x).mean([2, 3]))


#: torchvision name -> factory.
FACTORIES: dict[str, Callable[[], nn.Module]] = {
    "resnet18": partial(ResNet, BasicBlock, [2, 2, 2, 2]),
    "resnet34": partial(ResNet, BasicBlock, [3, 4, 6, 3]),
    "resnet50": partial(ResNet, Bottleneck, [3, 4, 6, 3]),
    "resnet101": partial(ResNet, Bottleneck, [3, 4, 23, 3]),
    "resnet152": partial(ResNet, Bottleneck, [3, 8, 36, 3]),
    "resnext50_32x4d": partial(ResNet, Bottleneck, [3, 4, 6, 3], 32, 4),
    "resnext101_32x8d": partial(ResNet, Bottleneck, [3, 4, 23, 3], 32, 8),
    "wide_resnet50_2": partial(ResNet, Bottleneck, [3, 4, 6, 3], 1, 128),
    "wide_resnet101_2": partial(ResNet, Bottleneck, [3, 4, 23, 3], 1, 128),
    "densenet121": partial(DenseNet, 32, (6, 12, 24, 16), 64),
    "densenet161": partial(DenseNet, 48, (6, 12, 36, 24), 96),
    "densenet169": partial(DenseNet, 32, (6, 12, 32, 32), 64),
    "densenet201": partial(DenseNet, 32, (6, 12, 48, 32), 64),
    **{f"{c}{'_bn' if bn else ''}": partial(VGG, c, bn) for c in VGG_CFGS for bn in (False, True)},
    "squeezenet1_0": partial(SqueezeNet, "1_0"),
    "squeezenet1_1": partial(SqueezeNet, "1_1"),
    "mobilenet_v2": MobileNetV2,
    "shufflenet_v2_x0_5": partial(ShuffleNetV2, (24, 48, 96, 192, 1024)),
    "shufflenet_v2_x1_0": partial(ShuffleNetV2, (24, 116, 232, 464, 1024)),
    "shufflenet_v2_x1_5": partial(ShuffleNetV2, (24, 176, 352, 704, 1024)),
    "shufflenet_v2_x2_0": partial(ShuffleNetV2, (24, 244, 488, 976, 2048)),
    "mnasnet0_5": partial(MNASNet, 0.5),
    "mnasnet0_75": partial(MNASNet, 0.75),
    "mnasnet1_0": partial(MNASNet, 1.0),
    "mnasnet1_3": partial(MNASNet, 1.3),
}


def __getattr__(name: str) -> Callable[[], nn.Module]:
    """``torchvision.<name>``: the factory, for ``--module ...:<name>``."""
    if name in FACTORIES:
        return FACTORIES[name]
    raise AttributeError(name)
