"""Canonical op classes and FLOP estimates of PyTorch aten ops.

FLOP conventions (those of ``torch.utils.flop_counter`` for the dense ops, so numbers compare
with PyTorch's own counter): a multiply-add is 2 FLOPs; bias additions of conv/addmm are not
counted; a convolution's backward costs one forward per gradient it computes (input, weight).
Elementwise, activation, norm, pooling, softmax and loss ops cost a small constant per element
(``_PER_ELEMENT``); data movement and constants cost 0. Ops we do not know return ``None``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: Ops that produce no node: aliases and bookkeeping (the tracer forwards their inputs).
ALIAS_OPS: frozenset[str] = frozenset({
    "detach", "lift_fresh", "alias", "_local_scalar_dense", "lift_fresh_copy", "_to_copy_meta",
})

_CLASS_BY_NAME: dict[str, str] = {}
for _cls, _names in {
    "conv": ("convolution", "convolution_backward", "conv2d", "conv1d", "conv3d",
             "_convolution", "conv_transpose2d", "cudnn_convolution", "mkldnn_convolution"),
    "matmul": ("mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "einsum", "dot", "mv",
               "addmv", "_scaled_dot_product_attention_math", "addbmm"),
    "norm": ("native_batch_norm", "native_batch_norm_backward", "_native_batch_norm_legit",
             "_native_batch_norm_legit_functional", "_native_batch_norm_legit_no_training",
             "native_layer_norm", "native_layer_norm_backward", "native_group_norm",
             "native_group_norm_backward", "batch_norm", "layer_norm", "group_norm",
             "cudnn_batch_norm", "cudnn_batch_norm_backward", "local_response_norm",
             "instance_norm", "_batch_norm_with_update", "batch_norm_backward"),
    "pool": ("max_pool2d_with_indices", "max_pool2d_with_indices_backward", "avg_pool2d",
             "avg_pool2d_backward", "_adaptive_avg_pool2d", "_adaptive_avg_pool2d_backward",
             "adaptive_max_pool2d", "adaptive_max_pool2d_backward", "max_pool2d",
             "max_pool3d_with_indices", "avg_pool3d", "adaptive_avg_pool2d",
             "max_pool1d", "avg_pool1d"),
    "activation": ("relu", "threshold_backward", "sigmoid", "sigmoid_backward", "tanh",
                   "tanh_backward", "gelu", "gelu_backward", "leaky_relu",
                   "leaky_relu_backward", "elu", "elu_backward", "hardtanh",
                   "hardtanh_backward", "silu", "silu_backward", "softplus",
                   "softplus_backward", "_softmax", "_softmax_backward_data", "_log_softmax",
                   "_log_softmax_backward_data", "softmax", "log_softmax", "threshold",
                   "hardswish", "hardswish_backward", "hardsigmoid", "mish", "prelu"),
    "loss": ("nll_loss_forward", "nll_loss_backward", "nll_loss", "nll_loss2d_forward",
             "nll_loss2d_backward", "mse_loss", "mse_loss_backward", "binary_cross_entropy",
             "binary_cross_entropy_backward", "binary_cross_entropy_with_logits",
             "cross_entropy_loss", "smooth_l1_loss", "l1_loss", "kl_div", "huber_loss"),
    "reduction": ("sum", "mean", "amax", "amin", "max", "min", "prod", "var", "std",
                  "var_mean", "std_mean", "norm", "linalg_vector_norm", "argmax", "argmin",
                  "logsumexp", "cumsum", "any", "all", "count_nonzero"),
    "random": ("native_dropout", "native_dropout_backward", "bernoulli", "rand", "randn",
               "randint", "normal", "uniform", "dropout", "randperm", "multinomial",
               "rand_like", "randn_like", "randint_like", "exponential", "random"),
    "data_movement": ("view", "_unsafe_view", "reshape", "t", "transpose", "permute", "expand",
                      "clone", "copy", "_to_copy", "contiguous", "cat", "stack", "split",
                      "split_with_sizes", "chunk", "slice", "slice_backward", "select",
                      "select_backward", "index", "index_select", "gather", "scatter",
                      "scatter_add", "index_put", "unsqueeze", "squeeze", "flatten",
                      "as_strided", "new_empty_strided", "unbind", "narrow", "repeat",
                      "constant_pad_nd", "pad", "roll", "flip", "embedding",
                      "embedding_dense_backward", "_reshape_alias", "expand_as", "view_as",
                      "unfold", "im2col", "col2im", "masked_fill", "masked_scatter",
                      "upsample_nearest2d", "upsample_nearest2d_backward",
                      "upsample_bilinear2d", "upsample_bilinear2d_backward", "tile",
                      "new_zeros", "new_ones", "new_empty", "new_full"),
    "constant": ("empty", "zeros", "ones", "full", "zeros_like", "ones_like", "empty_like",
                 "full_like", "scalar_tensor", "arange", "linspace", "tensor", "fill",
                 "zero", "empty_strided", "eye", "_efficientzerotensor"),
    "control": ("_assert_async", "_assert_scalar", "_assert_tensor_metadata"),
}.items():
    for _n in _names:
        _CLASS_BY_NAME[_n] = _cls

#: FLOPs per output element of ops that are not matmul/conv (a constant per element).
_PER_ELEMENT: dict[str, float] = {
    "native_batch_norm": 5.0, "_native_batch_norm_legit": 5.0,
    "_native_batch_norm_legit_functional": 5.0, "_batch_norm_with_update": 5.0,
    "_native_batch_norm_legit_no_training": 2.0, "native_batch_norm_backward": 8.0,
    "batch_norm_backward": 8.0, "native_layer_norm": 5.0, "native_layer_norm_backward": 8.0,
    "native_group_norm": 5.0, "native_group_norm_backward": 8.0,
    "_softmax": 5.0, "_log_softmax": 5.0, "_softmax_backward_data": 4.0,
    "_log_softmax_backward_data": 4.0, "sigmoid": 4.0, "sigmoid_backward": 3.0, "tanh": 4.0,
    "tanh_backward": 3.0, "gelu": 8.0, "gelu_backward": 10.0, "silu": 5.0,
    "silu_backward": 6.0, "elu": 4.0, "softplus": 4.0,
    "addcmul": 3.0, "addcdiv": 3.0, "lerp": 3.0, "pow": 2.0, "sqrt": 1.0, "rsqrt": 2.0,
    "exp": 2.0, "log": 2.0, "div": 1.0,
    "mse_loss": 3.0, "mse_loss_backward": 3.0, "binary_cross_entropy": 6.0,
    "binary_cross_entropy_backward": 5.0, "binary_cross_entropy_with_logits": 8.0,
    "native_dropout": 2.0, "native_dropout_backward": 2.0,
}


#: Namespaces of traced ops: PyTorch's and gpuscope's fused recurrent layers (``recurrent``)
#: and fused attention (``attention``).
TRACED_NAMESPACES: frozenset[str] = frozenset({"aten", "gpuscope"})
#: Gates per recurrent cell (``gpuscope.graphs.ops.recurrent``).
GATES: dict[str, int] = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
#: Element-wise FLOPs of a recurrence per step, sample and hidden unit, (forward,
#: backward-data), at this module's per-element constants (sigmoid/tanh 4, add/mul 1).
#: LSTM forward: 2 adds per gate (8), 3 sigmoids + 2 tanh (20), c and h updates (4);
#: GRU forward: adds (5), r * hn (1), 2 sigmoids + tanh (12), h update (4); RNN: 2 adds +
#: tanh (relu 1). Backward: the derivative of each activation (3) and the chain products.
RNN_POINTWISE: dict[str, tuple[float, float]] = {
    "lstm": (32.0, 23.0), "gru": (23.0, 20.0), "rnn_tanh": (6.0, 3.0), "rnn_relu": (3.0, 2.0),
}
#: Width, in units of the hidden size, of a fused recurrence's packed time-major output
#: ``(T, B, K*H)``: ``h`` and what backward needs (``gpuscope.graphs.ops.recurrent``).
RNN_PACKED: dict[str, int] = {"lstm": 7, "gru": 5, "rnn_tanh": 1, "rnn_relu": 1}
#: Sequential recurrent kernels (``gpuscope.graphs.ops.recurrent``): GEMM-bound, class ``matmul``.
RECURRENT_NAMES: frozenset[str] = frozenset(
    f"{c}_recurrence{s}" for c in GATES for s in ("", "_backward"))
for _n in RECURRENT_NAMES:
    _CLASS_BY_NAME[_n] = "matmul"


#: Fused scaled dot-product attention (``gpuscope.graphs.ops.attention``; forward, backward;
#: plain and causal): GEMM-bound, class ``matmul``.
ATTENTION_NAMES: frozenset[str] = frozenset(
    f"sdpa_attention{c}{s}" for c in ("", "_causal") for s in ("", "_backward"))
#: Query/key rows per tile of the fused kernels (FlashAttention-2's block size on sm80+).
ATTENTION_BLOCK = 128
for _n in ATTENTION_NAMES:
    _CLASS_BY_NAME[_n] = "matmul"


def sdpa_flops(q: tuple[int, ...], k: tuple[int, ...], v: tuple[int, ...],
               backward: bool = False) -> float:
    """FLOPs of fused attention over ``(B, H, S_q, d)`` queries and ``(B, H_kv, S_k, d)``
    keys/values, as ``torch.utils.flop_counter``'s ``sdpa_(backward_)flop_count`` (module
    docstring)."""
    b, h, sq, dq = (int(x) for x in q[-4:])
    sk, dv = int(k[-2]), int(v[-1])
    pair = 2.0 * b * h * sq * sk
    return pair * (2 * dq + 2 * dv + dq) if backward else pair * (dq + dv)


def causal_fraction(s_q: int, s_k: int) -> float:
    """Fraction of the ``S_q x S_k`` score tiles a causal kernel computes (the lower triangle
    of ``ceil(S/ATTENTION_BLOCK)`` tiles a side, diagonal tiles included)."""
    n = max(1, math.ceil(max(s_q, s_k) / ATTENTION_BLOCK))
    return (n + 1) / (2 * n)


def attention_work_fraction(op: str, shape: Sequence[int]) -> float:
    """Fraction of a fused attention node's FLOPs the kernel really does: a causal kernel skips
    the score tiles above the diagonal (``causal_fraction`` of self-attention over the node's
    ``S = shape[-2]``); 1 for every other op."""
    name = base_name(op)
    if name not in ATTENTION_NAMES or "_causal" not in name or len(shape) < 2:
        return 1.0
    return causal_fraction(int(shape[-2]), int(shape[-2]))


def recurrent_cell(name: str) -> str | None:
    """The cell of a recurrent op base name (``lstm_recurrence_backward`` -> ``lstm``)."""
    if name not in RECURRENT_NAMES:
        return None
    return name.removesuffix("_backward").removesuffix("_recurrence")


def recurrent_shape(op: str, shape: Sequence[int]) -> tuple[int, int] | None:
    """(timesteps, parallel elements per timestep ``B * G * H``) of a fused recurrence node
    from its op and first output's shape (forward ``(T, B, K*H)``, backward ``(T, B, G*H)``);
    None for every other op."""
    name = base_name(op)
    cell = recurrent_cell(name)
    if cell is None or len(shape) != 3:
        return None
    T, B, W = (int(s) for s in shape)
    if name.endswith("_backward"):
        return T, B * W
    return T, B * GATES[cell] * (W // RNN_PACKED[cell])


def recurrent_flops(cell: str, steps: int, batch: int, hidden: int,
                    backward: bool = False) -> tuple[float, float]:
    """(GEMM, element-wise) FLOPs of one recurrence over ``steps`` timesteps: the GEMM
    ``h W_hh^T`` (forward) or ``dgates W_hh`` (backward data) is ``2 B H (G H)`` per step."""
    gemm = 2.0 * steps * batch * hidden * GATES[cell] * hidden
    return gemm, RNN_POINTWISE[cell][int(backward)] * steps * batch * hidden


def base_name(op: str) -> str:
    """``aten._foreach_mul_.Scalar`` → ``mul``; ``aten.add_.Tensor`` → ``add``;
    ``gpuscope.lstm_recurrence.default`` → ``lstm_recurrence``."""
    name = (op.split(".")[1] if op.split(".")[0] in TRACED_NAMESPACES and op.count(".") >= 1
            else op)
    if name.startswith("_foreach_"):
        name = name[len("_foreach_"):]
    if name.endswith("_") and not name.endswith("__"):
        name = name[:-1]
    return name


def is_foreach(op: str) -> bool:
    return "._foreach_" in op or op.startswith("_foreach_")


def is_fused_optimizer(op: str) -> bool:
    n = op.split(".")[1] if op.count(".") >= 1 else op
    return n.startswith("_fused_") and any(k in n for k in ("adam", "sgd", "adagrad"))


def op_class(op: str, phase: str) -> str:
    """Canonical class (``OP_CLASSES``) of an aten op; every op of the optimizer phase is
    ``optimizer`` (the parameter update, like TensorFlow's ApplyAdam)."""
    if phase == "optimizer" or is_fused_optimizer(op):
        return "optimizer"
    name = base_name(op)
    if name in _CLASS_BY_NAME:
        return _CLASS_BY_NAME[name]
    if name.endswith("_backward") and name[: -len("_backward")] in _CLASS_BY_NAME:
        return _CLASS_BY_NAME[name[: -len("_backward")]]
    return "elementwise" if op.startswith("aten.") else "other"


def _numel(shape: Sequence[int]) -> int:
    return int(math.prod(shape)) if shape else 1


def conv_flops(x_shape: Sequence[int], w_shape: Sequence[int], out_shape: Sequence[int],
               transposed: bool = False) -> float:
    """2 × MACs of a (transposed) convolution: each output element of a normal conv sums
    ``Cin/groups × prod(kernel)`` products (weight is ``(Cout, Cin/groups, *k)``); a transposed
    conv scatters each input element over ``Cout/groups × prod(kernel)`` outputs."""
    per = int(w_shape[1]) * _numel(w_shape[2:])
    return 2.0 * (_numel(x_shape) if transposed else _numel(out_shape)) * per


def matmul_flops(a_shape: Sequence[int], b_shape: Sequence[int]) -> float:
    """2·m·k·n for ``(…, m, k) @ (k, n)`` (batch dims multiply)."""
    if len(a_shape) == 1:
        a_shape = (1, a_shape[0])
    if len(b_shape) == 1:
        b_shape = (b_shape[0], 1)
    batch = _numel(a_shape[:-2]) if len(a_shape) > 2 else 1
    m, k = a_shape[-2], a_shape[-1]
    n = b_shape[-1]
    return 2.0 * batch * m * k * n


def _recurrent_flops(name: str, out_shape: Sequence[int],
                     t: Sequence[Sequence[int]]) -> float | None:
    """GEMM + element-wise FLOPs of a fused recurrence (``recurrent.recurrent_flops``): the
    forward's output is ``(T, B, K*H)`` and its ``h0`` (second tensor) ``(B, H)``; the
    backward's first output is ``(T, B, G*H)``."""
    cell = recurrent_cell(name)
    if cell is None or len(out_shape) != 3 or len(t) < 2 or not t[1]:
        return None
    hidden = int(t[1][-1])
    return sum(recurrent_flops(cell, int(out_shape[0]), int(out_shape[1]), hidden,
                               name.endswith("_backward")))


def estimate_flops(op: str, in_shapes: list[tuple[int, ...]], args_meta: dict,
                   out_numel: int, in_numel: int, klass: str) -> float | None:
    """FLOPs of one aten op from its input/output shapes (see module docstring).

    ``args_meta`` carries op arguments the formulas need: ``transposed``, ``output_mask``,
    ``kernel`` (pooling), ``tensor_args`` (shapes of the positional tensor args, in order).
    """
    name = base_name(op)
    t = args_meta.get("tensor_args", in_shapes)
    if name in RECURRENT_NAMES:
        return _recurrent_flops(name, args_meta.get("out_shape", ()), t)
    if name in ATTENTION_NAMES:  # forward (q, k, v, ...); backward (grad, q, k, v, ...)
        off = int(name.endswith("_backward"))
        if len(t) < 3 + off:
            return None
        return sdpa_flops(t[off], t[off + 1], t[off + 2], backward=bool(off))
    if name == "convolution" and len(t) >= 2:
        return conv_flops(t[0], t[1], args_meta.get("out_shape", ()), args_meta.get("transposed", False))
    if name == "convolution_backward" and len(t) >= 3:
        # args: grad_out, input, weight; one forward-sized conv per requested gradient
        grad_out, x, w = t[0], t[1], t[2]
        transposed = args_meta.get("transposed", False)
        one = conv_flops(x, w, grad_out, transposed)
        mask = args_meta.get("output_mask", (True, True, False))
        return one * (int(bool(mask[0])) + int(bool(mask[1])))
    if name in ("mm", "bmm", "matmul", "dot", "mv") and len(t) >= 2:
        return matmul_flops(t[0], t[1])
    if name in ("addmm", "baddbmm", "addmv", "addbmm") and len(t) >= 3:
        return matmul_flops(t[1], t[2])
    if name == "linear" and len(t) >= 2:
        w = t[1]
        return matmul_flops(t[0], (w[1], w[0]) if len(w) == 2 else w)
    if klass == "pool":
        k = args_meta.get("kernel")
        if "adaptive" in name:
            return float(in_numel)
        if k:
            # one window of prod(kernel) elements per pooled element (grad_output in backward)
            pooled = _numel(t[0]) if "backward" in name and t else out_numel
            return float(pooled) * _numel(k)
        return float(in_numel)
    if klass in ("data_movement", "constant", "control", "random") and name not in _PER_ELEMENT:
        return 0.0
    if klass == "reduction":
        return float(in_numel)
    if klass == "loss" and name.startswith("nll_loss"):
        return float(max(out_numel, t[0][0] if t and t[0] else 1))
    per = _PER_ELEMENT.get(name)
    if per is not None:
        return per * out_numel
    if klass in ("elementwise", "activation", "optimizer", "norm", "loss"):
        return 1.0 * out_numel
    return None
