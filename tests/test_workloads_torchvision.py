"""torchvision's classifiers as gpuscope builds them: the parameter counts torchvision
documents for each (its model tables), and a 1000-class output on a 224 x 224 batch."""

from __future__ import annotations

import pytest
import torch

from gpuscope.workloads.models.torchvision import FACTORIES

#: torchvision's documented parameter counts (``torchvision.models`` weights tables).
TORCHVISION_PARAMS = {
    "resnet18": 11689512, "resnet34": 21797672, "resnet50": 25557032, "resnet101": 44549160,
    "resnet152": 60192808, "resnext50_32x4d": 25028904, "resnext101_32x8d": 88791336,
    "wide_resnet50_2": 68883240, "wide_resnet101_2": 126886696, "densenet121": 7978856,
    "densenet161": 28681000, "densenet169": 14149480, "densenet201": 20013928,
    "vgg11": 132863336, "vgg11_bn": 132868840, "vgg13": 133047848, "vgg13_bn": 133053736,
    "vgg16": 138357544, "vgg16_bn": 138365992, "vgg19": 143667240, "vgg19_bn": 143678248,
    "squeezenet1_0": 1248424, "squeezenet1_1": 1235496, "mobilenet_v2": 3504872,
    "shufflenet_v2_x0_5": 1366792, "shufflenet_v2_x1_0": 2278604, "shufflenet_v2_x1_5": 3503624,
    "shufflenet_v2_x2_0": 7393996, "mnasnet0_5": 2218512, "mnasnet0_75": 3170208,
    "mnasnet1_0": 4383312, "mnasnet1_3": 6282256,
}


def test_every_benchmarked_architecture_is_built() -> None:
    assert set(FACTORIES) == set(TORCHVISION_PARAMS)


@pytest.mark.parametrize("name", sorted(TORCHVISION_PARAMS))
def test_parameter_count_and_output(name: str) -> None:
    with torch.device("meta"):
        m = FACTORIES[name]()
        assert sum(p.numel() for p in m.parameters()) == TORCHVISION_PARAMS[name]
        assert m(torch.zeros(2, 3, 224, 224)).shape == (2, 1000)
