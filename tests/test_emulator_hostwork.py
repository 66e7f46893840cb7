"""Host work the device waits for (A3C and Recommendation;
``gpuscope/emulator/hostwork.py``): environment steps, a host-side optimizer, worker processes
sharing the GPU and sparse batches built on the host, on a small traced step."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn
from train_step import rl_step_cost

from gpuscope.cluster.devices import get_device
from gpuscope.emulator import EmulatorParams
from gpuscope.emulator.calibration.fidelity import GavelJob
from gpuscope.emulator.hostwork import (
    batch_h2d_bytes,
    host_gpu_s,
    host_serial_times,
    sparse_batch_host_s,
    sparse_densify_s,
)
from gpuscope.emulator.perf import GraphCost, estimate, gpu_times

P = EmulatorParams()
JOB = GavelJob("a3c", "pong", "adam", 1)


def test_supervised_graph_has_no_host_work() -> None:
    assert host_serial_times(rl_step_cost(), JOB, get_device("v100"), P) == (0.0, 0.0)


@pytest.mark.parametrize("dev", ["k80", "v100", "h100"])
def test_environment_steps_and_host_optimizer_add_serial_time(dev: str) -> None:
    d = get_device(dev)
    plain, rl = rl_step_cost(), rl_step_cost(env_steps=20, host_optimizer=True)
    t_env, t_update = host_serial_times(rl, JOB, d, P)
    # 20 environment steps at the frames kind's CPU cost on this host, at least
    assert t_env >= 20 * P.cpu_ms_per_kind["frames"] * 1e-3 / d.host_single_core
    # weights in and gradients out over PCIe, at least
    assert t_update >= 2 * rl.param_bytes / (d.pcie_gbs * 1e9)
    e0, e1 = estimate(JOB, plain, d, P), estimate(JOB, rl, d, P)
    # the optimizer left the GPU, the host work is serial with the step
    assert e1.t_gpu_s < e0.t_gpu_s
    assert e1.iter_s == pytest.approx(max(e1.t_gpu_s, e1.t_dispatch_s)
                                      + P.step_sync_ms * 1e-3 / d.host_single_core + t_env + t_update)


def test_workers_share_the_gpu() -> None:
    d = get_device("v100")
    one, four = rl_step_cost(), rl_step_cost(workers=4)
    t_gpu = gpu_times(one, d, P)[0]
    e1, e4 = estimate(JOB, one, d, P), estimate(JOB, four, d, P)
    assert e4.iter_s >= 4 * t_gpu and e4.iter_s >= e1.iter_s
    assert e4.mem_mb == pytest.approx(4 * e1.mem_mb)
    assert e4.gpu_util == pytest.approx(min(1.0, 4 * e1.t_gpu_s / e4.iter_s))


@pytest.mark.slow
def test_gavel_a3c_step_is_the_worker_loop() -> None:
    from gpuscope.emulator.calibration.fidelity import gavel_cost
    from gpuscope.workloads.models.gavel import A3C_STEPS

    cost = gavel_cost("a3c", 1)
    assert (cost.env_steps, cost.host_optimizer, cost.workers) == (A3C_STEPS, True, 4)
    # one LSTM-cell step per frame and the bootstrap value's, one backward per acted frame
    steps = cost.steps if cost.steps is not None else []
    fwd = sum(1 for s, f in zip(steps, cost.forward) if s > 0 and f)
    assert fwd == A3C_STEPS + 1
    assert sum(1 for s, f in zip(steps, cost.forward) if s > 0 and not f) == A3C_STEPS


# --- sparse batches built on the host (Gavel's Recommendation) ----------------------------
SPARSE = dataclasses.replace(rl_step_cost(), sparse_nnz_per_sample=100.0, sparse_dense_width=20_000)
REC = GavelJob("rec_autoencoder", "ml20m", "adam", 1024)


def test_sparse_batch_host_time_by_hand() -> None:
    # 1024 users x 100 ratings = 102,400 non-zeros, on a reference core:
    #   LongTensor([rows, cols]) + the users' lists: (2 * 102,400 + 2 * 1024) x 57.809 ns = 11.958 ms
    #   np.unique's argsort: 102,400 x log2(102,400) = 1,704,335 comparisons x 1.9318 ns = 3.292 ms
    #   NumPy/SciPy copies: 102,400 x 244 B at 10 GB/s = 2.499 ms          -> 17.749 ms
    for dev in ("k80", "v100"):
        d = get_device(dev)
        assert sparse_batch_host_s(SPARSE, 1024, d, P) == pytest.approx(17.749e-3 / d.host_single_core, rel=1e-3)
    # the catalog's V100 host (0.716 of the reference core) is slower than the K80's (0.8)
    assert sparse_batch_host_s(SPARSE, 1024, get_device("v100"), P) == pytest.approx(
        sparse_batch_host_s(SPARSE, 1024, get_device("k80"), P) * 0.8 / 0.716)
    assert sparse_batch_host_s(rl_step_cost(), 1024, get_device("v100"), P) == 0.0


def test_sparse_batch_copy_and_densify_by_hand() -> None:
    # COO copy: 102,400 x (two int64 indices + one float32) + 1024 int64 user ids
    assert batch_h2d_bytes(SPARSE, REC) == 102_400 * 20 + 8 * 1024
    # dense batch for a dense graph: 1024 samples of ML-20M's 26,744 FP32 features
    assert batch_h2d_bytes(rl_step_cost(), REC) == 1024 * 26_744 * 4
    # to_dense on a V100: 1024 x 20,000 FP32 zeros + 102,400 x 20 B at 900 GB/s x the kernel
    # model's streaming efficiency, two launches
    bw = 900e9 * P.kernels.memory["dram_eff_hbm"]  # the V100's HBM2
    assert sparse_densify_s(SPARSE, 1024, get_device("v100"), P) == pytest.approx(
        83_968_000 / bw + 2 * P.kernels.launch_us * 1e-6, rel=1e-9)


def test_sparse_batch_is_serial_with_the_step() -> None:
    d = get_device("v100")
    e0, e1 = estimate(REC, rl_step_cost(), d, P), estimate(REC, SPARSE, d, P)
    t_batch = sparse_batch_host_s(SPARSE, 1024, d, P)
    # no loader workers: the batch is built on the main thread, the device waits for it
    assert e1.t_pipeline_s == 0.0 < e0.t_pipeline_s
    assert e1.iter_s == pytest.approx(max(e1.t_gpu_s, e1.t_dispatch_s)
                                      + P.step_sync_ms * 1e-3 / d.host_single_core + t_batch)
    # the COO batch is ~50x smaller than the dense one on the bus
    assert e1.t_gpu_s < e0.t_gpu_s


def test_gavel_recommendation_builds_sparse_batches() -> None:
    from gpuscope.emulator.calibration.fidelity import gavel_cost
    from gpuscope.workloads.models.gavel import ML20M_ITEMS

    cost = gavel_cost("rec_autoencoder", 8)
    # Liang et al. 2018 Table 1: 10.0 M interactions over 136,677 users
    assert cost.sparse_nnz_per_sample == pytest.approx(73.165, abs=1e-3)
    assert cost.sparse_dense_width == ML20M_ITEMS


def test_bottleneck_counts_host_work_and_shared_gpu() -> None:
    """The bottleneck label compares what the step waits for: host work the device waits for
    belongs to the main thread (``dispatch``), and 4 workers sharing the GPU load it 4 times."""
    d = get_device("k80")
    e = estimate(JOB, rl_step_cost(env_steps=5000), d, P)
    t_env, _ = host_serial_times(rl_step_cost(env_steps=5000), JOB, d, P)
    assert t_env > 10 * max(e.t_gpu_s, e.t_dispatch_s) and e.bottleneck == "dispatch"
    # this graph alone dispatches longer than the K80 computes it, but not 4 workers' worth
    # (its many views priced as ops, so that the premise holds with room to spare)
    q = P.with_(view_dispatch_us=P.dispatch_us)
    e1, e4 = estimate(JOB, rl_step_cost(), d, q), estimate(JOB, rl_step_cost(workers=4), d, q)
    assert e1.t_gpu_s < e1.t_dispatch_s < 4 * e4.t_gpu_s
    assert (e1.bottleneck, e4.bottleneck) == ("dispatch", "gpu")


def test_host_gpu_overlap_by_hand() -> None:
    """``host_gpu_s``: the max when one side dominates, the sum at p = 1, more than the max
    and less than the sum in between when the two are close."""
    inf, p1, p2 = P, P.with_(host_gpu_p=1.0), P.with_(host_gpu_p=2.0)
    assert host_gpu_s(2.0, 1.0, inf) == 2.0  # the default: the plain max
    assert host_gpu_s(2.0, 1.0, p1) == pytest.approx(3.0)  # p = 1: the sum
    # p = 2: 3-4-5
    assert host_gpu_s(4.0, 3.0, p2) == pytest.approx(5.0)
    assert host_gpu_s(3.0, 4.0, p2) == pytest.approx(5.0)  # symmetric
    for p in (1.5, 3.0, 10.0):
        k = P.with_(host_gpu_p=p)
        assert host_gpu_s(1.0, 1.0, k) == pytest.approx(2.0 ** (1.0 / p))  # equal times
        # one side 100x the other: the max, to within 0.01 ** p / p
        assert host_gpu_s(1.0, 0.01, k) == pytest.approx(1.0, rel=0.01 ** p / p * 1.01)
        for a, b in ((3.0, 1.0), (1.0, 0.7), (0.2, 0.9)):
            assert max(a, b) < host_gpu_s(a, b, k) < a + b
        # the closer the two, the larger the excess over the max
        xs = [host_gpu_s(1.0, d, k) - 1.0 for d in (0.1, 0.5, 0.9, 1.0)]
        assert xs == sorted(xs)
        # growing either side never shortens the step
        ts = [host_gpu_s(1.0, d, k) for d in (0.1, 0.5, 0.9, 1.0, 1.1, 2.0, 5.0)]
        assert ts == sorted(ts)
    assert host_gpu_s(0.0, 1.0, p1) == 1.0


def test_estimate_overlaps_host_and_gpu() -> None:
    d = get_device("v100")
    q = P.with_(host_gpu_p=2.0)
    e0, e = estimate(JOB, rl_step_cost(), d, P), estimate(JOB, rl_step_cost(), d, q)
    sync = P.step_sync_ms * 1e-3 / d.host_single_core
    assert e0.iter_s == pytest.approx(max(e0.t_gpu_s, e0.t_dispatch_s) + sync)
    assert e.iter_s == pytest.approx(host_gpu_s(e.t_gpu_s, e.t_dispatch_s, q) + sync)
    assert e.iter_s > e0.iter_s


def _cnn_cost(batch: int) -> GraphCost:
    """A small CNN's SGD step at ``batch`` (cuDNN convolutions and batch norms)."""
    from train_step import classification_step

    from gpuscope.graphs.frontends.torch import trace_train_step

    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                      nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)).to("meta")
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    x = (torch.empty(batch, 3, 64, 64, device="meta"),
         torch.zeros(batch, dtype=torch.long, device="meta"))
    return GraphCost.from_graph(trace_train_step(classification_step(m, opt), x, m, [opt]), batch)


def test_legacy_fit_recovers_the_overlap_norm() -> None:
    """Steps made by the model itself with ``cudnn_dispatch_us`` 40 and ``host_gpu_p`` 2 (GPU
    and host times from far apart to equal over the batches) are fitted back to them."""
    from gpuscope.emulator.calibration.measured import StepRow, fit_legacy_dispatch, step_seconds

    truth = P.with_(cudnn_dispatch_us=40.0, host_gpu_p=2.0)
    rows = [StepRow(JOB, _cnn_cost(b), get_device(d), 1.0)  # type: ignore[arg-type]
            for b in (4, 32, 128, 512) for d in ("titan-xp", "rtx2080ti")]
    rows = [dataclasses.replace(r, measured_s=step_seconds(r, truth, loader=False)) for r in rows]
    ratios = [estimate(r.job, r.cost, r.device, truth) for r in rows]
    assert min(e.t_gpu_s / e.t_dispatch_s for e in ratios) < 0.5 < 2.0 < max(
        e.t_gpu_s / e.t_dispatch_s for e in ratios)  # both regimes and the balance between
    fit = fit_legacy_dispatch(rows, P.with_(cudnn_dispatch_us=62.0))
    assert fit.cudnn_dispatch_us == pytest.approx(40.0, rel=0.02)
    assert fit.host_gpu_p == pytest.approx(2.0, rel=0.05)
