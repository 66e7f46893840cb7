"""Liveness peak memory of a training step (gpuscope.emulator.liveness):
checked against the bytes really alive on CPU (tests/autograd_peak.py), the switch back to
the saved-for-backward rule, and the fallback for graphs without backward edges."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from autograd_peak import PeakLiveBytes
from torch import nn
from train_step import classification_step

from gpuscope.cluster.devices import get_device
from gpuscope.emulator import default_params, estimate
from gpuscope.emulator.liveness import live_activation_bytes, live_profile, peak_live_bytes
from gpuscope.emulator.memory import activation_bytes, is_inplace, param_bytes, saved_bytes
from gpuscope.emulator.perf import GraphCost
from gpuscope.graphs.frontends.torch import trace_train_step
from gpuscope.graphs.opgraph import OpGraph, OpNode
from gpuscope.jobs.spec import JobSpec

Builder = Callable[[str], tuple[nn.Module, torch.optim.Optimizer, Any, Callable[[Any], Any]]]


def _lm(dev: str) -> tuple[nn.Module, torch.optim.Optimizer, Any, Callable[[Any], Any]]:
    """A language model's step in miniature: the B x S x vocab logits, their log-softmax and
    its gradient dominate the peak; none of them is what the old rule counted."""
    v, d = 2000, 32
    torch.manual_seed(0)
    m = nn.ModuleDict({"emb": nn.Embedding(v, d), "ln": nn.LayerNorm(d), "fc": nn.Linear(d, 4 * d),
                       "proj": nn.Linear(4 * d, d), "head": nn.Linear(d, v)}).to(dev)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, foreach=True)
    batch = (torch.randint(0, v, (4, 64), device=dev), torch.randint(0, v, (4, 64), device=dev))

    def step(b: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        h = m["emb"](b[0])
        h = h + m["proj"](nn.functional.gelu(m["fc"](m["ln"](h))))
        loss = nn.functional.cross_entropy(m["head"](h).view(-1, v), b[1].view(-1))
        loss.backward()
        opt.step()
        return loss.detach()

    return m, opt, batch, step


def _cnn(dev: str) -> tuple[nn.Module, torch.optim.Optimizer, Any, Callable[[Any], Any]]:
    """Convolutions and batch norms (multi-output backward ops), in-place ReLU, max pooling
    (int64 indices), SGD with momentum."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
                      nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32),
                      nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                      nn.Linear(32, 10)).to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, foreach=True)
    batch = (torch.randn(8, 3, 32, 32, device=dev), torch.randint(0, 10, (8,), device=dev))
    return m, opt, batch, classification_step(m, opt)


@pytest.mark.parametrize(("build", "old_below"), [(_lm, 0.5), (_cnn, 0.85)])
def test_peak_matches_bytes_alive_on_cpu(build: Builder, old_below: float) -> None:
    m, opt, batch, step = build("cpu")
    step(batch)  # optimizer state exists; the previous step's gradients are freed by zero_grad
    with PeakLiveBytes() as ref:
        step(batch)
    mm, om, bm, sm = build("meta")
    g = trace_train_step(sm, bm, mm, [om])
    pb = param_bytes(g)
    peak = peak_live_bytes(g, pb)
    assert peak == pytest.approx(ref.peak, rel=0.02)
    # the previous rule (saved for backward + gradients) misses the transient peak
    assert saved_bytes(g) + pb < old_below * ref.peak
    assert live_activation_bytes(g, pb) == pytest.approx(peak - pb)


def _chain() -> OpGraph:
    """x -> a (4 KB) -> b (8 KB) -> c (1 KB) forward, then the backward op ga (the 1 KB
    gradient) reads a and c: the peak is at c, its input b, a (kept for backward) and c
    alive together (13 KB); at ga, a + c + the gradient (6 KB)."""
    nodes = [
        OpNode("x", "Input", "constant", (1024,), 1024, 4, phase="data"),
        OpNode("a", "aten.relu.default", "activation", (1024,), 1024, 4, phase="forward"),
        OpNode("b", "aten.exp.default", "elementwise", (2048,), 2048, 4, phase="forward"),
        OpNode("c", "aten.sum.default", "reduction", (256,), 256, 4, phase="forward"),
        OpNode("ga", "aten.mm.default", "matmul", (256,), 256, 4, phase="backward"),
        OpNode("upd", "aten._foreach_add_.List", "optimizer", (256,), 256, 4, phase="optimizer"),
    ]
    edges = [(0, 1), (1, 2), (2, 3), (1, 4), (3, 4), (4, 5)]
    return OpGraph("chain", nodes, edges, meta={"param_bytes": 1024})


def test_synthetic_chain_peak() -> None:
    g = _chain()
    assert peak_live_bytes(g, 1024.0) == 4096 + 8192 + 1024
    assert live_activation_bytes(g, 1024.0) == 4096 + 8192
    assert live_profile(g, 1024.0)[4] == 4096 + 1024 + 1024
    # without backward edges there is no schedule: the every-forward-output fallback
    fwd = OpGraph("fwd", g.nodes[:4], [(0, 1), (1, 2), (2, 3)])
    assert peak_live_bytes(fwd, 0.0) is None
    assert live_activation_bytes(fwd, 0.0) == activation_bytes(fwd)


def test_switch_restores_the_saved_bytes_rule() -> None:
    m, opt, batch, step = _lm("meta")
    g = trace_train_step(step, batch, m, [opt])
    cost = GraphCost.from_graph(g, 4)
    job = JobSpec("gpt2", "wikitext103", "adamw", 4, 1)
    dev = get_device("h100")
    p = default_params()
    assert p.memory_liveness == 1.0
    new = estimate(job, cost, dev, p).memory.activations_mb
    old = estimate(job, cost, dev, p.with_(memory_liveness=0.0)).memory.activations_mb
    over = 1.0 + p.alloc_overhead
    assert new == pytest.approx(cost.live_activation_bytes * over / 2**20)
    assert old == pytest.approx(saved_bytes(g) * over / 2**20)
    assert new > 2 * old


def test_private_inplace_ops_alias_their_input() -> None:
    # one rule for the saved-set walk and for liveness: foreach/fused optimizer updates write
    # their inputs (no new storage), out-of-place private ops allocate
    assert is_inplace("aten._foreach_mul_.Scalar") and is_inplace("aten._fused_adam_.default")
    assert is_inplace("aten.relu_.default")
    assert not is_inplace("aten._to_copy.default") and not is_inplace("aten.relu.default")
