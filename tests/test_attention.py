"""Fused scaled dot-product attention in the traced graph (its memory and precision;
``gpuscope.graphs.ops.attention``): outputs and gradients equal PyTorch's, FLOPs equal
``torch.utils.flop_counter``'s, the saved set is the fused kernels' (no S x S tensors), code
that computes attention explicitly keeps its ops, and a causal kernel costs less."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from gpuscope.emulator import EmulatorParams
from gpuscope.emulator.memory import saved_bytes
from gpuscope.emulator.perf import GraphCost, kernel_times
from gpuscope.graphs.frontends.torch import trace_train_step
from gpuscope.graphs.ops.aten import causal_fraction, sdpa_flops
from gpuscope.graphs.ops.attention import fused_attention, fused_sdpa

B, H, S, D = 2, 4, 10, 8


def _run(fn, q, k, v, mask=None, **kw):  # type: ignore[no-untyped-def]
    q, k, v = (t.clone().requires_grad_() for t in (q, k, v))
    if mask is not None and mask.is_floating_point():
        mask = mask.clone().requires_grad_()
    out = fn(q, k, v, attn_mask=mask, **kw)
    (out * torch.arange(out.numel()).view_as(out).sin()).sum().backward()
    mg = mask.grad if mask is not None and mask.is_floating_point() else None
    return [out, q.grad, k.grad, v.grad, mg]


CASES = {
    "plain": {}, "causal": {"is_causal": True}, "scale": {"scale": 1.0},
    "float mask with grad": {"mask": torch.randn(1, H, S, S)},
    "bool mask": {"mask": torch.rand(B, 1, S, S) > 0.3},
}


@pytest.mark.parametrize("case", list(CASES))
def test_fused_op_equals_pytorch(case: str) -> None:
    torch.manual_seed(0)
    q, k, v = torch.randn(B, H, S, D), torch.randn(B, H, S + 3, D), torch.randn(B, H, S + 3, 6)
    kw = dict(CASES[case])
    if case in ("causal", "float mask with grad", "bool mask"):
        k, v = k[:, :, :S], v[:, :, :S]
    ref = _run(F.scaled_dot_product_attention, q, k, v, **kw)
    got = _run(fused_sdpa, q, k, v, **kw)
    for a, b in zip(ref, got):
        assert (a is None) == (b is None)
        if a is not None:
            torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5)


def test_grouped_query_attention() -> None:
    torch.manual_seed(0)
    q, k, v = torch.randn(B, H, S, D), torch.randn(B, 2, S, D), torch.randn(B, 2, S, D)
    ref = _run(F.scaled_dot_product_attention, q, k, v, is_causal=True, enable_gqa=True)
    got = _run(fused_sdpa, q, k, v, is_causal=True, enable_gqa=True)
    for a, b in zip(ref[:4], got[:4]):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5)


def test_dropout_gradient_uses_the_forward_mask() -> None:
    # the backward regenerates the forward's dropout mask from the saved RNG state: gradients
    # equal the math path's with that mask
    from gpuscope.graphs.ops import attention as A
    torch.manual_seed(3)
    q, k, v = (torch.randn(B, H, S, D, requires_grad=True) for _ in range(3))
    out, lse, rng = A._OPS[False][0](q, k, v, None, 0.3, D ** -0.5)
    g = torch.randn_like(out)
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), g)
    keep = A._keep(torch.Size((B, H, S, S)), 0.3, rng, q.device)
    assert 0 < float((keep == 0).float().mean()) < 0.6
    qq, kk, vv = (t.detach().requires_grad_() for t in (q, k, v))
    ref = (torch.softmax(qq @ kk.transpose(-2, -1) * D ** -0.5, -1) * keep) @ vv
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)
    for a, b in zip(torch.autograd.grad(ref, (qq, kk, vv), g), (dq, dk, dv)):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5)


def _tiny_gpt(device: str, fused: bool = True) -> tuple[torch.Tensor, nn.Module]:
    from gpuscope.workloads.models.transformer import GPT2

    torch.manual_seed(0)
    m = GPT2(layers=2, dim=64, heads=4, vocab=100, max_len=64).to(device)
    ids = torch.randint(0, 100, (4, 48)) if device == "cpu" else torch.empty(4, 48, dtype=torch.long, device=device)
    return ids, m


def _trace(m: nn.Module, ids: torch.Tensor, fused: bool = True):  # type: ignore[no-untyped-def]
    opt = torch.optim.AdamW(m.parameters())

    def step(b: torch.Tensor) -> torch.Tensor:
        opt.zero_grad()
        loss = F.cross_entropy(m(b).flatten(0, 1), b.flatten())
        loss.backward()
        opt.step()
        return loss

    return trace_train_step(step, ids, m, [opt], fused_sdpa=fused)


def test_trace_has_one_fused_node_per_layer_and_flop_counter_flops() -> None:
    from torch.utils.flop_counter import sdpa_backward_flop_count, sdpa_flop_count

    ids, m = _tiny_gpt("meta")
    g = _trace(m, ids)
    fwd = [n for n in g.nodes if n.op == "gpuscope.sdpa_attention_causal.default"]
    bwd = [n for n in g.nodes if n.op == "gpuscope.sdpa_attention_causal_backward.default"]
    assert len(fwd) == len(bwd) == 2 and all(n.op_class == "matmul" for n in fwd + bwd)
    assert {n.phase for n in fwd} == {"forward"} and {n.phase for n in bwd} == {"backward"}
    # no S x S tensor anywhere in the graph (the math path's scores, probabilities, masks),
    # and no copy of the output: it is laid out as the query, so the reshape is a view
    assert not any(len(n.shape) == 4 and n.shape[-2:] == (48, 48) for n in g.nodes)
    assert not any(n.op == "aten.clone.default" and n.shape == (4, 48, 4, 16) for n in g.nodes)
    shape = (4, 4, 48, 16)
    assert fwd[0].flops == pytest.approx(sdpa_flop_count(shape, shape, shape), rel=0.02)
    assert bwd[0].flops == pytest.approx(sdpa_backward_flop_count(shape, shape, shape, shape),
                                         rel=0.02)
    # the math path keeps the B x H x S x S probabilities and dropout mask: far more memory
    math = _trace(*reversed(_tiny_gpt("meta")), fused=False)  # type: ignore[misc]
    assert saved_bytes(g) < 0.85 * saved_bytes(math)


def test_saved_set_matches_autograd_on_cpu() -> None:
    # on CPU the fused op runs its reference kernel: autograd packs exactly q, k, v, out,
    # logsumexp and the RNG state, which the memory model adds to the forward node's first
    # output (memory.UNSIZED_OUTPUTS; tests/test_dropout_mask.py)
    from autograd_saved import saved_storage_bytes

    torch.manual_seed(0)
    q, k, v = (torch.randn(B, H, S, D, requires_grad=True) for _ in range(3))
    with saved_storage_bytes([]) as seen, fused_attention():
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.1)
    lse_rng = B * H * S * 4 + 2 * 8
    assert sum(seen.values()) == 4 * out.numel() * 4 + lse_rng


def test_explicit_attention_keeps_its_ops() -> None:
    # Gavel's 2018 Transformer computes attention explicitly: no fused node, softmax kept
    from gpuscope.workloads.models.gavel import gavel_step

    gs = gavel_step("transformer_base", 4)
    g = trace_train_step(gs.step, gs.batch, gs.modules, gs.optimizers)
    assert not any("sdpa_attention" in n.op for n in g.nodes)
    assert sum(n.op == "aten._safe_softmax.default" for n in g.nodes) == 18  # 6+6+6 layers


def test_causal_kernel_costs_less() -> None:
    from gpuscope.cluster.devices import get_device

    assert causal_fraction(48, 48) == 1.0 and causal_fraction(1024, 1024) == pytest.approx(9 / 16)
    g = _trace(*reversed(_tiny_gpt("meta")))  # type: ignore[misc]
    cost = GraphCost.from_graph(g, 4)
    t, _ = kernel_times(cost, get_device("h100"), EmulatorParams())
    assert float(t.sum()) > 0
    f = sdpa_flops((8, 16, 2048, 64), (8, 16, 2048, 64), (8, 16, 2048, 64))
    assert f == 2.0 * 8 * 16 * 2048 * 2048 * 128
