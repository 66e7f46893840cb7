"""Recurrent layers as one fused op per layer and direction, as cuDNN runs them.

On the ``meta`` device ``nn.LSTM``/``nn.GRU``/``nn.RNN`` decompose into ~10 aten ops per
timestep (thousands per step for Gavel's LM), where a GPU runs cuDNN: one GEMM for the input
projection of all timesteps, then a sequential recurrence (per timestep one small GEMM
``h_{t-1} W_hh^T`` and one fused element-wise kernel), and in backward the same recurrence run
backwards (``cudnnRNNBackwardData``) plus one GEMM for the weight gradients of all timesteps
(``cudnnRNNBackwardWeights``). ``fused_recurrent_layers(modules)`` makes the traced graph say
that: during the trace the forward of every ``nn.LSTM``/``GRU``/``RNN`` is replaced by

* ``F.linear(x, W_ih, b_ih)`` over all timesteps (an ordinary ``aten.addmm``), then
* ``gpuscope.<cell>_recurrence(xw, h0, [c0,] W_hh, b_hh, reverse)``: ONE node, the sequential
  recurrence. It returns one packed, time-major tensor ``(T, B, K*H)``: the hidden states
  ``h`` in ``[..., :H]`` (the layer's output, a view) and what backward needs (cuDNN's
  "reserve space"): LSTM ``[h | i f g o | c | tanh c]`` (K = 7), GRU ``[h | r z n | hn]``
  with ``hn = W_hn h + b_hn`` (K = 5), RNN ``[h]`` (K = 1). Saved for backward: the packed
  tensor, 7 H-vectors per step and sample for an LSTM, as the native decomposition
  (``i, f, g, o, c_{t-1}, tanh c_t, h_{t-1}``; ``tests/test_recurrent.py`` checks it against
  ``saved_tensors_hooks``); a GRU keeps 5 (cuDNN/``_thnn_fused_gru_cell`` keep r, z, n, hn
  and h) where the decomposition keeps 7 temporaries;
* in backward ``gpuscope.<cell>_recurrence_backward`` (one node: the sequential data
  gradient, ``(T, B, G*H)`` gate gradients first) and ``grad_W_hh = dgates^T h_prev`` as one
  ``aten.mm`` over ``T*B`` rows.

FLOPs (``recurrent_flops``; the dense part equals what ``torch.utils.flop_counter`` counts
for the decomposition): a recurrence over T steps, batch B, hidden H, G gates (LSTM 4,
GRU 3, RNN 1) costs ``2 T B H (G H)`` in its GEMMs, forward and backward-data alike, plus
``graphs.ops.aten.RNN_POINTWISE[cell]`` FLOPs per step, sample and hidden unit (sigmoid/tanh 4,
add/mul 1, the ``graphs.ops.aten`` constants). With the input projection (``2 T B I G H``, and twice that in
backward) a layer totals ``2 T B (I + H) G H`` forward and about twice that backward.

Cells (``nn.LSTMCell``/``GRUCell``/``RNNCell``, one call per timestep, e.g. A3C's) become the
input GEMM and a one-step recurrence node, as CUDA runs them (``_thnn_fused_lstm_cell``: two
GEMMs and one fused element-wise kernel). Multi-layer dropout, bidirectional layers, ``batch_first``, unbatched inputs and a given
``hx`` are supported; packed sequences and LSTMs with ``proj_size`` keep PyTorch's own forward.
The ops have real CPU kernels (tested equal to ``nn.LSTM``/``GRU``/``RNN``), so a trace that
falls back to the CPU still works.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import MethodType
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from gpuscope.graphs.ops.aten import (
    GATES,
    RECURRENT_NAMES,
    RNN_PACKED,
    recurrent_cell,
    recurrent_flops,
)

PACKED: dict[str, int] = RNN_PACKED
_MODE_CELL = {"LSTM": "lstm", "GRU": "gru", "RNN_TANH": "rnn_tanh", "RNN_RELU": "rnn_relu"}
#: op base names of the sequential kernels (forward and backward-data).
RECURRENT_OPS: frozenset[str] = RECURRENT_NAMES
__all__ = ["GATES", "PACKED", "RECURRENT_OPS", "fused_cell_forward", "fused_forward",
           "fused_recurrent_layers",
           "recurrent_cell", "recurrent_flops", "supported"]


# --- reference kernels (CPU and any real device) ----------------------------------------------
def _act(cell: str, x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x) if cell == "rnn_relu" else torch.tanh(x)


def _forward_impl(cell: str, xw: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor | None,
                  w_hh: torch.Tensor, b_hh: torch.Tensor | None, reverse: bool) -> torch.Tensor:
    T, B, H = xw.shape[0], xw.shape[1], h0.shape[-1]
    packed = xw.new_empty(T, B, PACKED[cell] * H)
    h, c = h0, c0
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        gh = F.linear(h, w_hh, b_hh)
        if cell == "lstm":
            assert c is not None  # an LSTM always carries its cell state
            g = xw[t] + gh
            i, f = torch.sigmoid(g[:, :H]), torch.sigmoid(g[:, H:2 * H])
            gg, o = torch.tanh(g[:, 2 * H:3 * H]), torch.sigmoid(g[:, 3 * H:])
            c = f * c + i * gg
            tc = torch.tanh(c)
            h = o * tc
            packed[t] = torch.cat([h, i, f, gg, o, c, tc], 1)
        elif cell == "gru":
            r = torch.sigmoid(xw[t, :, :H] + gh[:, :H])
            z = torch.sigmoid(xw[t, :, H:2 * H] + gh[:, H:2 * H])
            hn = gh[:, 2 * H:]
            n = torch.tanh(xw[t, :, 2 * H:] + r * hn)
            h = (1 - z) * n + z * h
            packed[t] = torch.cat([h, r, z, n, hn], 1)
        else:
            h = _act(cell, xw[t] + gh)
            packed[t] = h
    return packed


def _backward_impl(cell: str, grad: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor | None,
                   w_hh: torch.Tensor, packed: torch.Tensor,
                   reverse: bool) -> tuple[torch.Tensor, ...]:
    """Gate gradients by backpropagation through time from the packed forward output."""
    T, H = packed.shape[0], h0.shape[-1]
    G = GATES[cell]
    gx = packed.new_zeros(T, packed.shape[1], G * H)
    ghn = packed.new_zeros(T, packed.shape[1], H) if cell == "gru" else None
    dh = torch.zeros_like(h0)
    dc = torch.zeros_like(h0)
    order = range(T) if reverse else range(T - 1, -1, -1)
    for t in order:
        prev = t + 1 if reverse else t - 1
        inside = 0 <= prev < T
        h_prev = packed[prev, :, :H] if inside else h0
        p = packed[t]
        dh = dh + grad[t, :, :H]
        if cell == "lstm":
            i, f, gg, o = p[:, H:2 * H], p[:, 2 * H:3 * H], p[:, 3 * H:4 * H], p[:, 4 * H:5 * H]
            tc = p[:, 6 * H:7 * H]
            c_prev = packed[prev, :, 5 * H:6 * H] if inside else c0
            assert c_prev is not None  # an LSTM always carries its cell state
            dc = dc + grad[t, :, 5 * H:6 * H] + dh * o * (1 - tc * tc)
            d = torch.cat([dc * gg * i * (1 - i), dc * c_prev * f * (1 - f),
                           dc * i * (1 - gg * gg), dh * tc * o * (1 - o)], 1)
            dc = dc * f
            gx[t] = d
            dh = d @ w_hh
        elif cell == "gru":
            r, z, n, hn = p[:, H:2 * H], p[:, 2 * H:3 * H], p[:, 3 * H:4 * H], p[:, 4 * H:5 * H]
            dn = dh * (1 - z) * (1 - n * n)
            dr = dn * hn * r * (1 - r)
            dz = dh * (h_prev - n) * z * (1 - z)
            gx[t] = torch.cat([dr, dz, dn], 1)
            assert ghn is not None
            ghn[t] = dn * r
            dh = dh * z + torch.cat([dr, dz, dn * r], 1) @ w_hh
        else:
            h = p[:, :H]
            d = dh * (1 - h * h) if cell == "rnn_tanh" else dh * (h > 0).to(h.dtype)
            gx[t] = d
            dh = d @ w_hh
    if cell == "lstm":
        return gx, dh, dc
    if cell == "gru":
        assert ghn is not None
        return gx, ghn, dh
    return gx, dh


# --- the custom ops -----------------------------------------------------------------------------
def _define(cell: str) -> tuple[Any, Any]:
    lstm = cell == "lstm"
    c_arg = "Tensor c0, " if lstm else ""
    fwd_schema = f"(Tensor xw, Tensor h0, {c_arg}Tensor w_hh, Tensor? b_hh, bool reverse) -> Tensor"
    n_out = {"lstm": 3, "gru": 3}.get(cell, 2)
    bwd_schema = (f"(Tensor grad, Tensor h0, {c_arg}Tensor w_hh, Tensor packed, bool reverse)"
                  f" -> ({', '.join(['Tensor'] * n_out)})")

    def fwd(xw: torch.Tensor, h0: torch.Tensor, *rest: Any) -> torch.Tensor:
        c0, (w_hh, b_hh, reverse) = (rest[0], rest[1:]) if lstm else (None, rest)
        return _forward_impl(cell, xw, h0, c0, w_hh, b_hh, reverse)

    def bwd(grad: torch.Tensor, h0: torch.Tensor, *rest: Any) -> tuple[torch.Tensor, ...]:
        c0, (w_hh, packed, reverse) = (rest[0], rest[1:]) if lstm else (None, rest)
        return _backward_impl(cell, grad, h0, c0, w_hh, packed, reverse)

    f_op = torch.library.custom_op(f"gpuscope::{cell}_recurrence", fwd, mutates_args=(),
                                   schema=fwd_schema)
    b_op = torch.library.custom_op(f"gpuscope::{cell}_recurrence_backward", bwd,
                                   mutates_args=(), schema=bwd_schema)

    @f_op.register_fake
    def _fwd_fake(xw: torch.Tensor, h0: torch.Tensor, *rest: Any) -> torch.Tensor:
        return xw.new_empty(xw.shape[0], xw.shape[1], PACKED[cell] * h0.shape[-1])

    @b_op.register_fake
    def _bwd_fake(grad: torch.Tensor, h0: torch.Tensor, *rest: Any) -> tuple[torch.Tensor, ...]:
        T, B, H = grad.shape[0], grad.shape[1], h0.shape[-1]
        gx = grad.new_empty(T, B, GATES[cell] * H)
        if lstm:
            return gx, torch.empty_like(h0), torch.empty_like(h0)
        if cell == "gru":
            return gx, grad.new_empty(T, B, H), torch.empty_like(h0)
        return gx, torch.empty_like(h0)

    def setup(ctx: Any, inputs: tuple, output: torch.Tensor) -> None:
        ctx.reverse = inputs[-1]
        ctx.has_bias = inputs[-2] is not None
        ctx.save_for_backward(*inputs[1:-2], output)

    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        saved = ctx.saved_tensors
        h0, packed = saved[0], saved[-1]
        outs = b_op(grad, *saved[:-1], packed, ctx.reverse)
        gx, H = outs[0], h0.shape[-1]
        gh = torch.cat([gx[..., :2 * H], outs[1]], 2) if cell == "gru" else gx
        T, B = gx.shape[0], gx.shape[1]
        h = packed[..., :H]
        h_prev = (torch.cat([h[1:], h0.unsqueeze(0)]) if ctx.reverse
                  else torch.cat([h0.unsqueeze(0), h[:-1]]))
        g_w = gh.reshape(T * B, -1).t().mm(h_prev.reshape(T * B, H))
        g_b = gh.sum((0, 1)) if ctx.has_bias else None
        d_h0 = outs[-1] if cell != "lstm" else outs[1]
        if lstm:
            return gx, d_h0, outs[2], g_w, g_b, None
        return gx, d_h0, g_w, g_b, None

    f_op.register_autograd(backward, setup_context=setup)
    return f_op, b_op


_OPS: dict[str, tuple[Any, Any]] = {cell: _define(cell) for cell in GATES}


# --- nn.RNNBase forward through the fused ops ---------------------------------------------------
def supported(mod: nn.Module) -> bool:
    """A module whose forward ``fused_recurrent_layers`` replaces."""
    return (isinstance(mod, nn.RNNBase) and getattr(mod, "mode", "") in _MODE_CELL
            and not getattr(mod, "proj_size", 0)
            and type(mod).forward in (nn.LSTM.forward, nn.GRU.forward, nn.RNN.forward))


def fused_forward(mod: nn.RNNBase, input: Any, hx: Any = None) -> Any:
    """``nn.LSTM``/``GRU``/``RNN`` forward through the fused recurrence ops (module docstring)."""
    if isinstance(input, nn.utils.rnn.PackedSequence):
        return type(mod).forward(mod, input, hx)
    cell = _MODE_CELL[mod.mode]
    f_op = _OPS[cell][0]
    unbatched = input.dim() == 2
    x = input.unsqueeze(1) if unbatched else (input.transpose(0, 1) if mod.batch_first else input)
    D, L, H = 2 if mod.bidirectional else 1, mod.num_layers, mod.hidden_size
    if hx is None:
        h0 = x.new_zeros(L * D, x.shape[1], H)
        c0 = x.new_zeros(L * D, x.shape[1], H) if cell == "lstm" else None
    else:
        h0, c0 = hx if cell == "lstm" else (hx, None)
        if unbatched:
            h0, c0 = h0.unsqueeze(1), (c0.unsqueeze(1) if c0 is not None else None)
    dev = x.device.type
    half = (torch.get_autocast_dtype(dev)
            if dev in ("cpu", "cuda") and torch.is_autocast_enabled(dev) else None)
    h_n: list[torch.Tensor] = []
    c_n: list[torch.Tensor] = []
    layer_in = x
    for layer in range(L):
        outs = []
        for d in range(D):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            w_ih, w_hh = getattr(mod, f"weight_ih{sfx}"), getattr(mod, f"weight_hh{sfx}")
            b_ih = getattr(mod, f"bias_ih{sfx}") if mod.bias else None
            b_hh = getattr(mod, f"bias_hh{sfx}") if mod.bias else None
            xw = F.linear(layer_in, w_ih, b_ih)
            k = layer * D + d
            h_k, c_k = h0[k], (c0[k] if c0 is not None else None)
            if half is not None:  # CUDA autocast runs recurrent layers in half precision
                h_k, w_hh = h_k.to(half), w_hh.to(half)
                c_k = c_k.to(half) if c_k is not None else None
                b_hh = b_hh.to(half) if b_hh is not None else None
            args = (xw, h_k, c_k, w_hh, b_hh, bool(d)) if cell == "lstm" \
                else (xw, h_k, w_hh, b_hh, bool(d))
            packed = f_op(*args)
            last = 0 if d else -1
            outs.append(packed[..., :H])
            h_n.append(packed[last, :, :H])
            if cell == "lstm":
                c_n.append(packed[last, :, 5 * H:6 * H])
        layer_in = outs[0] if D == 1 else torch.cat(outs, 2)
        if mod.dropout and mod.training and layer < L - 1:
            layer_in = F.dropout(layer_in, mod.dropout, True)
    out = layer_in.squeeze(1) if unbatched else (layer_in.transpose(0, 1) if mod.batch_first
                                                  else layer_in)
    hs = torch.stack(h_n)
    hs = hs.squeeze(1) if unbatched else hs
    if cell != "lstm":
        return out, hs
    cs = torch.stack(c_n)
    return out, (hs, cs.squeeze(1) if unbatched else cs)


_CELL_CLS: dict[type, str] = {nn.LSTMCell: "lstm", nn.GRUCell: "gru"}


def _cell_of(mod: nn.Module) -> str | None:
    """The cell of an unmodified ``nn.LSTMCell``/``GRUCell``/``RNNCell``, else None."""
    if type(mod) in _CELL_CLS:
        return _CELL_CLS[type(mod)]
    if type(mod) is nn.RNNCell:
        return "rnn_relu" if mod.nonlinearity == "relu" else "rnn_tanh"
    return None


def fused_cell_forward(mod: nn.RNNCellBase, input: torch.Tensor, hx: Any = None) -> Any:
    """``nn.LSTMCell``/``GRUCell``/``RNNCell`` as a one-step recurrence: the input GEMM and
    one fused node (a GEMM and an element-wise kernel), as CUDA's ``_thnn_fused_lstm_cell``."""
    cell = _cell_of(mod)
    assert cell is not None
    unbatched = input.dim() == 1
    x = input.unsqueeze(0) if unbatched else input
    H = mod.hidden_size
    if hx is None:
        h = x.new_zeros(x.shape[0], H)
        c = x.new_zeros(x.shape[0], H) if cell == "lstm" else None
    else:
        h, c = hx if cell == "lstm" else (hx, None)
        if unbatched:
            h, c = h.unsqueeze(0), (c.unsqueeze(0) if c is not None else None)
    xw = F.linear(x, mod.weight_ih, mod.bias_ih).unsqueeze(0)
    w_hh, b_hh = mod.weight_hh, mod.bias_hh
    f_op = _OPS[cell][0]
    packed = f_op(xw, h, c, w_hh, b_hh, False) if cell == "lstm" else f_op(xw, h, w_hh, b_hh, False)
    h1 = packed[0, :, :H]
    h1 = h1.squeeze(0) if unbatched else h1
    if cell != "lstm":
        return h1
    c1 = packed[0, :, 5 * H:6 * H]
    return h1, (c1.squeeze(0) if unbatched else c1)


@contextlib.contextmanager
def fused_recurrent_layers(modules: nn.Module) -> Iterator[int]:
    """Within the block, every supported recurrent layer of ``modules`` runs ``fused_forward``
    and every recurrent cell ``fused_cell_forward``; yields how many modules were patched
    (their forward is restored on exit)."""
    patched = []
    for m in modules.modules():
        if "forward" in vars(m):
            continue
        if supported(m):
            m.forward = MethodType(fused_forward, m)
        elif _cell_of(m) is not None:
            m.forward = MethodType(fused_cell_forward, m)
        else:
            continue
        patched.append(m)
    try:
        yield len(patched)
    finally:
        for m in patched:
            del m.forward
