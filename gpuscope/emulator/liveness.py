"""Peak memory of a training step by liveness over its traced graph.

The saved-for-backward rule (``memory.saved_bytes``) misses the step's transient peak: tensors
alive at the same time that autograd does not keep, e.g. a language model's ``B x S x vocab``
logits, their log-softmax and its gradient, or the largest backward intermediate. Here the
step's ops are replayed in execution order (the OpGraph's node order) and the bytes alive at
each op are summed:

* a storage is allocated by an op that allocates (not a ``constant`` source, not a view, not
  an in-place op such as ``_foreach_mul_``: those alias the storage of their first input,
  ``memory.VIEW_OPS``) and is
  alive from that op until the last op that reads it or any of its aliases (autograd frees a
  saved tensor once the backward op that reads it has run); an op's inputs and its output
  are alive together while it runs; max pooling's int64 indices (a second output the trace
  does not size) live with its output (``EXTRA_OUTPUT_BYTES``); the other unsized outputs
  (``memory.UNSIZED_OUTPUTS``: ``native_dropout``'s bool mask, the fused attention's
  logsumexp and RNG state, a layer norm's mean/rstd) are storages of their own, alive from
  their op to the backward op that reads them, while the op's output lives to its last
  other reader (the dropout's and the layer norm's backward do not read it);
* gradients (backward outputs read by the optimizer) stay alive until the step ends (the
  next step's ``zero_grad(set_to_none=True)``, PyTorch 2.x's default and the catalog's
  step). A multi-output backward op (``convolution_backward``, the norms' backward, a fused
  recurrence's backward) records its first output only (the input gradient), so the
  gradient bytes are spread over the gradient-producing ops: single-output ones
  (``mm``, ``sum``, ``embedding_dense_backward``) by their own size, multi-output ones share
  the rest of ``param_bytes`` equally; all ``param_bytes`` are alive once backward is done;
* parameters, optimizer state, buffers and the batch are not counted here (the footprint
  adds weights and optimizer state; buffers and batch are small).

``peak_live_bytes`` is the maximum over the schedule; the footprint's activation part is that
peak less the gradients (``memory.footprint_from_sizes`` adds ``param_bytes`` of gradients;
all of them are alive by the optimizer step, so the difference is never negative). A graph
without backward edges has no schedule to replay: every forward output that allocates
(``memory.activation_bytes``), as before. An output no op reads (the loss) is freed at once:
references the Python code holds (a returned logits tensor) are not in the graph. Only the
graph is read: graph fingerprints are unchanged. Checked against the bytes alive on CPU
(``tests/test_liveness.py``).
"""

from __future__ import annotations

import numpy as np

from gpuscope.emulator.memory import (
    EXTRA_OUTPUT_BYTES,
    UNSIZED_OUTPUTS,
    VIEW_OPS,
    activation_bytes,
    is_inplace,
    op_base,
    op_key,
    unsized_bytes,
)
from gpuscope.graphs.opgraph import OpGraph

#: Backward ops whose parameter gradients are extra outputs the trace does not size.
MULTI_OUTPUT_GRAD_OPS = frozenset({
    "convolution_backward", "native_layer_norm_backward", "native_batch_norm_backward",
    "native_group_norm_backward", "cudnn_batch_norm_backward", "miopen_batch_norm_backward",
    "_native_batch_norm_legit_backward", "cudnn_convolution_backward",
})
_NO_ALLOC = frozenset({"constant", "control"})


#: Multi-output gradient ops that read a norm's weight but also produce its bias's gradient.
_NORM_GRAD_OPS = frozenset(o for o in MULTI_OUTPUT_GRAD_OPS if "norm" in o)


def _param_reads(graph: OpGraph) -> np.ndarray:
    """Bytes of trainable parameters (``Parameter`` nodes, or views of them) each op reads."""
    nodes = graph.nodes
    is_param = np.array([nd.op == "Parameter" for nd in nodes], dtype=bool)
    first_pred: dict[int, int] = {}
    for s, d in graph.edges:
        first_pred.setdefault(d, s)
    for i, nd in enumerate(nodes):  # execution order: a view's source comes first
        if op_base(nd.op) in VIEW_OPS and is_param[first_pred.get(i, i)]:
            is_param[i] = True
    reads = np.zeros(len(nodes), dtype=np.float64)
    for s, d in graph.edges:
        if is_param[s] and not is_param[d]:
            reads[d] += nodes[s].out_bytes
    return reads


def _is_multi_grad(op: str) -> bool:
    base = op_base(op)
    return base in MULTI_OUTPUT_GRAD_OPS or base.endswith("_recurrence_backward") \
        or op.endswith("_recurrence_backward")


def live_profile(graph: OpGraph, param_bytes: float) -> np.ndarray | None:
    """Bytes alive at each op of the step (module docstring), or None for a graph without
    backward edges (no schedule to replay: the caller falls back to the saved-bytes rule)."""
    nodes = graph.nodes
    n = len(nodes)
    if n == 0:
        return None
    first_pred = np.full(n, -1, dtype=np.int64)
    last_read = np.arange(n, dtype=np.int64)  # an op's output is alive at least while it runs
    nonopt = np.arange(n, dtype=np.int64)  # ... and its last reader outside the optimizer
    has_bwd_edge = False
    read_by_opt = np.zeros(n, dtype=bool)
    phase = [nd.phase for nd in nodes]
    key = [op_key(nd.op) for nd in nodes]
    readers = {UNSIZED_OUTPUTS[k][0] for k in key if k in UNSIZED_OUTPUTS}
    extra_end = np.arange(n, dtype=np.int64)  # unsized outputs' last (backward) reader
    for s, d in graph.edges:
        if first_pred[d] < 0:
            first_pred[d] = s
        if key[d] in readers and key[s] in UNSIZED_OUTPUTS \
                and UNSIZED_OUTPUTS[key[s]][0] == key[d]:
            extra_end[s] = max(extra_end[s], d)
            if phase[s] == "forward" and phase[d] == "backward":
                has_bwd_edge = True
            if not UNSIZED_OUTPUTS[key[s]][1]:  # the edge carries the unsized outputs only
                continue
        if d > last_read[s]:
            last_read[s] = d
        if phase[d] == "optimizer":
            read_by_opt[s] = True
            continue
        if d > nonopt[s]:
            nonopt[s] = d
        if phase[s] == "forward" and phase[d] == "backward":
            has_bwd_edge = True
    if not has_bwd_edge:
        return None
    # resolve views and in-place ops to the op that allocated the storage (nodes are in
    # execution order, so a predecessor's root is known before its consumer's)
    root = np.arange(n, dtype=np.int64)
    alloc = np.zeros(n, dtype=bool)
    for i, nd in enumerate(nodes):
        if nd.op_class in _NO_ALLOC:
            continue
        if op_base(nd.op) in VIEW_OPS or is_inplace(nd.op):
            p = int(first_pred[i])
            if 0 <= p < i:
                root[i] = root[p]
            continue
        alloc[i] = True
    end = np.arange(n, dtype=np.int64)
    np.maximum.at(end, root, last_read)
    end_nonopt = np.arange(n, dtype=np.int64)
    np.maximum.at(end_nonopt, root, nonopt)
    opt_root = np.zeros(n, dtype=bool)
    opt_root[root[read_by_opt]] = True
    size = np.array([float(nd.out_bytes + nd.numel * EXTRA_OUTPUT_BYTES.get(op_base(nd.op), 0))
                     for nd in nodes], dtype=np.float64)
    is_bwd = np.array([p == "backward" for p in phase], dtype=bool)
    multi_all = np.array([_is_multi_grad(nd.op) for nd in nodes], dtype=bool)
    if not read_by_opt.any():
        # no optimizer step (``none``): a gradient is a backward output nothing reads (it
        # stays in ``.grad``) or a multi-output gradient op that reads a parameter
        opt_root = (end == np.arange(n)) | (multi_all & (_param_reads(graph) > 0))
    grad = alloc & is_bwd & opt_root
    # a multi-output gradient op's recorded output (its input gradient) is alive until the
    # rest of backward has read it; the gradients' own bytes are added below
    stop = np.where(grad, end_nonopt, end)
    diff = np.zeros(n + 1, dtype=np.float64)
    idx = np.flatnonzero(alloc & ~(grad & ~multi_all))  # single-output gradients: below
    np.add.at(diff, idx, size[idx])
    np.add.at(diff, stop[idx] + 1, -size[idx])
    m_idx = np.flatnonzero(np.array([k in UNSIZED_OUTPUTS for k in key], dtype=bool))
    if len(m_idx):
        m_size = np.array([unsized_bytes(nodes[i]) for i in m_idx], dtype=np.float64)
        np.add.at(diff, m_idx, m_size)
        np.add.at(diff, extra_end[m_idx] + 1, -m_size)
    live = np.cumsum(diff[:n])
    # the gradients themselves: alive from their op to the end of the step
    g_idx = np.flatnonzero(grad)
    if len(g_idx) and param_bytes > 0:
        multi = multi_all[g_idx]
        w = np.where(multi, 0.0, size[g_idx])
        known = float(w.sum())
        if multi.any() and known < param_bytes:
            # each multi-output op's share in proportion to the parameters it reads (a
            # convolution's weight; a norm's weight, whose bias gradient is as large);
            # equal shares where no parameter read is traced
            share = _param_reads(graph)[g_idx[multi]]
            share = np.where([op_base(nodes[i].op) in _NORM_GRAD_OPS for i in g_idx[multi]],
                             2.0 * share, share)
            if share.sum() <= 0:
                share = np.ones(int(multi.sum()))
            w[multi] = (param_bytes - known) * share / float(share.sum())
        w *= param_bytes / max(float(w.sum()), 1.0)
        gdiff = np.zeros(n, dtype=np.float64)
        np.add.at(gdiff, g_idx, w)
        live += np.cumsum(gdiff)
    elif param_bytes > 0:  # no gradient op found: all alive from backward on
        first_bwd = int(np.argmax(is_bwd)) if is_bwd.any() else n
        live[first_bwd:] += param_bytes
    return live


def peak_live_bytes(graph: OpGraph, param_bytes: float) -> float | None:
    """Maximum of ``live_profile`` (gradients included), or None without backward edges."""
    live = live_profile(graph, param_bytes)
    return None if live is None else float(live.max())


def live_activation_bytes(graph: OpGraph, param_bytes: float) -> float:
    """The footprint's activation part under the liveness rule: the peak less the gradients
    (counted apart by the footprint); the saved-bytes fallback without backward edges."""
    peak = peak_live_bytes(graph, param_bytes)
    if peak is None:
        return activation_bytes(graph)
    return max(0.0, peak - param_bytes)
