"""Device memory footprint of a training job, with an uncertainty band and a fit status.

footprint = CUDA context + weights + gradients + optimizer state + activations + workspace:

* weights and gradients: ``param_bytes`` each (FP32 master weights; under AMP autocast keeps a
  half-precision copy of the weights it casts, + ``param_bytes / 2``, on graphs not traced
  under autocast; a traced AMP step already holds its casts);
* optimizer state: ``OPTIMIZER_COPIES`` parameter-sized buffers per optimizer (Adam/AdamW 2,
  SGD with momentum 1 -- the catalog's ``sgd`` uses momentum 0.9 --, RMSprop 1 (+1 centred),
  Adagrad 1, plain SGD 0);
* activations: by default the step's liveness peak less its gradients
  (``emulator.liveness``: every storage alive at once, transients included, such as a language
  model's logits and their gradient, and the foreach optimizer's parameter-sized temporaries).
  ``EmulatorParams.memory_liveness = 0`` restores the saved-for-backward rule
  (``saved_bytes``): a forward op's output is kept exactly when a backward-phase op reads it,
  resolved through views to the op that allocated the storage, each storage once, parameters
  and the input batch excluded; outputs the trace does not size (``UNSIZED_OUTPUTS``) are
  added when their backward op reads them. Graphs without backward edges (e.g. some
  TensorFlow exports) fall back to every forward output that allocates
  (``activation_bytes``);
* the caching allocator's fragmentation adds ``alloc_overhead`` to activations and gradients;
  cuDNN/cuBLAS workspace a constant.

That sum (``MemoryFootprint.total_mb``) is what ``nvidia-smi`` shows when memory is plentiful:
context + the allocator's peak reserve. It is not the least memory the step needs: close to
the card's limit the allocator releases its cached blocks and retries before it fails, and
cuDNN's benchmark skips algorithms whose workspace does not fit. So the footprint carries a
band (``lo_mb``, ``hi_mb``):

* ``lo_mb``: the least the step can run in: the smallest CUDA context (lazy module loading),
  cuBLAS's workspace only, no fragmentation, and the traced tensors less the model's
  relative error ``mem_err`` (log units, from the measured allocator peaks);
* ``hi_mb``: the most it may need: the largest context (eager module loading), a large cuDNN
  workspace, the central fragmentation, and the tensors plus ``mem_err``.

``fit_status``: ``oom`` when even ``lo_mb`` exceeds the device's memory (certainly out of
memory: the emulated run fails), ``at_risk`` when the memory lies inside the band (the run
proceeds; it may fail), ``fits`` when ``hi_mb`` fits.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields, replace

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
#:   output (``native_layer_norm_backward``'s schema);
#: * a batch norm's saved statistics (FP32 mean and inverse std per channel): its backward
#:   reads the input, the weight and these, not the output (``native_batch_norm_backward``
#:   and ``cudnn_batch_norm_backward`` in ``derivatives.yaml``), so the output lives only to
#:   its last forward reader (a ResNet bottleneck's last one: the residual add).
UNSIZED_OUTPUTS: dict[str, tuple[str, bool, Callable[[OpNode], float]]] = {
    "native_dropout": ("native_dropout_backward", False, lambda n: float(n.numel)),
    "native_layer_norm": ("native_layer_norm_backward", False,
                          lambda n: 8.0 * n.numel / max(int(n.shape[-1]) if n.shape else 1, 1)),
    **{k: ("native_batch_norm_backward", False,
           lambda n: 8.0 * (int(n.shape[1]) if len(n.shape) > 1 else 1))
       for k in ("native_batch_norm", "_native_batch_norm_legit")},
    **{k: (f"{k}_backward", True,
           lambda n: 4.0 * n.numel / max(int(n.shape[-1]) if n.shape else 1, 1) + 16.0)
       for k in ("sdpa_attention", "sdpa_attention_causal")},
}

#: Forward ops with a second output as large as the first that the trace does not size:
#: max pooling's int64 indices (saved for backward), bytes per output element.
EXTRA_OUTPUT_BYTES = {
    "max_pool2d_with_indices": 8, "max_pool3d_with_indices": 8, "adaptive_max_pool2d": 8,
    "adaptive_max_pool3d": 8, "max_pool1d_with_indices": 8,
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
    return float(sum(nodes[i].out_bytes + nodes[i].numel * EXTRA_OUTPUT_BYTES.get(op_base(nodes[i].op), 0)
                     for i in roots if nodes[i].op_class != "constant")
                 + sum(unsized_bytes(nodes[i]) for i in masks))


def param_bytes(graph: OpGraph) -> float:
    """Trainable parameter bytes: the graph's ``param_bytes`` meta, else its parameter nodes."""
    pb = graph.meta.get("param_bytes")
    if pb is not None:
        return float(pb)
    return float(sum(n.out_bytes for n in graph.nodes if n.op == "Parameter"))


@dataclass(frozen=True)
class MemoryFootprint:
    """Memory of one job on one device, in MB (MiB, as NVML reports): the central components,
    the band ``lo_mb``..``hi_mb`` and the device's ``capacity_mb`` (module docstring)."""

    context_mb: float
    weights_mb: float
    grads_mb: float
    optimizer_mb: float
    activations_mb: float
    workspace_mb: float
    capacity_mb: float
    lo_mb: float
    hi_mb: float

    @property
    def total_mb(self) -> float:
        """The central footprint (what ``nvidia-smi`` shows when memory is plentiful)."""
        return (self.context_mb + self.weights_mb + self.grads_mb + self.optimizer_mb
                + self.activations_mb + self.workspace_mb)

    @property
    def fit_status(self) -> str:
        """``fits``, ``at_risk`` or ``oom`` (module docstring)."""
        if self.lo_mb > self.capacity_mb:
            return "oom"
        return "at_risk" if self.hi_mb > self.capacity_mb else "fits"

    @property
    def oom(self) -> bool:
        """Certainly out of memory: even the band's lower end exceeds the device."""
        return self.lo_mb > self.capacity_mb

    @property
    def at_risk(self) -> bool:
        """The device's memory lies inside the band: the run proceeds and may fail."""
        return self.fit_status == "at_risk"

    @property
    def fits(self) -> bool:
        """The emulated run proceeds (not certainly out of memory; it may be ``at_risk``)."""
        return not self.oom

    def times(self, n: float) -> MemoryFootprint:
        """``n`` processes' footprints on one device (each its own context, model and state)."""
        return replace(self, **{f.name: getattr(self, f.name) * n for f in fields(self)
                                if f.name != "capacity_mb"})


def footprint(graph: OpGraph, optimizer: str, device: DeviceSpec,
              params: EmulatorParams, precision: str = "fp32") -> MemoryFootprint:
    """Memory footprint of a training step of ``graph`` with ``optimizer`` on ``device``
    (activations by ``params.memory_liveness``: the liveness peak, else the saved bytes)."""
    from gpuscope.emulator.liveness import live_activation_bytes

    pb = param_bytes(graph)
    act = live_activation_bytes(graph, pb) if params.memory_liveness else saved_bytes(graph)
    return footprint_from_sizes(pb, act, optimizer, device, params, precision)


#: Saved-activation bytes under AMP over those of an FP32 trace, at least and at most: every
#: tensor in half precision, or every one kept in FP32 (the central factor is
#: ``EmulatorParams.amp_act_factor``).
AMP_ACT_FACTOR_BAND: tuple[float, float] = (0.5, 1.0)


def footprint_from_sizes(
    param_bytes: float, act_bytes: float, optimizer: str, device: DeviceSpec,
    params: EmulatorParams, precision: str = "fp32",
) -> MemoryFootprint:
    """The footprint and its band from parameter and activation bytes (module docstring).
    ``act_bytes`` is the trace's; ``precision`` ``amp-*`` marks an FP32 trace run under AMP:
    the activations are mostly half precision (``params.amp_act_factor`` of the FP32 bytes,
    ``AMP_ACT_FACTOR_BAND`` in the band) and autocast keeps half-precision weight casts."""
    over = 1.0 + params.alloc_overhead
    amp = precision.startswith("amp")
    act_lo, act_hi = (f * act_bytes for f in (AMP_ACT_FACTOR_BAND if amp else (1.0, 1.0)))
    act = act_bytes * (params.amp_act_factor if amp else 1.0)
    weights = param_bytes * (1.5 if amp else 1.0)
    state = weights + OPTIMIZER_COPIES.get(optimizer, 1) * param_bytes
    lo = (params.context_mb_lo + params.workspace_mb_lo
          + (state + param_bytes + act_lo) * math.exp(-params.mem_err) / MB)
    hi = (params.context_mb_hi + params.workspace_mb_hi
          + (state + (param_bytes + act_hi) * over) * math.exp(params.mem_err) / MB)
    return MemoryFootprint(
        context_mb=params.context_mb,
        weights_mb=weights / MB,
        grads_mb=param_bytes * over / MB,
        optimizer_mb=OPTIMIZER_COPIES.get(optimizer, 1) * param_bytes / MB,
        activations_mb=act * over / MB,
        workspace_mb=params.workspace_mb,
        capacity_mb=device.mem_mb,
        lo_mb=lo,
        hi_mb=hi,
    )
