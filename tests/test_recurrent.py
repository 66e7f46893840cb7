"""Recurrent layers traced as one fused op per layer and direction (``graphs/recurrent.py``):
numerics against ``nn.LSTM``/``GRU``/``RNN``, node counts, saved-for-backward bytes against
autograd, FLOPs against PyTorch's counter, and the emulator's sequential kernel model."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from autograd_saved import saved_storage_bytes
from torch import nn

from gpuscope.cluster.devices import get_device
from gpuscope.emulator import EmulatorParams
from gpuscope.emulator.memory import saved_bytes
from gpuscope.emulator.perf import RNN_KERNELS_PER_STEP, GraphCost, kernel_times
from gpuscope.graphs.frontends.torch import trace_train_step
from gpuscope.graphs.opgraph import OpGraph
from gpuscope.graphs.ops.aten import recurrent_cell, recurrent_flops
from gpuscope.graphs.ops.recurrent import fused_recurrent_layers

P = EmulatorParams()


def _loss(y: torch.Tensor, hx: torch.Tensor | tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    h = hx[0] if isinstance(hx, tuple) else hx
    extra = (hx[1] ** 2).sum() if isinstance(hx, tuple) else 0.0
    return (y ** 2).sum() + (h ** 3).sum() + extra


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN])
@pytest.mark.parametrize("kw", [{}, {"num_layers": 2, "bidirectional": True},
                                {"batch_first": True, "bias": False}])
def test_fused_layers_equal_pytorch(cls: type[nn.RNNBase], kw: dict) -> None:
    torch.manual_seed(0)
    m = cls(5, 6, **kw).double()
    x = torch.randn(4, 3, 5, dtype=torch.double, requires_grad=True)
    ref = torch.autograd.grad(_loss(*m(x)), [x, *m.parameters()])
    with fused_recurrent_layers(m) as n:
        got = torch.autograd.grad(_loss(*m(x)), [x, *m.parameters()])
    assert n == 1 and "forward" not in vars(m)  # restored
    for a, b in zip(ref, got):
        torch.testing.assert_close(a, b)


def test_unbatched_with_state_and_relu() -> None:
    torch.manual_seed(1)
    m = nn.RNN(3, 4, nonlinearity="relu").double()
    x, h = torch.randn(6, 3, dtype=torch.double), torch.randn(1, 4, dtype=torch.double)
    y, hn = m(x, h)
    with fused_recurrent_layers(m):
        y2, hn2 = m(x, h)
    torch.testing.assert_close(y, y2)
    torch.testing.assert_close(hn, hn2)


def _classifier(device: str, steps: int, hidden: int = 32,
                batch: int = 4) -> tuple[nn.Module, tuple, list]:
    torch.manual_seed(0)
    m = nn.ModuleDict({"rnn": nn.LSTM(8, hidden, batch_first=True),
                       "head": nn.Linear(hidden, 10)}).to(device)
    x = torch.randn(batch, steps, 8, device=device)
    y = torch.zeros(batch, dtype=torch.long, device=device)
    return m, (x, y), [torch.optim.SGD(m.parameters(), lr=0.1)]


def _trace(steps: int, hidden: int = 32, batch_size: int = 4) -> OpGraph:
    m, batch, opts = _classifier("meta", steps, hidden, batch_size)

    def step(b: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        opts[0].zero_grad()
        loss = nn.functional.cross_entropy(m["head"](m["rnn"](b[0])[0][:, -1]), b[1])
        loss.backward()
        opts[0].step()
        return loss

    return trace_train_step(step, batch, m, opts)


def test_one_node_per_layer_whatever_the_length() -> None:
    short, long = _trace(8), _trace(64)
    assert short.num_nodes == long.num_nodes < 80
    ops = [n.op for n in long.nodes if "recurrence" in n.op]
    assert ops == ["gpuscope.lstm_recurrence.default", "gpuscope.lstm_recurrence_backward.default"]


@pytest.mark.filterwarnings("ignore:TF32 acceleration on top of oneDNN")
def test_lstm_saved_bytes_match_autograd() -> None:
    # Reference: autograd's native decomposition on CPU (oneDNN off: its opaque workspace is
    # not what a GPU keeps), storages counted once, parameters and the input excluded. The
    # loss reads only the outputs' sum, so what is saved is the LSTM's own state.
    torch.manual_seed(0)
    T, B, H = 16, 4, 32
    m = nn.LSTM(8, H)
    x = torch.randn(T, B, 8)
    with torch.backends.mkldnn.flags(enabled=False), \
            saved_storage_bytes([*m.parameters(), x]) as seen:
        m(x)[0].sum()
    ref = sum(seen.values())
    # per step and sample: i f g o, c_{t-1}, tanh c_t, h_{t-1} (h0 and c0 are one zeros tensor)
    assert ref == pytest.approx(4 * B * H * 7 * T, rel=0.02)
    mm = nn.LSTM(8, H).to("meta")
    opt = torch.optim.SGD(mm.parameters(), lr=0.1)

    def step(b: tuple[torch.Tensor]) -> torch.Tensor:
        opt.zero_grad()
        loss = mm(b[0])[0].sum()
        loss.backward()
        opt.step()
        return loss

    g = trace_train_step(step, (torch.empty(T, B, 8, device="meta"),), mm, [opt])
    assert saved_bytes(g) == pytest.approx(ref, rel=0.03)


@pytest.mark.filterwarnings("ignore:TF32 acceleration on top of oneDNN")
def test_flops_match_pytorch_flop_counter() -> None:
    from torch.utils.flop_counter import FlopCounterMode

    T, H = 28, 32
    m, (x, y), _ = _classifier("cpu", T, H)
    with torch.backends.mkldnn.flags(enabled=False), FlopCounterMode(display=False) as fc:
        nn.functional.cross_entropy(m["head"](m["rnn"](x)[0][:, -1]), y).backward()
    ref = fc.get_total_flops()
    g = _trace(T, H)
    dense = sum(n.flops or 0.0 for n in g.nodes if n.op_class in ("conv", "matmul"))
    pointwise = sum(recurrent_flops("lstm", T, 4, H, n.op.endswith("backward.default"))[1]
                    for n in g.nodes if "recurrence" in n.op)
    # the fused backward also computes d h0 (cuDNN does; the decomposition skips it)
    assert dense - pointwise == pytest.approx(ref, rel=0.02)
    assert dense - pointwise >= ref


def test_recurrent_kernel_is_sequential() -> None:
    h100 = get_device("h100")
    long = GraphCost.from_graph(_trace(64, 64), 4)
    rec = [i for i, s in enumerate(long.steps) if s > 0]
    assert len(rec) == 2 and all(long.steps[i] == 64 for i in rec)
    kb = long.kernels
    assert kb is not None
    for i in rec:  # one timestep's GEMM: batch 4, G * H = 4 * 64 gates, hidden 64
        assert sorted(kb.bmnk[i].tolist()) == sorted([1.0, 4.0, 4 * 64.0, 64.0])
    t, _ = kernel_times(long, h100, P)
    for i in rec:  # at least the per-timestep latency floor
        assert t[i] >= 64 * RNN_KERNELS_PER_STEP * P.kernels.launch_us * 1e-6
    # the same FLOPs as one step of a 64x larger batch: parallel, so much faster
    wide = GraphCost.from_graph(_trace(1, 64, 256), 256)
    t_wide, _ = kernel_times(wide, h100, P)
    i_w = next(i for i, s in enumerate(wide.steps) if s > 0)
    assert wide.flops[i_w] == long.flops[rec[0]]
    assert t[rec[0]] > 10 * t_wide[i_w]


def test_recurrent_cell_names() -> None:
    assert recurrent_cell("gru_recurrence_backward") == "gru"
    assert recurrent_cell("rnn_tanh_recurrence") == "rnn_tanh"
    assert recurrent_cell("mm") is None


@pytest.mark.parametrize("cls", [nn.LSTMCell, nn.GRUCell, nn.RNNCell])
def test_fused_cells_equal_pytorch(cls: type[nn.RNNCellBase]) -> None:
    torch.manual_seed(2)
    m = cls(5, 6).double()
    x = torch.randn(3, 5, dtype=torch.double, requires_grad=True)

    def unroll() -> torch.Tensor:
        h: Any = None
        total = x.new_zeros(())
        for t in range(4):
            h = m(x * (t + 1), h)
            total = total + ((h[0] if isinstance(h, tuple) else h) ** 2).sum()
        return total

    ref = torch.autograd.grad(unroll(), [x, *m.parameters()])
    with fused_recurrent_layers(m) as n:
        got = torch.autograd.grad(unroll(), [x, *m.parameters()])
    assert n == 1
    for a, b in zip(ref, got):
        torch.testing.assert_close(a, b)


def test_recurrence_survives_a_json_round_trip() -> None:
    # a graph file (bring-your-own-job) keeps the op name and shape the emulator reads
    from gpuscope.graphs import graph_from_dict, graph_to_dict

    g = _trace(12)
    a, b = GraphCost.from_graph(g, 4), GraphCost.from_graph(graph_from_dict(graph_to_dict(g)), 4)
    assert a.steps is not None and b.steps is not None
    assert list(a.steps) == list(b.steps) and a.kernels is not None and b.kernels is not None
    assert a.kernels.bmnk.tolist() == b.kernels.bmnk.tolist()
    h100 = get_device("h100")
    assert kernel_times(a, h100, P)[0].sum() == pytest.approx(kernel_times(b, h100, P)[0].sum())
