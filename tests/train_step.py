"""Shared by the memory-model tests: one SGD classification step over ``(inputs, labels)``."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn


def classification_step(m: nn.Module, opt: torch.optim.Optimizer
                        ) -> Callable[[tuple[torch.Tensor, torch.Tensor]], torch.Tensor]:
    """``step(batch)``: zero the gradients, cross-entropy forward and backward, ``opt.step()``."""

    def step(b: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(m(b[0]), b[1])
        loss.backward()
        opt.step()
        return loss.detach()

    return step
