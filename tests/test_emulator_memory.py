"""The emulated memory footprint against what a training step really holds on CPU, its band
and its three fit states (gpuscope.emulator.memory).

Reference: every tensor storage alive at once during a real step on CPU (tests/autograd_peak.py,
a TorchDispatchMode with a finalizer per new storage), plus the weights and the optimizer
state, which exist before the step. Emulated: the footprint's tensors (weights, optimizer
state, gradients and the liveness peak; no CUDA context, workspace or allocator slack, which a
CPU run does not have). Tolerance 2 % (the models below agree to the byte today)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
import torch
from autograd_peak import PeakLiveBytes
from autograd_saved import saved_storage_bytes
from torch import nn

from gpuscope.cluster.devices import get_device
from gpuscope.emulator import default_params, estimate
from gpuscope.emulator.liveness import live_activation_bytes
from gpuscope.emulator.memory import MB, footprint_from_sizes, param_bytes, saved_bytes
from gpuscope.emulator.perf import GraphCost
from gpuscope.emulator.table import estimate_rows
from gpuscope.graphs.frontends.torch import trace_train_step
from gpuscope.jobs.spec import JobSpec

P = default_params()
#: the footprint's tensors alone: no context, workspace or fragmentation
TENSORS = P.with_(context_mb=0.0, workspace_mb=0.0, alloc_overhead=0.0)
Loss = Callable[[Any], torch.Tensor]
Built = tuple[nn.Module, torch.optim.Optimizer, Any, Loss]


def _step(m: nn.Module, opt: torch.optim.Optimizer, loss_of: Loss, amp: bool) -> Callable[[Any], Any]:
    """A training step as the catalog's workloads run it: zero the gradients, the forward pass
    and the loss (under CPU autocast in bf16, the AMP-like dtype CPUs run, when ``amp``; the
    autocast cache is dropped as the context exits), backward, optimizer step."""

    def step(b: Any) -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        if amp:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = loss_of(b)
        else:
            loss = loss_of(b)
        loss.backward()
        opt.step()
        return loss.detach()

    return step


def _classify(m: nn.Module) -> Loss:
    return lambda b: nn.functional.cross_entropy(m(b[0]), b[1])


def _mlp(dev: str) -> Built:
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 512), nn.ReLU(),
                      nn.Linear(512, 10)).to(dev)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, foreach=True)
    batch = (torch.randn(32, 256, device=dev), torch.randint(0, 10, (32,), device=dev))
    return m, opt, batch, _classify(m)


class _Block(nn.Module):
    """A residual block: the last batch norm's output is read only by the residual add."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu_(self.b1(self.c1(x)))
        return torch.relu(self.b2(self.c2(y)) + x)


def _cnn(dev: str, batch: int = 8) -> Built:
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
                      nn.MaxPool2d(2), _Block(16), _Block(16), nn.Conv2d(16, 64, 3, stride=2),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)).to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, foreach=True)
    x = torch.randn(batch, 3, 32, 32, device=dev)
    return m, opt, (x, torch.randint(0, 10, (batch,), device=dev)), _classify(m)


def _state_bytes(m: nn.Module, opt: torch.optim.Optimizer) -> int:
    seen = {p.untyped_storage().data_ptr(): p.untyped_storage().nbytes() for p in m.parameters()}
    for st in opt.state.values():
        for t in st.values():
            if isinstance(t, torch.Tensor) and t.numel() > 1:
                seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
    return sum(seen.values())


def _reference_and_emulated(build: Callable[[str], Built], opt_name: str, amp: bool) -> tuple[float, float]:
    m, opt, batch, loss_of = build("cpu")
    run = _step(m, opt, loss_of, amp)
    run(batch)  # optimizer state exists; the previous step's gradients are freed by zero_grad
    with PeakLiveBytes() as ref:
        run(batch)
    measured = _state_bytes(m, opt) + ref.peak
    # autocast has no meta path: an AMP step is traced on CPU tensors (the exporter uses fake
    # ones, the same dispatch)
    mm, om, bm, lm = build("cpu" if amp else "meta")
    g = trace_train_step(_step(mm, om, lm, amp), bm, mm, [om])
    pb = param_bytes(g)
    fp = footprint_from_sizes(pb, live_activation_bytes(g, pb), opt_name, get_device("h100"),
                              TENSORS, "fp32")
    return measured, (fp.total_mb - TENSORS.context_mb - TENSORS.workspace_mb) * MB


@pytest.mark.parametrize("amp", [False, True], ids=["fp32", "bf16-autocast"])
@pytest.mark.parametrize(("build", "opt"), [(_mlp, "adamw"), (_cnn, "momentum")], ids=["mlp", "cnn"])
def test_footprint_matches_the_bytes_a_cpu_step_holds(build: Callable[[str], Built], opt: str,
                                                      amp: bool) -> None:
    measured, emulated = _reference_and_emulated(build, opt, amp)
    assert emulated == pytest.approx(measured, rel=0.02)


def _tiny_gpt2(dev: str) -> Built:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    # no dropout: CPU attention then runs its fused kernel, as a GPU does (with dropout the
    # CPU falls back to the S x S math path and keeps float masks, which a GPU does not)
    cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=64,
                                  attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0)
    with torch.device(dev):
        m = transformers.GPT2LMHeadModel(cfg)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, foreach=True)
    ids = torch.randint(0, 512, (4, 64), device=dev)

    def loss_of(b: tuple[torch.Tensor]) -> torch.Tensor:
        logits = m(input_ids=b[0]).logits
        return nn.functional.cross_entropy(logits.reshape(-1, 512), b[0].reshape(-1))

    return m, opt, (ids,), loss_of


@pytest.mark.parametrize("amp", [False, True], ids=["fp32", "bf16-autocast"])
def test_tiny_gpt2_footprint_matches_the_cpu_step(amp: bool) -> None:
    measured, emulated = _reference_and_emulated(_tiny_gpt2, "adamw", amp)
    assert emulated == pytest.approx(measured, rel=0.02)


def test_batch_norm_output_is_not_saved() -> None:
    """A batch norm's backward reads its input and statistics, not its output: the saved set
    equals what autograd really packs (running statistics and parameters excluded)."""
    m, opt, (x, y), _ = _cnn("cpu")
    exclude = [*m.parameters(), *m.buffers(), x]
    with saved_storage_bytes(exclude) as seen:
        loss = nn.functional.cross_entropy(m(x), y)
    mm, om, bm, lm = _cnn("meta")
    g = trace_train_step(_step(mm, om, lm, False), bm, mm, [om])
    assert saved_bytes(g) == pytest.approx(sum(seen.values()), rel=1e-4)
    loss.backward()


def test_footprint_and_band_grow_with_the_batch() -> None:
    dev, last = get_device("t4"), None
    for b in (1, 2, 4, 8, 16):
        mm, om, bm, lm = _cnn("meta", b)
        cost = GraphCost.from_graph(trace_train_step(_step(mm, om, lm, False), bm, mm, [om]), b)
        m = estimate(JobSpec("resnet20", "cifar10", "momentum", b, 1), cost, dev, P).memory
        now = (m.lo_mb, m.total_mb, m.hi_mb)
        assert m.lo_mb < m.total_mb < m.hi_mb
        if last is not None:
            assert all(a > b_ for a, b_ in zip(now, last, strict=True))
        last = now


def test_estimate_reports_the_band_and_the_at_risk_state(tmp_path: Any) -> None:
    """``gpuscope estimate``'s rows: a device whose memory lies inside the band is at risk (the
    job still runs, ``fits`` True), one below the band is OOM, one above it fits."""
    job = JobSpec("resnet20", "cifar10", "sgd", 32, 1)
    base = get_device("t4")
    rows, _ = estimate_rows([job], [base], graph_cache=str(tmp_path))
    r = rows[0]
    assert r["mem_gb_lo"] < r["mem_gb"] < r["mem_gb_hi"] and r["fit"] == "fits"
    devs = [dataclasses.replace(base, name=n, mem_gb=gb) for n, gb in (
        ("inside", (r["mem_gb_lo"] + r["mem_gb_hi"]) / 2), ("below", 0.9 * r["mem_gb_lo"]),
        ("above", 1.1 * r["mem_gb_hi"]))]
    rows, _ = estimate_rows([job], devs, graph_cache=str(tmp_path))
    got = {x["device"]: (x["fit"], x["at_risk"], x["fits"], x["status"]) for x in rows}
    assert got == {"inside": ("at_risk", True, True, "ok"), "below": ("oom", False, False, "oom"),
                   "above": ("fits", False, True, "ok")}
