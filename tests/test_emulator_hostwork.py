"""Host work the device waits for (issue 11, A3C; ``gpuscope/emulator/hostwork.py``): environment
steps, a host-side optimizer and worker processes sharing the GPU, on a small traced step."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from gpuscope.devices import get_device
from gpuscope.emulator import EmulatorParams
from gpuscope.emulator.fidelity import FidelityJob
from gpuscope.emulator.hostwork import host_serial_times
from gpuscope.emulator.perf import GraphCost, estimate, gpu_times
from gpuscope.graphs.torch_frontend import trace_train_step

P = EmulatorParams()
JOB = FidelityJob("a3c", "pong", "adam", 1)


def _cost(**meta: object) -> GraphCost:
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


def test_supervised_graph_has_no_host_work() -> None:
    assert host_serial_times(_cost(), JOB, get_device("v100"), P) == (0.0, 0.0)


@pytest.mark.parametrize("dev", ["k80", "v100", "h100"])
def test_environment_steps_and_host_optimizer_add_serial_time(dev: str) -> None:
    d = get_device(dev)
    plain, rl = _cost(), _cost(env_steps=20, host_optimizer=True)
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
    one, four = _cost(), _cost(workers=4)
    t_gpu = gpu_times(one, d, P)[0]
    e1, e4 = estimate(JOB, one, d, P), estimate(JOB, four, d, P)
    assert e4.iter_s >= 4 * t_gpu and e4.iter_s >= e1.iter_s
    assert e4.mem_mb == pytest.approx(4 * e1.mem_mb)
    assert e4.gpu_util == pytest.approx(min(1.0, 4 * e1.t_gpu_s / e4.iter_s))


@pytest.mark.slow
def test_gavel_a3c_step_is_the_worker_loop() -> None:
    from gpuscope.emulator.fidelity import gavel_cost
    from gpuscope.workloads.models_gavel import A3C_STEPS

    cost = gavel_cost("a3c", 1)
    assert (cost.env_steps, cost.host_optimizer, cost.workers) == (A3C_STEPS, True, 4)
    # one LSTM-cell step per frame and the bootstrap value's, one backward per acted frame
    steps = cost.steps if cost.steps is not None else []
    fwd = sum(1 for s, f in zip(steps, cost.forward) if s > 0 and f)
    assert fwd == A3C_STEPS + 1
    assert sum(1 for s, f in zip(steps, cost.forward) if s > 0 and not f) == A3C_STEPS
