"""Worker processes time-slicing one GPU without MPS (Gavel's A3C;
``gpuscope/emulator/hostwork.py``, ``context_switches``): one context switch of
``ctx_switch_us`` per time slice and per queue drain, not per kernel, the switch cost fitted
on identical-pair colocations (``calibration.fit.fit_ctx_switch``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from train_step import rl_step_cost

from gpuscope.cluster.devices import get_device
from gpuscope.emulator import EmulatorParams
from gpuscope.emulator.calibration.fidelity import GavelJob, colocation_points
from gpuscope.emulator.calibration.fit import Point, colocation_errors, fit_ctx_switch
from gpuscope.emulator.hostwork import context_switches, time_slice_wait_s, time_sliced_gpu_s
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
    p = P.with_(ctx_switch_us=20.0, ctx_slice_ms=2.0)
    # 4 workers, 1 ms of GPU each, 3 host round trips: the step's end and each round trip
    # drain the queue, switched back in 3/4 of the time: 4 x 3/4 = 3 drain switches, plus
    # 1 ms / 2 ms = 0.5 slice expiries; 3.5 x 20 us = 70 us of GPU and 3 x 20 us of waiting
    c = _toy(env_steps=3)
    assert context_switches(c, 1e-3, p) == pytest.approx((3.5, 3.0))
    assert time_sliced_gpu_s(c, 1e-3, p) == pytest.approx(1e-3 + 70e-6)
    assert time_slice_wait_s(c, 1e-3, p) == pytest.approx(60e-6)
    # two GPU-bound copies of a 100 ms step: 1/2 drain + 50 slices, 50.5 x 20 us
    two = _toy(workers=2)
    assert time_sliced_gpu_s(two, 0.1, p) == pytest.approx(0.1 + 50.5 * 20e-6)
    # one process, or no switch cost: the plain GPU time, no wait
    assert time_sliced_gpu_s(_toy(workers=1), 1e-3, p) == 1e-3
    assert time_slice_wait_s(_toy(workers=1), 1e-3, p) == 0.0
    assert time_sliced_gpu_s(c, 1e-3, P) == 1e-3


def test_switches_bounded_by_slices_and_drains_not_kernels() -> None:
    p = P.with_(ctx_switch_us=30.0, ctx_slice_ms=2.0)
    for n in (10, 1000):  # the same step split into 100x more kernels: the same switches
        c = _toy(n, workers=3, env_steps=5)
        sw, drains = context_switches(c, 4e-3, p)
        assert sw == pytest.approx((1 + 5) * 2 / 3 + 4e-3 / 2e-3)
        # at most one switch per host synchronisation and per full slice of GPU work
        assert drains <= 1 + 5 and sw <= (1 + 5) + 4e-3 / 2e-3
    # a longer slice means fewer switches for a GPU-bound worker
    long = context_switches(_toy(workers=2), 0.1, p.with_(ctx_slice_ms=8.0))[0]
    assert long < context_switches(_toy(workers=2), 0.1, p)[0]


@pytest.mark.parametrize("dev", ["k80", "v100"])
def test_estimate_waits_for_the_switches(dev: str) -> None:
    d, p = get_device(dev), EmulatorParams().with_(ctx_switch_us=40.0)
    one, four = rl_step_cost(workers=1), rl_step_cost(workers=4)
    # a single process never switches: other jobs are unchanged by the constant
    assert estimate(JOB, one, d, p).iter_s == estimate(JOB, one, d, EmulatorParams()).iter_s
    e0, e = estimate(JOB, four, d, EmulatorParams()), estimate(JOB, four, d, p)
    t_slice = time_sliced_gpu_s(four, e.t_gpu_s, p)
    assert t_slice > e.t_gpu_s
    # the GPU term, or the host chain plus the wait for its context after each drain
    wait = time_slice_wait_s(four, e.t_gpu_s, p)
    assert wait > 0
    # (one worker's iteration is its host chain: the same per-worker chain, no switches)
    assert e.iter_s == pytest.approx(max(estimate(JOB, one, d, p).iter_s + wait, 4 * t_slice))
    assert e.iter_s >= e0.iter_s


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
