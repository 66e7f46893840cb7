"""Shared by the emulator tests: one SGD classification step over ``(inputs, labels)`` (the
memory-model tests), and a small traced RL step at batch 1 (the host-work and time-slicing
tests)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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


def rl_step_cost(**meta: Any) -> Any:
    """``GraphCost`` of a small A3C-like step: 4 batch-1 forwards of an 80x80 frame through a
    2-layer MLP, one backward, AMSGrad; ``meta`` as a traced graph's (``workers``,
    ``env_steps``, ``host_optimizer``...)."""
    from gpuscope.emulator.perf import GraphCost
    from gpuscope.graphs.frontends.torch import trace_train_step

    torch.manual_seed(0)
    net = nn.Sequential(nn.Flatten(), nn.Linear(80 * 80, 256), nn.ReLU(), nn.Linear(256, 6)).to("meta")
    opt = torch.optim.Adam(net.parameters(), amsgrad=True)

    def step(b: tuple[torch.Tensor]) -> torch.Tensor:
        opt.zero_grad()
        loss = sum(net(b[0][t:t + 1]).sum() for t in range(4))
        loss.backward()
        opt.step()
        return loss

    g = trace_train_step(step, (torch.empty(4, 1, 80, 80, device="meta"),), net, [opt], meta=meta)
    return GraphCost.from_graph(g, 1)
