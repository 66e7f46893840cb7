"""Inception v4 (Szegedy et al. 2017, "Inception-v4, Inception-ResNet …", Figs. 3–9).

Stem (Fig. 3) -> 4× Inception-A -> Reduction-A (k,l,m,n = 192,224,256,384) -> 7× Inception-B
-> Reduction-B -> 3× Inception-C -> global average pool -> dropout (keep 0.8) -> fc.
Convolutions are conv-BN(ε=0.001)-ReLU. On inputs smaller than 64 pixels the stem's strided and
"valid" convolutions/pools become stride 1 with "same" padding, so Inception-A sees 32×32 instead
of 35×35; everything after the stem is unchanged.
"""

from __future__ import annotations

from torch import nn

from gpuscope.workloads.layers import Concat, ConvBNReLU, Head
from gpuscope.workloads.models.inception import split_3x3


def _stem(channels: int, small: bool) -> nn.Sequential:
    s, p = (1, 1) if small else (2, 0)
    pool = nn.MaxPool2d(3, 1, padding=1) if small else nn.MaxPool2d(3, 2)
    pool2 = nn.MaxPool2d(3, 1, padding=1) if small else nn.MaxPool2d(3, 2)
    return nn.Sequential(
        ConvBNReLU(channels, 32, 3, stride=s, padding=p),
        ConvBNReLU(32, 32, 3, padding=p),
        ConvBNReLU(32, 64, 3, padding=1),
        Concat(pool, ConvBNReLU(64, 96, 3, stride=s, padding=p)),            # 160
        Concat(
            nn.Sequential(ConvBNReLU(160, 64, 1), ConvBNReLU(64, 96, 3, padding=p)),
            nn.Sequential(ConvBNReLU(160, 64, 1), ConvBNReLU(64, 64, (1, 7), padding=(0, 3)),
                          ConvBNReLU(64, 64, (7, 1), padding=(3, 0)),
                          ConvBNReLU(64, 96, 3, padding=p)),
        ),                                                                   # 192
        Concat(ConvBNReLU(192, 192, 3, stride=s, padding=p), pool2),        # 384
    )


def _pool_proj(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.AvgPool2d(3, 1, padding=1, count_include_pad=False),
                         ConvBNReLU(cin, cout, 1))


def _inception_a() -> Concat:
    return Concat(
        ConvBNReLU(384, 96, 1),
        nn.Sequential(ConvBNReLU(384, 64, 1), ConvBNReLU(64, 96, 3, padding=1)),
        nn.Sequential(ConvBNReLU(384, 64, 1), ConvBNReLU(64, 96, 3, padding=1),
                      ConvBNReLU(96, 96, 3, padding=1)),
        _pool_proj(384, 96),
    )


def _reduction_a() -> Concat:
    return Concat(
        ConvBNReLU(384, 384, 3, stride=2),
        nn.Sequential(ConvBNReLU(384, 192, 1), ConvBNReLU(192, 224, 3, padding=1),
                      ConvBNReLU(224, 256, 3, stride=2)),
        nn.MaxPool2d(3, 2),
    )


def _inception_b() -> Concat:
    r, c = (1, 7), (7, 1)
    return Concat(
        ConvBNReLU(1024, 384, 1),
        nn.Sequential(ConvBNReLU(1024, 192, 1), ConvBNReLU(192, 224, r, padding=(0, 3)),
                      ConvBNReLU(224, 256, c, padding=(3, 0))),
        nn.Sequential(ConvBNReLU(1024, 192, 1), ConvBNReLU(192, 192, c, padding=(3, 0)),
                      ConvBNReLU(192, 224, r, padding=(0, 3)),
                      ConvBNReLU(224, 224, c, padding=(3, 0)),
                      ConvBNReLU(224, 256, r, padding=(0, 3))),
        _pool_proj(1024, 128),
    )


def _reduction_b() -> Concat:
    return Concat(
        nn.Sequential(ConvBNReLU(1024, 192, 1), ConvBNReLU(192, 192, 3, stride=2)),
        nn.Sequential(ConvBNReLU(1024, 256, 1), ConvBNReLU(256, 256, (1, 7), padding=(0, 3)),
                      ConvBNReLU(256, 320, (7, 1), padding=(3, 0)),
                      ConvBNReLU(320, 320, 3, stride=2)),
        nn.MaxPool2d(3, 2),
    )


def _inception_c() -> Concat:
    return Concat(
        ConvBNReLU(1536, 256, 1),
        nn.Sequential(ConvBNReLU(1536, 384, 1), split_3x3(384, 256)),
        nn.Sequential(ConvBNReLU(1536, 384, 1), ConvBNReLU(384, 448, (3, 1), padding=(1, 0)),
                      ConvBNReLU(448, 512, (1, 3), padding=(0, 1)), split_3x3(512, 256)),
        _pool_proj(1536, 256),
    )


def inception4(channels: int, size: int, num_classes: int) -> nn.Module:
    """Inception v4 for ``channels``×``size``×``size`` inputs and ``num_classes`` classes."""
    return nn.Sequential(
        _stem(channels, small=size < 64),
        *[_inception_a() for _ in range(4)], _reduction_a(),
        *[_inception_b() for _ in range(7)], _reduction_b(),
        *[_inception_c() for _ in range(3)],
        Head(1536, num_classes, dropout=0.2),
    )
