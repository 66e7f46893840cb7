"""Worker processes time-slicing one GPU without MPS (Gavel's A3C;
``gpuscope/emulator/hostwork.py``, ``time_sliced_gpu_s``): one context switch of
``ctx_switch_us`` per kernel after which a worker's queue drains, the switch cost
fitted on identical-pair colocations (``calibrate.fit_ctx_switch``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from train_step import rl_step_cost

from gpuscope.cluster.devices import get_device
from gpuscope.emulator import EmulatorParams
from gpuscope.emulator.calibration.fidelity import GavelJob, colocation_points
from gpuscope.emulator.calibration.fit import Point, colocation_errors, fit_ctx_switch
from gpuscope.emulator.hostwork import dispatched_gpu_kernels, time_sliced_gpu_s
from gpuscope.emulator.perf import GraphCost, estimate

JOB = GavelJob("a3c", "pong", "adam", 1)
#: no per-tensor loops
P = EmulatorParams(per_tensor_optimizer=0.0)


def _toy(n: int = 10, workers: int = 4, **kw: object) -> GraphCost:
    """A hand-made step of ``n`` kernels (only the fields the time-slicing model reads)."""
    z = np.zeros(n)
    f = np.zeros(n, dtype=bool)
    return GraphCost(flops=z, bytes=z, numel=np.ones(n), cls=np.zeros(n, dtype=int),
                     is_half=f, forward=f, n_dispatch=n,
                     n_dispatch_forward=0, n_conv_forward=0, param_bytes=0.0,
                     activation_bytes=0.0, batch_size=1, workers=workers, **kw)  # type: ignore[arg-type]


def test_switch_cost_by_hand() -> None:
    d, p = get_device("v100"), P.with_(ctx_switch_us=20.0)
    # dispatch-bound (2 ms of host per 1 ms of GPU): every one of the 10 kernels drains the
    # queue, each switch 20 us: 1 ms + 10 x 20 us = 1.2 ms
    assert time_sliced_gpu_s(_toy(), 1e-3, 2e-3, d, p) == pytest.approx(1.2e-3)
    # the host issues 4x faster than the GPU runs: a quarter of the kernels drain it
    assert time_sliced_gpu_s(_toy(), 1e-3, 0.25e-3, d, p) == pytest.approx(1.05e-3)
    # one process, or no switch cost: the plain GPU time
    assert time_sliced_gpu_s(_toy(workers=1), 1e-3, 2e-3, d, p) == 1e-3
    assert time_sliced_gpu_s(_toy(), 1e-3, 2e-3, d, P) == 1e-3


def test_kernels_issued_one_by_one() -> None:
    opt = np.array([False, False, True])
    tensors = np.array([1.0, 1.0, 3.0])
    loops = EmulatorParams(per_tensor_optimizer=1.0)
    # PyTorch 1.x: the foreach kernel is 3 kernels, and zero_grad zeroes the 3 gradients
    c = _toy(3, optimizer=opt, opt_tensors=tensors, n_param_tensors=3)
    assert dispatched_gpu_kernels(c, loops) == 1 + 1 + 3 + 3
    assert dispatched_gpu_kernels(c, P) == 3  # foreach era: as traced
    # Hogwild A3C: the optimizer runs on the host, zero_grad still on the GPU
    h = dataclasses.replace(c, host_optimizer=True)
    assert dispatched_gpu_kernels(h, loops) == 1 + 1 + 0 + 3


@pytest.mark.parametrize("dev", ["k80", "v100"])
def test_estimate_waits_for_the_switches(dev: str) -> None:
    d, p = get_device(dev), EmulatorParams().with_(ctx_switch_us=40.0)
    one, four = rl_step_cost(workers=1), rl_step_cost(workers=4)
    # a single process never switches: other jobs are unchanged by the constant
    assert estimate(JOB, one, d, p).iter_s == estimate(JOB, one, d, EmulatorParams()).iter_s
    e0, e = estimate(JOB, four, d, EmulatorParams()), estimate(JOB, four, d, p)
    t_slice = time_sliced_gpu_s(four, e.t_gpu_s, e.t_dispatch_s, d, p)
    assert t_slice > e.t_gpu_s  # this batch-1 step is dispatch-bound: it drains every kernel
    assert e.iter_s == pytest.approx(max(e0.iter_s, 4 * t_slice))
    assert e.bottleneck == "gpu" and e.gpu_util == 1.0


def test_colocation_points_and_fit_recover_the_switch_cost() -> None:
    single = [Point(JOB, rl_step_cost(workers=1), get_device(d), 1.0, 1, "A3C-b1") for d in ("k80", "p100", "v100")]
    data = {"k80": {"('A3C', 1)": {"null": 4.0, "('A3C', 1)": [1.8, 1.8]}},
            "p100": {"('A3C', 1)": {"null": 4.0, "('A3C', 1)": [0.0, 0.0]}}}  # did not run
    pts = colocation_points(data, single)
    assert [(p.device.name, p.cost.workers, p.measured) for p in pts] == [("k80", 2, 0.45)]
    assert colocation_points(data, single, ("ResNet-18",)) == []
    # measurements made by the model itself at 25 us are fitted back to 25 us
    base = EmulatorParams(step_sync_ms=0.0)  # no per-step sync to hide the GPU behind
    truth = base.with_(ctx_switch_us=25.0)
    pairs = [dataclasses.replace(p, cost=dataclasses.replace(p.cost, workers=2)) for p in single]
    emulated = np.exp(colocation_errors(pairs, truth))  # their measured is 1
    assert all(0.0 < r < 1.0 for r in emulated)  # two copies slow each other down
    made = [dataclasses.replace(p, measured=float(r)) for p, r in zip(pairs, emulated)]
    assert np.abs(colocation_errors(made, truth)).max() < 1e-12
    assert fit_ctx_switch(made, base).ctx_switch_us == pytest.approx(25.0, rel=0.02)
