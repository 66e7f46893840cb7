"""Small building blocks shared by the catalog's models."""

from __future__ import annotations

import torch
from torch import nn


class ConvBNReLU(nn.Sequential):
    """conv (no bias) -> batch norm -> ReLU: the unit of Inception v3/v4 and ResNet stems."""

    def __init__(
        self,
        cin: int,
        cout: int,
        kernel: int | tuple[int, int],
        stride: int = 1,
        padding: int | tuple[int, int] | str = 0,
    ) -> None:
        super().__init__(
            nn.Conv2d(cin, cout, kernel, stride=stride, padding=padding, bias=False),
            nn.BatchNorm2d(cout, eps=1e-3),
            nn.ReLU(inplace=True),
        )


class ConvReLU(nn.Sequential):
    """conv (with bias) -> ReLU: the unit of GoogLeNet (2014) and AlexNet, which predate BN."""

    def __init__(
        self, cin: int, cout: int, kernel: int, stride: int = 1, padding: int = 0
    ) -> None:
        super().__init__(
            nn.Conv2d(cin, cout, kernel, stride=stride, padding=padding),
            nn.ReLU(inplace=True),
        )


class Concat(nn.Module):
    """Run branches on the same input and concatenate them along channels (Inception modules)."""

    def __init__(self, *branches: nn.Module) -> None:
        super().__init__()
        self.branches = nn.ModuleList(branches)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([b(x) for b in self.branches], dim=1)


class Head(nn.Sequential):
    """Global average pooling (adaptive, so any input size works) -> dropout -> linear."""

    def __init__(self, cin: int, num_classes: int, dropout: float = 0.0) -> None:
        layers: list[nn.Module] = [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
        if dropout > 0:
            layers.append(nn.Dropout(dropout))
        layers.append(nn.Linear(cin, num_classes))
        super().__init__(*layers)
