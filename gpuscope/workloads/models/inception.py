"""GoogLeNet (Inception v1) and Inception v3.

* ``googlenet``: Szegedy et al. (2015) Table 1 — convs with bias and ReLU (no BN), inception
  modules with 1×1, 3×3, 5×5 and pool-projection branches, no auxiliary classifiers, no LRN
  (as tf_cnn_benchmarks). Runs unchanged on 32×32 inputs (padded pools, adaptive global pool).
* ``inception3``: Szegedy et al. (2016) "Rethinking the Inception architecture", the layer
  layout of tf_cnn_benchmarks/torchvision (Mixed_5b … Mixed_7c, factorised 7×7 and 3×3
  convolutions, BN ε=0.001), without the auxiliary classifier. On inputs smaller than 64
  pixels the stem's strides become 1 with "same" padding and its two max-pools are dropped, so
  the 35×35 grid is 32×32; the reductions and modules are unchanged.
"""

from __future__ import annotations

from torch import nn

from gpuscope.workloads.layers import Concat, ConvBNReLU, ConvReLU, Head

# GoogLeNet modules: (1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5, pool proj), Table 1.
_GOOGLENET: list[tuple[int, ...] | str] = [
    (64, 96, 128, 16, 32, 32), (128, 128, 192, 32, 96, 64), "M",
    (192, 96, 208, 16, 48, 64), (160, 112, 224, 24, 64, 64), (128, 128, 256, 24, 64, 64),
    (112, 144, 288, 32, 64, 64), (256, 160, 320, 32, 128, 128), "M",
    (256, 160, 320, 32, 128, 128), (384, 192, 384, 48, 128, 128),
]


def _inception_v1(cin: int, c1: int, r3: int, c3: int, r5: int, c5: int, pp: int) -> Concat:
    return Concat(
        ConvReLU(cin, c1, 1),
        nn.Sequential(ConvReLU(cin, r3, 1), ConvReLU(r3, c3, 3, padding=1)),
        nn.Sequential(ConvReLU(cin, r5, 1), ConvReLU(r5, c5, 5, padding=2)),
        nn.Sequential(nn.MaxPool2d(3, 1, padding=1), ConvReLU(cin, pp, 1)),
    )


def googlenet(channels: int, size: int, num_classes: int) -> nn.Module:
    """GoogLeNet: stem (7×7/2, pool, 1×1, 3×3, pool), nine inception modules, pool, fc."""
    layers: list[nn.Module] = [
        ConvReLU(channels, 64, 7, stride=2, padding=3), nn.MaxPool2d(3, 2, padding=1),
        ConvReLU(64, 64, 1), ConvReLU(64, 192, 3, padding=1), nn.MaxPool2d(3, 2, padding=1),
    ]
    cin = 192
    for spec in _GOOGLENET:
        if spec == "M":
            layers.append(nn.MaxPool2d(3, 2, padding=1))
            continue
        assert isinstance(spec, tuple)
        layers.append(_inception_v1(cin, *spec))
        cin = spec[0] + spec[2] + spec[4] + spec[5]
    layers.append(Head(cin, num_classes, dropout=0.4))
    return nn.Sequential(*layers)


def _pool_branch(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.AvgPool2d(3, 1, padding=1), ConvBNReLU(cin, cout, 1))


def _a(cin: int, pool_features: int) -> Concat:
    return Concat(
        ConvBNReLU(cin, 64, 1),
        nn.Sequential(ConvBNReLU(cin, 48, 1), ConvBNReLU(48, 64, 5, padding=2)),
        nn.Sequential(ConvBNReLU(cin, 64, 1), ConvBNReLU(64, 96, 3, padding=1),
                      ConvBNReLU(96, 96, 3, padding=1)),
        _pool_branch(cin, pool_features),
    )


def _b(cin: int) -> Concat:
    return Concat(
        ConvBNReLU(cin, 384, 3, stride=2),
        nn.Sequential(ConvBNReLU(cin, 64, 1), ConvBNReLU(64, 96, 3, padding=1),
                      ConvBNReLU(96, 96, 3, stride=2)),
        nn.MaxPool2d(3, 2),
    )


def _c(cin: int, c7: int) -> Concat:
    r, c = (1, 7), (7, 1)  # factorised 7x7: row then column
    return Concat(
        ConvBNReLU(cin, 192, 1),
        nn.Sequential(ConvBNReLU(cin, c7, 1), ConvBNReLU(c7, c7, r, padding=(0, 3)),
                      ConvBNReLU(c7, 192, c, padding=(3, 0))),
        nn.Sequential(ConvBNReLU(cin, c7, 1), ConvBNReLU(c7, c7, c, padding=(3, 0)),
                      ConvBNReLU(c7, c7, r, padding=(0, 3)), ConvBNReLU(c7, c7, c, padding=(3, 0)),
                      ConvBNReLU(c7, 192, r, padding=(0, 3))),
        _pool_branch(cin, 192),
    )


def _d(cin: int) -> Concat:
    return Concat(
        nn.Sequential(ConvBNReLU(cin, 192, 1), ConvBNReLU(192, 320, 3, stride=2)),
        nn.Sequential(ConvBNReLU(cin, 192, 1), ConvBNReLU(192, 192, (1, 7), padding=(0, 3)),
                      ConvBNReLU(192, 192, (7, 1), padding=(3, 0)),
                      ConvBNReLU(192, 192, 3, stride=2)),
        nn.MaxPool2d(3, 2),
    )


def split_3x3(cin: int, cout: int) -> Concat:
    """The expanded-filter-bank pair: a 1×3 and a 3×1 conv side by side (v3 Fig. 7, v4 C)."""
    return Concat(ConvBNReLU(cin, cout, (1, 3), padding=(0, 1)),
                  ConvBNReLU(cin, cout, (3, 1), padding=(1, 0)))


def _e(cin: int) -> Concat:
    return Concat(
        ConvBNReLU(cin, 320, 1),
        nn.Sequential(ConvBNReLU(cin, 384, 1), split_3x3(384, 384)),
        nn.Sequential(ConvBNReLU(cin, 448, 1), ConvBNReLU(448, 384, 3, padding=1),
                      split_3x3(384, 384)),
        _pool_branch(cin, 192),
    )


def inception3(channels: int, size: int, num_classes: int) -> nn.Module:
    """Inception v3: stem, 3×A, B, 4×C, D, 2×E, global pool, dropout 0.5, fc."""
    small = size < 64
    s, p = (1, 1) if small else (2, 0)
    stem: list[nn.Module] = [
        ConvBNReLU(channels, 32, 3, stride=s, padding=p),
        ConvBNReLU(32, 32, 3, padding=p), ConvBNReLU(32, 64, 3, padding=1),
    ]
    if not small:
        stem.append(nn.MaxPool2d(3, 2))
    stem += [ConvBNReLU(64, 80, 1), ConvBNReLU(80, 192, 3, padding=p)]
    if not small:
        stem.append(nn.MaxPool2d(3, 2))
    return nn.Sequential(
        *stem,
        _a(192, 32), _a(256, 64), _a(288, 64),
        _b(288),
        _c(768, 128), _c(768, 160), _c(768, 160), _c(768, 192),
        _d(768),
        _e(1280), _e(2048),
        Head(2048, num_classes, dropout=0.5),
    )
