"""Dropout traced as CUDA runs it (for the memory model): ``native_dropout`` with a bool
mask (gpuscope.graphs.ops.dropout), the mask counted by the memory model
(gpuscope.emulator.memory.UNSIZED_OUTPUTS). Expected byte counts are computed by hand from the
shapes and checked against autograd on CPU."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from autograd_peak import PeakLiveBytes
from autograd_saved import saved_storage_bytes
from torch import nn
from train_step import classification_step

from gpuscope.emulator.liveness import peak_live_bytes
from gpuscope.emulator.memory import param_bytes, saved_bytes
from gpuscope.graphs.frontends.torch import trace_train_step
from gpuscope.graphs.ops.dropout import gpu_dropout

B, D_IN, D_H, C = 32, 64, 256, 10


@pytest.mark.parametrize("dev", ["cpu", "meta"])
def test_native_dropout_mask_is_bool_but_f_dropout_is_not_fused_off_gpu(dev: str) -> None:
    # the premise (torch's Dropout.cpp): off CUDA F.dropout keeps an input-dtype noise tensor;
    # native_dropout (what CUDA runs) returns a one-byte bool mask on CPU and meta too
    x = torch.ones(4, 8, device=dev, requires_grad=True)
    _, mask = torch.native_dropout(x, 0.1, True)
    assert mask.dtype == torch.bool
    packed: list[torch.dtype] = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t.dtype) or t,
                                                  lambda t: t):
        nn.functional.dropout(x, 0.1, True)
    assert packed == [torch.float32]
    with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t.dtype) or t,
                                                  lambda t: t), gpu_dropout():
        nn.functional.dropout(x, 0.1, True)
        nn.functional.dropout(x, 0.1, False)  # eval: no mask
    assert packed == [torch.float32, torch.bool]


def _mlp(dev: str) -> tuple[nn.Module, torch.optim.Optimizer, Any, Any]:
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(D_IN, D_H), nn.ReLU(), nn.Dropout(0.1), nn.Linear(D_H, C)).to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, foreach=True)
    batch = (torch.randn(B, D_IN, device=dev), torch.randint(0, C, (B,), device=dev))
    return m, opt, batch, classification_step(m, opt)


def test_trace_keeps_a_bool_mask_for_backward() -> None:
    m, opt, batch, step = _mlp("meta")
    g = trace_train_step(step, batch, m, [opt])
    ops = [n.op for n in g.nodes]
    assert ops.count("aten.native_dropout.default") == 1
    assert ops.count("aten.native_dropout_backward.default") == 1
    assert not any("bernoulli" in o for o in ops)
    # by hand: ReLU's output (threshold_backward), the bool mask, the dropout's output (the
    # second linear's weight gradient), log-softmax's output, nll_loss's total weight (4 B)
    expect = B * D_H * 4 + B * D_H * 1 + B * D_H * 4 + B * C * 4 + 4
    assert saved_bytes(g) == expect
    # what autograd packs on CPU with dropout as CUDA runs it (the batch excluded)
    mc, _, bc, _ = _mlp("cpu")
    with saved_storage_bytes([*mc.parameters(), *bc]) as seen, gpu_dropout():
        nn.functional.cross_entropy(mc(bc[0]), bc[1])
    assert sum(seen.values()) == expect
    # the CPU path's FP32 noise would be 3 bytes per element more
    with saved_storage_bytes([*mc.parameters(), *bc]) as seen:
        nn.functional.cross_entropy(mc(bc[0]), bc[1])
    assert sum(seen.values()) == expect + 3 * B * D_H


def test_liveness_peak_with_dropout_matches_cpu() -> None:
    m, opt, batch, step = _mlp("cpu")
    with gpu_dropout():
        step(batch)
        with PeakLiveBytes() as ref:
            step(batch)
    mm, om, bm, sm = _mlp("meta")
    g = trace_train_step(sm, bm, mm, [om])
    assert peak_live_bytes(g, param_bytes(g)) == pytest.approx(ref.peak, rel=0.02)
