"""Scaled dot-product attention as one fused op (its memory and its precision as the kernel has them).

On the ``meta`` device ``F.scaled_dot_product_attention`` runs its math decomposition
(``Q K^T``, softmax, dropout, ``P V``), which keeps the ``B x H x S x S`` probabilities and the
dropout mask for backward. On a GPU with PyTorch >= 2.0 it dispatches to a fused kernel
(FlashAttention-2 for fp16/bf16 without a mask, the memory-efficient kernel of xFormers for
fp32, an additive mask or dropout on older versions), which keeps only ``q, k, v``, the output,
the row ``logsumexp`` (``B x H x S`` FP32) and the dropout RNG's seed/offset, and recomputes
the probabilities in backward (Dao 2023, "FlashAttention-2", Alg. 1-2; PyTorch's
``_scaled_dot_product_efficient_attention`` / ``_flash_attention_forward`` return exactly
these). ``fused_attention()`` makes the traced graph say that: within the block every call of
``F.scaled_dot_product_attention`` (our catalog transformers, and Hugging Face models, whose
default ``attn_implementation="sdpa"`` calls it) becomes

* ``gpuscope.sdpa_attention[_causal](q, k, v, attn_mask, dropout_p, scale)``: ONE node returning
  ``(out, logsumexp, rng_state)``, ``out`` laid out as the query (as the kernels allocate it:
  the usual transpose and reshape to ``(B, S, H d)`` copies nothing); saved for backward: ``q, k, v, out, logsumexp, rng_state``
  and the additive mask when there is one (the memory-efficient kernel reads it again);
* in backward ``gpuscope.sdpa_attention[_causal]_backward``: ONE node returning ``dq, dk, dv``
  and the mask's gradient (empty unless the mask requires grad, as T5's relative position
  bias does).

Code that computes attention explicitly (Gavel's 2018 Transformer, ``models.gavel``; a
``nn.MultiheadAttention`` asked for its weights) never calls the function and keeps its
math-path ops, as it did on the GPU. Float64 inputs keep PyTorch's math path (no fused kernel
takes them). Grouped-query attention (``enable_gqa``) is done inside the op, as the kernels do.

FLOPs (``sdpa_flops``) are those of ``torch.utils.flop_counter`` for SDPA: forward
``2 B H S_q S_k (d_qk + d_v)``, backward ``2 B H S_q S_k (2 d_qk + 2 d_v) + 2 B H S_q S_k d_qk``
(the four gradient GEMMs plus the recomputed ``Q K^T``). The emulator prices a causal node's
FLOPs at the fraction of key blocks the kernel visits (``causal_fraction``). The ops have real
CPU kernels (tested equal to PyTorch's outputs and gradients), so a trace that falls back to the
CPU still works; ``logsumexp`` is kept in FP32, the dropout mask is regenerated in backward from
the saved seed as Philox does.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

import torch
from torch.nn import functional as F

from gpuscope.graphs.ops.aten import ATTENTION_BLOCK, ATTENTION_NAMES, causal_fraction, sdpa_flops
from gpuscope.graphs.ops.patching import swap_functional

_SDPA = F.scaled_dot_product_attention
__all__ = ["ATTENTION_BLOCK", "ATTENTION_NAMES", "causal_fraction", "fused_attention",
           "fused_sdpa", "sdpa_flops"]


# --- reference kernels (CPU and any real device) ----------------------------------------------
def _expand_kv(q: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    r = q.shape[-3] // t.shape[-3]
    return t.repeat_interleave(r, dim=-3) if r > 1 else t


def _scores(q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor | None, causal: bool,
            scale: float) -> torch.Tensor:
    s = (q.float() @ _expand_kv(q, k).float().transpose(-2, -1)) * scale
    if causal:
        tri = torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool, device=s.device).tril()
        s = s.masked_fill(~tri, float("-inf"))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask.float()
    return s


def _keep(shape: torch.Size, p: float, rng: torch.Tensor, device: torch.device) -> torch.Tensor:
    gen = torch.Generator(device=device)
    gen.manual_seed(int(rng[0]))
    return (torch.rand(shape, generator=gen, device=device) >= p).float() / (1.0 - p)


def _like_q(q: torch.Tensor, dv: int) -> torch.Tensor:
    """An uninitialised ``(..., S, dv)`` output laid out in ``q``'s dimension order, as the
    fused kernels allocate it (``empty_like(q)`` of the ``(B, S, H, d)`` query): the usual
    ``out.transpose(1, 2).reshape(B, S, H * dv)`` is then a view, not a copy."""
    strides = q.stride()
    order = sorted(range(q.dim()), key=lambda i: (-int(strides[i]), i))
    order = [i for i in order if i != q.dim() - 1] + [q.dim() - 1]
    sizes = [*q.shape[:-1], dv]
    buf = q.new_empty([sizes[i] for i in order])
    return buf.permute([order.index(i) for i in range(q.dim())])


def _forward_impl(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
                  p: float, causal: bool, scale: float
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    s = _scores(q, k, mask, causal, scale)
    lse = torch.logsumexp(s, dim=-1)
    probs = torch.exp(s - lse.unsqueeze(-1))
    rng = torch.zeros(2, dtype=torch.int64, device=q.device)
    if p > 0:
        rng[0] = int(torch.randint(0, 2**62, (1,)).item())
        probs = probs * _keep(probs.shape, p, rng, q.device)
    out = _like_q(q, v.shape[-1])
    out.copy_(probs @ _expand_kv(q, v).float())
    return out, lse, rng


def _backward_impl(grad: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                   out: torch.Tensor, lse: torch.Tensor, rng: torch.Tensor,
                   mask: torch.Tensor | None, p: float, causal: bool, scale: float,
                   mask_grad: bool) -> tuple[torch.Tensor, ...]:
    """Gradients by recomputing the probabilities from ``logsumexp`` (FlashAttention's
    backward)."""
    probs = torch.exp(_scores(q, k, mask, causal, scale) - lse.unsqueeze(-1))
    ve, g = _expand_kv(q, v).float(), grad.float()
    keep = _keep(probs.shape, p, rng, q.device) if p > 0 else None
    dropped = probs * keep if keep is not None else probs
    dv = dropped.transpose(-2, -1) @ g
    dp = g @ ve.transpose(-2, -1)
    if keep is not None:
        dp = dp * keep
    ds = probs * (dp - (g * out.float()).sum(-1, keepdim=True))
    ds = torch.nan_to_num(ds)
    dq = (ds @ _expand_kv(q, k).float()) * scale
    dk = (ds.transpose(-2, -1) @ q.float()) * scale
    r = q.shape[-3] // k.shape[-3]
    if r > 1:  # grouped-query attention: each KV head gets the sum over its query heads
        dk = dk.unflatten(-3, (k.shape[-3], r)).sum(-3)
        dv = dv.unflatten(-3, (v.shape[-3], r)).sum(-3)
    dmask = q.new_empty(0)
    if mask_grad and mask is not None:
        dims = [i for i in range(ds.dim()) if mask.dim() - ds.dim() + i < 0
                or mask.shape[mask.dim() - ds.dim() + i] == 1 < ds.shape[i]]
        dmask = (ds.sum(dims, keepdim=True) if dims else ds).reshape(mask.shape).to(mask.dtype)
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), dmask


# --- the custom ops -----------------------------------------------------------------------------
def _define(causal: bool) -> tuple[Any, Any]:
    sfx = "_causal" if causal else ""
    fwd_schema = ("(Tensor q, Tensor k, Tensor v, Tensor? attn_mask, float dropout_p, "
                  "float scale) -> (Tensor, Tensor, Tensor)")
    bwd_schema = ("(Tensor grad, Tensor q, Tensor k, Tensor v, Tensor out, Tensor lse, "
                  "Tensor rng, Tensor? attn_mask, float dropout_p, float scale, bool mask_grad)"
                  " -> (Tensor, Tensor, Tensor, Tensor)")

    def fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
            p: float, scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return _forward_impl(q, k, v, mask, p, causal, scale)

    def bwd(grad: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
            out: torch.Tensor, lse: torch.Tensor, rng: torch.Tensor, mask: torch.Tensor | None,
            p: float, scale: float, mask_grad: bool) -> tuple[torch.Tensor, ...]:
        return _backward_impl(grad, q, k, v, out, lse, rng, mask, p, causal, scale, mask_grad)

    f_op = torch.library.custom_op(f"gpuscope::sdpa_attention{sfx}", fwd, mutates_args=(),
                                   schema=fwd_schema)
    b_op = torch.library.custom_op(f"gpuscope::sdpa_attention{sfx}_backward", bwd,
                                   mutates_args=(), schema=bwd_schema)

    @f_op.register_fake
    def _fwd_fake(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *_: Any
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return _like_q(q, v.shape[-1]), q.new_empty(q.shape[:-1], dtype=torch.float32), \
            q.new_empty(2, dtype=torch.int64)

    @b_op.register_fake
    def _bwd_fake(grad: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                  out: torch.Tensor, lse: torch.Tensor, rng: torch.Tensor,
                  mask: torch.Tensor | None, p: float, scale: float,
                  mask_grad: bool) -> tuple[torch.Tensor, ...]:
        dmask = torch.empty_like(mask) if mask_grad and mask is not None else q.new_empty(0)
        return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v), dmask

    def setup(ctx: Any, inputs: tuple, output: tuple) -> None:
        q, k, v, mask, p, scale = inputs
        ctx.p, ctx.scale = p, scale
        ctx.has_mask = mask is not None
        ctx.save_for_backward(q, k, v, output[0], output[1], output[2],
                              *([mask] if mask is not None else []))

    def backward(ctx: Any, grad: torch.Tensor, *_: Any) -> tuple[Any, ...]:
        q, k, v, out, lse, rng, *m = ctx.saved_tensors
        mask = m[0] if m else None
        mask_grad = bool(mask is not None and ctx.needs_input_grad[3]
                         and mask.is_floating_point())
        dq, dk, dv, dmask = b_op(grad, q, k, v, out, lse, rng, mask, ctx.p, ctx.scale,
                                 mask_grad)
        return dq, dk, dv, (dmask if mask_grad else None), None, None

    f_op.register_autograd(backward, setup_context=setup)
    return f_op, b_op


_OPS: dict[bool, tuple[Any, Any]] = {c: _define(c) for c in (False, True)}


def fused_sdpa(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
               attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0,
               is_causal: bool = False, scale: float | None = None,
               enable_gqa: bool = False) -> torch.Tensor:
    """``F.scaled_dot_product_attention`` through the fused op (module docstring); its math
    path where no fused kernel would run (float64, or fewer than 3 dimensions)."""
    if (query.dim() < 3 or query.dtype == torch.float64 or query.shape[-1] != key.shape[-1]
            or key.dim() != query.dim()):
        return _SDPA(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p,
                     is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
    dev = query.device.type
    if dev in ("cpu", "cuda") and torch.is_autocast_enabled(dev):
        # autocast runs SDPA in its lower precision (aten's autocast list)
        half = torch.get_autocast_dtype(dev)
        query, key, value = query.to(half), key.to(half), value.to(half)
        if attn_mask is not None and attn_mask.is_floating_point():
            attn_mask = attn_mask.to(half)
    squeeze = query.dim() == 3
    if squeeze:
        query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
    if not enable_gqa and key.shape[-3] != query.shape[-3]:
        return _SDPA(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p,
                     is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
    s = float(scale) if scale is not None else 1.0 / math.sqrt(query.shape[-1])
    out = _OPS[bool(is_causal)][0](query, key, value, attn_mask, float(dropout_p), s)[0]
    return out.squeeze(0) if squeeze else out


@contextlib.contextmanager
def fused_attention(enabled: bool = True) -> Iterator[None]:
    """Within the block, ``F.scaled_dot_product_attention`` is traced as the fused op (module
    docstring); ``enabled=False`` keeps PyTorch's own dispatch (the math path on ``meta``).

    The module attribute is replaced, so every caller that looks it up at call time is seen:
    ``F.scaled_dot_product_attention(...)``, ``torch.nn.functional.scaled_dot_product_attention``
    (Hugging Face's ``sdpa`` attention) and ``F.multi_head_attention_forward`` (``nn.MultiheadAttention``
    without weights, ``nn.TransformerEncoderLayer``)."""
    with swap_functional("scaled_dot_product_attention", _SDPA, fused_sdpa, enabled):
        yield
