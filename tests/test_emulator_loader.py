"""Legacy host era (Gavel LM/Transformer fidelity): the DataLoader workers' per-batch
hand-off is paid only by jobs whose batches come from worker processes, a dataset indexed on
the main thread pays its per-sample ops instead, and PyTorch 1.x optimizers loop over
parameter tensors (one dispatch and one kernel per tensor per foreach step)."""

from __future__ import annotations

import pytest
from test_emulator import conv_net, job

from gpuscope.cluster.devices import get_device
from gpuscope.emulator import EmulatorParams, estimate
from gpuscope.emulator.hostwork import per_tensor_extra_dispatch
from gpuscope.emulator.perf import GraphCost

P = EmulatorParams(step_sync_ms=2.0, loader_handoff_ms=10.0)
DEV = get_device("p100")  # legacy era


def test_in_process_loader_pays_no_worker_hand_off() -> None:
    cost = GraphCost.from_graph(conv_net(8), 8)
    workers = estimate(job(dataset="cifar10", batch_size=8), cost, DEV, P)
    inline = estimate(job(model="lstm_lm", dataset="wikitext2", batch_size=8), cost, DEV, P)
    speed = DEV.host_single_core
    assert workers.t_sync_s == pytest.approx(12.0e-3 / speed)
    assert inline.t_sync_s == pytest.approx(2.0e-3 / speed)  # no CIFAR-style hand-off
    assert inline.t_pipeline_s == 0.0  # no worker pipeline either: its loading is in line
    t_inline = 8 * P.inline_ops_per_sample["wikitext2"] * P.dispatch_us * 1e-6 / speed
    assert inline.iter_s == pytest.approx(max(inline.t_gpu_s, inline.t_dispatch_s)
                                          + inline.t_sync_s + t_inline)
    # the in-line loading grows with the batch; the hand-off does not
    big = estimate(job(model="lstm_lm", dataset="wikitext2", batch_size=64),
                   GraphCost.from_graph(conv_net(8), 64), DEV, P)
    assert big.iter_s - max(big.t_gpu_s, big.t_dispatch_s) - big.t_sync_s == pytest.approx(8 * t_inline)


def test_per_tensor_optimizer_loops_cost_dispatches_and_launches() -> None:
    cost = GraphCost.from_graph(conv_net(8), 8)
    assert cost.n_param_tensors == 20
    # conv_net's one foreach update covers all 20 weights: 19 more ops, plus 20 zero_grads
    assert per_tensor_extra_dispatch(cost) == 19 + 20
    loop = estimate(job(batch_size=8), cost, DEV, P)
    foreach = estimate(job(batch_size=8), cost, DEV, P.with_(per_tensor_optimizer=0.0))
    speed = DEV.host_single_core
    assert foreach.t_dispatch_s == pytest.approx(cost.n_dispatch * P.dispatch_us * 1e-6 / speed)
    assert loop.t_dispatch_s - foreach.t_dispatch_s == pytest.approx(39 * P.dispatch_us * 1e-6 / speed)
    # GPU: 19 more launches in the update, 20 memset kernels writing the gradients
    assert loop.t_gpu_s > foreach.t_gpu_s + 39 * P.kernels.launch_us * 1e-6
