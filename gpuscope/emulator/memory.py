"""Device memory footprint of a training job (seed 001 §4.2).

footprint = CUDA context + weights + gradients + optimizer state + saved activations
+ workspace:

* weights and gradients: ``param_bytes`` each (FP32 master weights; under AMP autocast keeps a
  half-precision copy of the weights it casts, + ``param_bytes / 2``);
* optimizer state: ``OPTIMIZER_COPIES`` parameter-sized buffers per optimizer (Adam/AdamW 2,
  SGD with momentum 1 -- the catalog's ``sgd`` uses momentum 0.9 --, RMSprop 1 (+1 centred),
  Adagrad 1, plain SGD 0);
* activations: what autograd keeps for the backward pass. In the traced step a tensor is kept
  for backward exactly when a backward-phase op reads it, so the saved set is read off the
  OpGraph's edges: every forward op whose output feeds a backward op, resolved through views
  to the op that allocated the storage, each storage counted once, parameters and the input
  batch excluded (``saved_bytes``); outputs the trace does not size (``native_dropout``'s
  bool mask, the fused attention's logsumexp and RNG state) are added when their backward
  op reads them (``UNSIZED_OUTPUTS``). The test suite checks it against
  ``torch.autograd.graph.saved_tensors_hooks`` on a transformer layer. Graphs without
  backward edges (e.g. some TensorFlow exports) fall back to every forward output that
  allocates (``activation_bytes``);
  this saved-set rule is the previous behaviour (``EmulatorParams.memory_liveness = 0``); the
  default is the step's liveness peak less its gradients (``emulator.liveness``), which also
  counts the transients alive together (a language model's logits and their gradient);
* the caching allocator's fragmentation adds ``alloc_overhead`` to activations and gradients;
  cuDNN/cuBLAS workspace a constant.

A job whose footprint exceeds the device's memory fails with status ``oom``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gpuscope.cluster.devices import DeviceSpec
from gpuscope.emulator.params import EmulatorParams
from gpuscope.graphs.opgraph import OpGraph, OpNode

MB = float(2**20)
OPTIMIZER_COPIES: dict[str, int] = {
    "sgd": 1, "momentum": 1, "adam": 2, "adamw": 2, "rmsprop": 1, "adagrad": 1, "none": 0,
}
_NO_ALLOC_CLASSES = frozenset({"constant", "data_movement", "control"})
# Ops whose output aliases their input's storage (no allocation).
VIEW_OPS = frozenset({
    "view", "_unsafe_view", "reshape", "t", "transpose", "permute", "expand", "squeeze",
    "unsqueeze", "slice", "select", "alias", "as_strided", "detach", "split", "chunk", "narrow",
    "unbind", "flatten", "view_as", "expand_as", "split_with_sizes", "Reshape", "Identity",
    "Squeeze", "ExpandDims", "Transpose", "_reshape_alias", "unfold", "diagonal",
})

#: Forward ops with outputs the trace does not size (an ``OpNode`` records its first output
#: only) that one backward op reads: ``op -> (that backward op, whether it also reads the
#: first output, bytes of the unsized outputs from the node)``:
#: * ``native_dropout``'s mask, bool on CUDA (``aten/src/ATen/native/cuda/Dropout.cu``,
#:   ``native_dropout_cuda`` -> ``dropout_cuda<bool>``);
#: * the fused attention's row logsumexp (``B x H x S_q`` FP32) and its RNG seed/offset (two
#:   int64), saved with the output (``gpuscope.graphs.ops.attention``; PyTorch's
#:   ``_scaled_dot_product_flash_attention`` / ``_efficient_attention`` return them);
#: * a layer norm's saved statistics (FP32 mean and inverse std per row, rows taken as the
#:   output's numel over its last dimension): its backward reads the input and these, not the
#:   output (``native_layer_norm_backward``'s schema). Batch norm's backward does not read its
#:   output either, but it keeps its output-sized entry here: see CHANGELOG.md
#:   ("Liveness memory on the H100 check", batch norm) for why that is not changed.
UNSIZED_OUTPUTS: dict[str, tuple[str, bool, Callable[[OpNode], float]]] = {
    "native_dropout": ("native_dropout_backward", False, lambda n: float(n.numel)),
    "native_layer_norm": ("native_layer_norm_backward", False,
                          lambda n: 8.0 * n.numel / max(int(n.shape[-1]) if n.shape else 1, 1)),
    **{k: (f"{k}_backward", True,
           lambda n: 4.0 * n.numel / max(int(n.shape[-1]) if n.shape else 1, 1) + 16.0)
       for k in ("sdpa_attention", "sdpa_attention_causal")},
}


def op_key(op: str) -> str:
    """``aten.native_dropout.default`` / ``gpuscope.sdpa_attention.default`` -> the op's name;
    framework op names unchanged."""
    parts = op.split(".")
    return parts[1] if len(parts) >= 2 and parts[0] in ("aten", "gpuscope") else parts[0]


def unsized_edge(src_op: str, dst_op: str) -> tuple[bool, bool]:
    """For the edge ``src -> dst``: (it carries ``src``'s unsized outputs, it also carries
    ``src``'s first output), per ``UNSIZED_OUTPUTS``."""
    m = UNSIZED_OUTPUTS.get(op_key(src_op))
    if m is None or op_key(dst_op) != m[0]:
        return False, True
    return True, m[1]


def unsized_bytes(node: OpNode) -> float:
    """Bytes of ``node``'s unsized outputs (``UNSIZED_OUTPUTS``; 0 for other ops)."""
    m = UNSIZED_OUTPUTS.get(op_key(node.op))
    return m[2](node) if m is not None else 0.0


def op_base(op: str) -> str:
    """``aten.relu_.default`` -> ``relu_``; framework op names unchanged."""
    parts = op.split(".")
    return parts[1] if len(parts) >= 2 and parts[0] == "aten" else parts[0]


def is_inplace(op: str) -> bool:
    """True for aten in-place ops (``aten.relu_.default``, and private ones such as
    ``aten._foreach_mul_.Scalar`` or ``aten._fused_adam_.default``): they allocate no output."""
    base = op_base(op)
    return base.endswith("_") and base != "_"


def activation_bytes(graph: OpGraph) -> float:
    """Upper bound: every forward output that allocates (the fallback of ``saved_bytes``)."""
    sizes = [
        n.out_bytes for n in graph.nodes
        if n.phase == "forward" and n.op_class not in _NO_ALLOC_CLASSES and not is_inplace(n.op)
    ]
    return float(np.sum(sizes)) if sizes else 0.0


def saved_bytes(graph: OpGraph) -> float:
    """Bytes autograd keeps for the backward pass (see the module docstring): forward outputs
    read by backward ops, resolved through views and in-place ops to the allocating op, and
    the unsized outputs (``UNSIZED_OUTPUTS``) their backward op reads."""
    nodes = graph.nodes
    preds: dict[int, list[int]] = {}
    for s, d in graph.edges:
        preds.setdefault(d, []).append(s)
    fwd_to_bwd: set[int] = set()
    masks: set[int] = set()
    for s, d in graph.edges:
        if nodes[s].phase == "forward" and nodes[d].phase == "backward":
            extra, first = unsized_edge(nodes[s].op, nodes[d].op)
            if extra:
                masks.add(s)
            if first:
                fwd_to_bwd.add(s)
    if not fwd_to_bwd and not masks:
        return activation_bytes(graph)

    def storage(i: int) -> int:
        seen = 0
        while (op_base(nodes[i].op) in VIEW_OPS or is_inplace(nodes[i].op)) and preds.get(i) \
                and seen < 64:
            # an in-place op writes its first input; a view aliases it
            i, seen = preds[i][0], seen + 1
        return i

    roots = {storage(i) for i in fwd_to_bwd}
    return float(sum(nodes[i].out_bytes for i in roots if nodes[i].op_class != "constant")
                 + sum(unsized_bytes(nodes[i]) for i in masks))


def param_bytes(graph: OpGraph) -> float:
    """Trainable parameter bytes: the graph's ``param_bytes`` meta, else its parameter nodes."""
    pb = graph.meta.get("param_bytes")
    if pb is not None:
        return float(pb)
    return float(sum(n.out_bytes for n in graph.nodes if n.op == "Parameter"))


@dataclass(frozen=True)
class MemoryFootprint:
    """Memory of one job on one device, in MB (MiB, as NVML reports)."""

    context_mb: float
    weights_mb: float
    grads_mb: float
    optimizer_mb: float
    activations_mb: float
    workspace_mb: float
    capacity_mb: float

    @property
    def total_mb(self) -> float:
        return (self.context_mb + self.weights_mb + self.grads_mb + self.optimizer_mb
                + self.activations_mb + self.workspace_mb)

    @property
    def fits(self) -> bool:
        return self.total_mb <= self.capacity_mb


def footprint(graph: OpGraph, optimizer: str, device: DeviceSpec,
              params: EmulatorParams, precision: str = "fp32") -> MemoryFootprint:
    """Memory footprint of a training step of ``graph`` with ``optimizer`` on ``device``
    (activations by ``params.memory_liveness``: the liveness peak, else the saved bytes)."""
    from gpuscope.emulator.liveness import live_activation_bytes

    pb = param_bytes(graph)
    act = live_activation_bytes(graph, pb) if params.memory_liveness else saved_bytes(graph)
    return footprint_from_sizes(pb, act, optimizer, device, params, precision)


def footprint_from_sizes(
    param_bytes: float, act_bytes: float, optimizer: str, device: DeviceSpec,
    params: EmulatorParams, precision: str = "fp32",
) -> MemoryFootprint:
    """The footprint from parameter and saved-activation bytes (see the module docstring).
    ``act_bytes`` is the FP32 trace's; under AMP the saved tensors are mostly half precision
    (``params.amp_act_factor`` of the FP32 bytes: softmax/norm/loss outputs stay FP32)."""
    over = 1.0 + params.alloc_overhead
    amp = precision.startswith("amp")
    act = act_bytes * (params.amp_act_factor if amp else 1.0)
    weights = param_bytes * (1.5 if amp else 1.0)
    return MemoryFootprint(
        context_mb=params.context_mb,
        weights_mb=weights / MB,
        grads_mb=param_bytes * over / MB,
        optimizer_mb=OPTIMIZER_COPIES.get(optimizer, 1) * param_bytes / MB,
        activations_mb=act * over / MB,
        workspace_mb=params.workspace_mb,
        capacity_mb=device.mem_mb,
    )
