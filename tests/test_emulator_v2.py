"""Emulator v2 properties: kernel parallelism from work, saved-for-backward
memory, precision, fit/OOM facts, FLOPs against PyTorch's counter."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from autograd_saved import saved_storage_bytes
from torch import nn

from gpuscope.cluster.devices import get_device, load_catalog
from gpuscope.core.errors import InputError
from gpuscope.emulator import EmulatorParams
from gpuscope.emulator.graphcost import conv_bias_bytes
from gpuscope.emulator.hostwork import achievable_bw
from gpuscope.emulator.memory import footprint_from_sizes, saved_bytes
from gpuscope.emulator.perf import GraphCost, gpu_times, kernel_times
from gpuscope.graphs.frontends.torch import trace_train_step
from gpuscope.graphs.opgraph import OpGraph, OpNode
from gpuscope.jobs.spec import JobSpec

P = EmulatorParams()


def one_op(op: str, klass: str, in_numel: int, out_numel: int) -> GraphCost:
    """A graph of one kernel reading ``in_numel`` FP32 elements and writing ``out_numel``."""
    nodes = [OpNode("input:0", "Input", "constant", (in_numel,), in_numel, 4, 0.0, 0.0, "data"),
             OpNode("k", op, klass, (out_numel,) if out_numel > 1 else (), out_numel, 4,
                    float(in_numel), 4.0 * (in_numel + out_numel), "forward")]
    return GraphCost.from_graph(OpGraph("one", nodes, [(0, 1)], {"batch_size": 1}), 1)


def test_reduction_time_grows_with_input() -> None:
    for dev in ("k80", "v100", "h100"):
        d = get_device(dev)
        times = [float(kernel_times(one_op("aten.sum.default", "reduction", n, 1), d, P)[0][0])
                 for n in (10**4, 10**6, 10**8)]
        assert times[0] < times[1] < times[2]
        # 10^8 FP32 elements = 400 MB read: bandwidth-bound, within 2x of bytes / (bw x eff)
        ideal = 4e8 / achievable_bw(d, P)
        assert ideal < times[2] < 2 * ideal


def test_scalar_loss_costs_microseconds_everywhere() -> None:
    # cross-entropy of a (64, 1000) batch reduced to a scalar
    cost = one_op("aten.nll_loss_forward.default", "loss", 64 * 1000, 1)
    for d in load_catalog().values():
        t = float(kernel_times(cost, d, P)[0][0])
        assert t < 60e-6, (d.name, t)


def test_tiny_kernel_costs_launch_and_one_dram_latency() -> None:
    """A one-element kernel (BatchNorm's ``num_batches_tracked += 1``) costs the launch and one
    DRAM round trip on every device, not a share of the bandwidth; 2.x parameters are refused
    with the reason."""
    floor = (P.kernels.launch_us + P.kernels.mem_latency_us) * 1e-6
    tiny = one_op("aten.add_.Tensor", "elementwise", 1, 1)
    for d in load_catalog().values():
        assert float(kernel_times(tiny, d, P)[0][0]) == pytest.approx(floor, rel=0.01), d.name
    with pytest.raises(InputError, match="belong to emulator 2.x"):
        EmulatorParams.from_dict({"mem_latency_us": 0.4})


def test_graph_path_prices_a_node_as_the_kernel_model_does() -> None:
    """One code path: a one-node graph's kernel time is ``kernel_time`` of the same kernel."""
    from gpuscope.emulator.kernels import kernel_time

    b, m, n, k = 8, 512, 384, 256
    nodes = [OpNode("a", "Input", "constant", (b, m, k), b * m * k, 4, 0.0, 0.0, "data"),
             OpNode("w", "Parameter", "constant", (b, k, n), b * k * n, 4, 0.0, 0.0, "data"),
             OpNode("mm", "aten.bmm.default", "matmul", (b, m, n), b * m * n, 4,
                    2.0 * b * m * n * k, 4.0 * b * (m * k + k * n + m * n), "forward")]
    cost = GraphCost.from_graph(OpGraph("bmm", nodes, [(0, 2), (1, 2)], {"batch_size": b}), b)
    add = one_op("aten.add.Tensor", "elementwise", 2 * 10**6, 10**6)
    for dev in ("t4", "a100", "h100"):
        d = get_device(dev)
        want = kernel_time("gemm", d, b=b, m=m, n=n, k=k)
        assert float(kernel_times(cost, d, P)[0][0]) == pytest.approx(want, rel=1e-12)
        want = kernel_time("add", d, B=1000, H=1000)  # 12 MB: two inputs, one output
        assert float(kernel_times(add, d, P)[0][0]) == pytest.approx(want, rel=1e-12)


def test_graph_path_prices_a_convolution_as_the_kernel_model_does() -> None:
    """A one-node graph of a 3x3 convolution (its geometry read off the producers' shapes)
    costs what ``kernel_time`` gives NeuSight's ``conv`` row of the same shape."""
    from gpuscope.emulator.kernels import kernel_time

    b, c, k, hw = 8, 64, 128, 28
    fl = 2.0 * b * k * hw * hw * c * 9
    byts = 4.0 * (b * c * hw * hw + b * k * hw * hw + k * c * 9)
    nodes = [OpNode("x", "Input", "constant", (b, c, hw, hw), b * c * hw * hw, 4, 0.0, 0.0, "data"),
             OpNode("w", "Parameter", "constant", (k, c, 3, 3), k * c * 9, 4, 0.0, 0.0, "data"),
             OpNode("conv", "aten.convolution.default", "conv", (b, k, hw, hw), b * k * hw * hw,
                    4, fl, byts, "forward")]
    cost = GraphCost.from_graph(OpGraph("conv", nodes, [(0, 2), (1, 2)], {"batch_size": b}), b)
    for dev in ("p100", "t4", "v100", "h100"):
        d = get_device(dev)
        want = kernel_time("conv", d, B=b, Input_Channel=c, Output_Channel=k, Kernel_Szie=3,
                           Input_Size=hw, Stride=1, Padding=1)
        assert float(kernel_times(cost, d, P)[0][0]) == pytest.approx(want, rel=1e-12)


def _conv_graph(c: int, k: int, groups: int, bias: bool) -> OpGraph:
    """A 3x3 convolution (batch 8, 28 x 28, FP32), its backward, and optionally a bias."""
    b, hw = 8, 28
    out = b * k * hw * hw
    fl = 2.0 * b * k * hw * hw * c // groups * 9
    nodes = [OpNode("x", "Input", "constant", (b, c, hw, hw), b * c * hw * hw, 4, 0.0, 0.0, "data"),
             OpNode("w", "Parameter", "constant", (k, c // groups, 3, 3), k * c // groups * 9, 4,
                    0.0, 0.0, "data"),
             OpNode("conv", "aten.convolution.default", "conv", (b, k, hw, hw), out, 4, fl,
                    4.0 * (b * c * hw * hw + out), "forward"),
             OpNode("dy", "aten.ones_like.default", "elementwise", (b, k, hw, hw), out, 4, 0.0,
                    4.0 * out, "backward"),
             OpNode("bwd", "aten.convolution_backward.default", "conv", (b, c, hw, hw),
                    b * c * hw * hw, 4, 2 * fl, 4.0 * (2 * b * c * hw * hw + out), "backward")]
    edges = [(0, 2), (1, 2), (2, 3), (3, 4), (0, 4), (1, 4)]
    if bias:
        nodes.append(OpNode("bias", "Parameter", "constant", (k,), k, 4, 0.0, 0.0, "data"))
        edges.append((len(nodes) - 1, 2))
    return OpGraph("conv", nodes, edges, {"batch_size": b})


def test_a_convolution_bias_is_its_own_memory_kernel() -> None:
    """PyTorch adds a cuDNN convolution's bias after it (``output.add_``: the output read and
    written) and reduces the output gradient for the bias gradient (one read): with a bias the
    forward node costs one memory kernel of 2 x its output bytes more, the backward node one of
    1 x, with no dispatch of its own (the convolution op launches it from C++); a depthwise
    convolution (bias inside its kernel) costs nothing more."""
    from gpuscope.emulator.kernels import kernel_time

    out_bytes = 4.0 * 8 * 128 * 28 * 28
    plain = GraphCost.from_graph(_conv_graph(64, 128, 1, False), 8)
    biased = GraphCost.from_graph(_conv_graph(64, 128, 1, True), 8)
    assert plain.bias_bytes is None
    assert biased.bias_bytes is not None
    kern = [2.0 * out_bytes, 0.0, out_bytes]  # conv, dy, conv backward
    assert list(biased.bias_bytes) == kern
    assert (biased.n_dispatch, biased.n_dispatch_forward) == (plain.n_dispatch,
                                                              plain.n_dispatch_forward)
    for dev in ("p100", "a100"):
        d = get_device(dev)
        extra = kernel_times(biased, d, P)[0] - kernel_times(plain, d, P)[0]
        want = [kernel_time("memory", d, bytes=2.0 * out_bytes), 0.0,
                kernel_time("memory", d, bytes=out_bytes)]
        assert extra == pytest.approx(want, rel=1e-12)
        # under amp-fp16 the bias kernel moves half-precision activations
        half = kernel_times(biased, d, P, "amp-fp16")[0] - kernel_times(plain, d, P, "amp-fp16")[0]
        assert half[0] == pytest.approx(kernel_time("memory", d, bytes=out_bytes), rel=1e-12)
    dw = GraphCost.from_graph(_conv_graph(64, 64, 64, True), 8)
    assert dw.bias_bytes is None


def test_traced_bias_kernels_of_transposed_and_single_channel_convolutions() -> None:
    """A traced step: a one-input-channel convolution (not depthwise: one group) and a
    transposed convolution have their bias added in a kernel of their own (2 x the output's
    bytes forward, 1 x in the backward node reading the same weight); the depthwise one and
    the bias-free one have none."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1, groups=8),
                        nn.ConvTranspose2d(8, 4, 2, stride=2), nn.Conv2d(4, 2, 1, bias=False),
                        nn.Flatten(), nn.Linear(2 * 16 * 16, 3))
    x, y = torch.randn(2, 1, 8, 8), torch.zeros(2, dtype=torch.long)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)

    def step(batch: tuple[torch.Tensor, torch.Tensor]) -> None:
        opt.zero_grad()
        nn.functional.cross_entropy(net(batch[0]), batch[1]).backward()
        opt.step()

    g = trace_train_step(step, (x, y), net, [opt])
    convs = [i for i, n in enumerate(g.nodes) if n.op_class == "conv"]
    bias = dict(zip(convs, conv_bias_bytes(g, convs), strict=True))
    fwd = [i for i in convs if g.nodes[i].phase == "forward"]
    assert [g.nodes[i].shape for i in fwd] == [(2, 8, 8, 8), (2, 8, 8, 8), (2, 4, 16, 16),
                                              (2, 2, 16, 16)]
    assert [bias[i] for i in fwd] == [2.0 * 4 * 2 * 8 * 8 * 8, 0.0, 2.0 * 4 * 2 * 4 * 16 * 16, 0.0]
    bwd = sorted(bias[i] for i in convs if g.nodes[i].phase != "forward")
    assert bwd[-2:] == [4.0 * 2 * 8 * 8 * 8, 4.0 * 2 * 4 * 16 * 16] and not any(bwd[:-2])
    assert GraphCost.from_graph(g, 2).bias_bytes is not None


def test_model_half_runs_batch_norm_at_its_fp32_traffic() -> None:
    """Under ``model.half()`` every kernel of an FP32-traced step moves half its bytes except
    batch norm (PyTorch's own kernels: cuDNN's needs FP32 weights), which autocast would
    halve too: an element-wise kernel costs the same under both, a batch norm costs its FP32
    time under ``model.half()`` and less under autocast."""
    from gpuscope.emulator.perf import kernel_times

    b, c, hw = 16, 64, 56
    numel = b * c * hw * hw
    nodes = [OpNode("x", "Input", "constant", (b, c, hw, hw), numel, 4, 0.0, 0.0, "data"),
             OpNode("bn", "aten.native_batch_norm.default", "norm", (b, c, hw, hw), numel, 4,
                    8.0 * numel, 8.0 * numel, "forward"),
             OpNode("r", "aten.relu.default", "elementwise", (b, c, hw, hw), numel, 4,
                    float(numel), 8.0 * numel, "forward")]
    cost = GraphCost.from_graph(OpGraph("bn", nodes, [(0, 1), (1, 2)], {"batch_size": b}), b)
    half = cost.model_half()
    assert half.pure_half and not cost.pure_half
    for dev in ("v100", "a100", "titan-xp"):
        d = get_device(dev)
        fp32 = kernel_times(cost, d, P, "fp32")[0]
        amp = kernel_times(cost, d, P, "amp-fp16")[0]
        pure = kernel_times(half, d, P, "amp-fp16")[0]
        assert pure[1] == pytest.approx(amp[1], rel=1e-12)  # relu: half traffic in both
        assert pure[1] < fp32[1]
        assert pure[0] == pytest.approx(fp32[0], rel=1e-12)  # batch norm: FP32 traffic
        assert amp[0] < 0.8 * pure[0]


def test_a_view_costs_the_host_less_than_a_kernel() -> None:
    """Legacy era: an op that launches a kernel costs ``dispatch_us`` (12 us) on a reference
    core, a view (no kernel: sizes and strides only) ``view_dispatch_us`` (2.8 us, PyTorch's
    operator micro-benchmark of ``as_strided``)."""
    nodes = [OpNode("x", "Input", "constant", (4, 8), 32, 4, 0.0, 0.0, "data"),
             OpNode("v", "aten.view.default", "other", (32,), 32, 4, 0.0, 0.0, "forward"),
             OpNode("r", "aten.relu.default", "elementwise", (32,), 32, 4, 32.0, 256.0, "forward")]
    cost = GraphCost.from_graph(OpGraph("view", nodes, [(0, 1), (1, 2)], {"batch_size": 4}), 4)
    assert (cost.n_dispatch, cost.n_views) == (2, 1)
    assert P.view_dispatch_us == 2.8
    assert cost.dispatch_s(P, 1.0) == pytest.approx((12.0 + 2.8) * 1e-6, rel=1e-12)
    assert cost.dispatch_s(P, 0.5) == pytest.approx(2 * (12.0 + 2.8) * 1e-6, rel=1e-12)


def _layer_and_batch(device: str, p: float = 0.0) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    m = nn.ModuleDict({"enc": nn.TransformerEncoderLayer(64, 4, 256, dropout=p, batch_first=True),
                       "head": nn.Linear(64, 10)}).to(device)
    x = torch.randn(8, 16, 64, device=device) if device == "cpu" else torch.empty(8, 16, 64, device=device)
    y = torch.zeros(8, dtype=torch.long, device=device)
    return m, x, y


@pytest.mark.parametrize("p", [0.0, 0.1])
def test_transformer_layer_saved_bytes_match_autograd(p: float) -> None:
    # Reference: what autograd packs on CPU (saved_tensors_hooks), storages counted once,
    # parameters and the batch excluded. Without dropout the attention is PyTorch's own CPU
    # fused (flash) kernel, which keeps q, k, v, out, logsumexp as the GPU kernels do; with
    # dropout (no CPU fused kernel takes it) gpuscope's fused op, and dropout as CUDA runs it
    # (native_dropout, bool masks: gpuscope.graphs.ops.dropout).
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from gpuscope.graphs.ops.attention import fused_attention
    from gpuscope.graphs.ops.dropout import gpu_dropout

    m, x, y = _layer_and_batch("cpu", p)
    ctx = sdpa_kernel(SDPBackend.FLASH_ATTENTION) if p == 0 else fused_attention()
    with saved_storage_bytes([*m.parameters(), x, y]) as seen, ctx, gpu_dropout():
        nn.functional.cross_entropy(m["head"](m["enc"](x).mean(1)), y)
    ref = sum(seen.values())
    mm, xm, ym = _layer_and_batch("meta", p)
    opt = torch.optim.SGD(mm.parameters(), lr=0.1)

    def step(b: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(mm["head"](mm["enc"](b[0]).mean(1)), b[1])
        loss.backward()
        opt.step()
        return loss

    g = trace_train_step(step, (xm, ym), mm, [opt])
    # exact since the unsized outputs are counted (memory.UNSIZED_OUTPUTS: the layer norms'
    # mean/rstd instead of their outputs, the attention's logsumexp and RNG state, the bool
    # dropout masks); +7 % without dropout before
    assert saved_bytes(g) == pytest.approx(ref, rel=1e-4)


def test_flops_match_pytorch_flop_counter() -> None:
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(16 * 8 * 8, 10))
    x, y = torch.randn(4, 3, 8, 8), torch.zeros(4, dtype=torch.long)
    with FlopCounterMode(display=False) as fc:
        nn.functional.cross_entropy(net(x), y).backward()
    ref = fc.get_total_flops()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)

    def step(b: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(net(b[0]), b[1])
        loss.backward()
        opt.step()
        return loss

    g = trace_train_step(step, (x, y), net, [opt])
    ours = sum(n.flops or 0.0 for n in g.nodes if n.op_class in ("conv", "matmul"))
    assert ours == pytest.approx(ref, rel=0.02)


@pytest.fixture(scope="module")
def resnet50_b16() -> GraphCost:
    from gpuscope.graphs.export import export_graph

    return GraphCost.from_graph(export_graph(JobSpec("resnet50", "imagenet", "sgd", 16, 1)), 16)


@pytest.mark.slow
def test_fit_and_oom_facts(resnet50_b16: GraphCost) -> None:
    """NVIDIA's ResNet-50 v1.5 recipe (DeepLearningExamples) trains FP32 at batch 112 on a 16 GB
    V100, AMP at batch 256 on it and TF32 at batch 256 on an 80 GB A100: none of them is out of
    memory; twice the FP32 batch that fills a 16 GB card is. Seed 001 saw ResNet-50 at batch
    64 fail on its 8 GB cards under TensorFlow 2.5; a PyTorch step keeps fewer tensors (in-place
    ReLU, batch norm's output not saved) and is not declared out of memory there. Activations
    (the liveness peak) scale linearly with the batch (from the traced batch 16)."""
    from gpuscope.graphs.export import export_graph

    c = resnet50_b16
    amp = GraphCost.from_graph(export_graph(JobSpec("resnet50", "imagenet", "sgd", 16, 1,
                                                    precision="amp-fp16")), 16)

    def fit(dev: str, batch: int, opt: str = "sgd", cost: GraphCost = c) -> str:
        d = get_device(dev) if dev != "a100-80" else dataclasses.replace(get_device("a100"), mem_gb=80.0)
        return footprint_from_sizes(cost.param_bytes, cost.act_bytes(P) * batch / 16, opt, d, P,
                                    "fp32").fit_status

    for opt in ("sgd", "adam"):
        assert fit("gtx1080", 64, opt) != "oom" and fit("rtx2070", 64, opt) != "oom"
        assert fit("titanx", 64, opt) == "fits"
    assert fit("v100", 112) == "fits" and fit("a100-80", 256) == "fits"
    assert fit("v100", 256, cost=amp) != "oom"
    assert fit("v100", 256) == "oom"


def test_precision_ordering_on_ampere_and_later(resnet50_b16: GraphCost) -> None:
    for name in ("a100", "a100-pcie-40gb", "h100", "h100-pcie", "a10", "l4"):
        d = get_device(name)
        t = {p: gpu_times(resnet50_b16, d, P, p)[0] for p in ("fp32", "tf32", "amp-bf16", "amp-fp16")}
        assert t["amp-bf16"] <= t["tf32"] <= t["fp32"], (name, t)
        assert t["amp-fp16"] == pytest.approx(t["amp-bf16"])
    v = get_device("v100")  # Volta: FP16 tensor cores, no TF32/BF16
    tv = {p: gpu_times(resnet50_b16, v, P, p)[0] for p in ("fp32", "tf32", "amp-bf16", "amp-fp16")}
    assert tv["amp-fp16"] < tv["fp32"] and tv["tf32"] == pytest.approx(tv["fp32"])
    assert tv["amp-fp16"] < tv["amp-bf16"] <= tv["fp32"]  # BF16: half traffic, FP32 math
