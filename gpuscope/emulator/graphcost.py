"""One training step's cost arrays (``GraphCost``), read once from its traced graph.

``GraphCost.from_graph`` turns an ``OpGraph`` into per-kernel arrays (FLOPs, bytes, op class,
phase, scalar output, recurrence steps), the kernels' shapes for the kernel model
(``kernels``: a ``KernelBatch``, ``graphkernels``) and per-step counts (dispatches, cuDNN
calls, views, convolution configurations, optimizer tensors), plus the memory sizes
(parameters, saved-for-backward bytes, the liveness peak). ``perf`` prices these arrays on a
device; computing them once per graph is what keeps a 432-run campaign within seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from gpuscope.emulator.graphkernels import conv_geometry, graph_kernels
from gpuscope.emulator.hostwork import optimizer_tensor_counts, per_tensor_extra_dispatch
from gpuscope.emulator.kernels.model import KernelBatch
from gpuscope.emulator.kernels.precision import PRECISIONS
from gpuscope.emulator.liveness import live_activation_bytes
from gpuscope.emulator.memory import VIEW_OPS, op_base, param_bytes, saved_bytes
from gpuscope.emulator.params import EmulatorParams
from gpuscope.graphs.opgraph import OP_CLASSES, OpGraph
from gpuscope.graphs.ops.aten import (
    ATTENTION_NAMES,
    attention_work_fraction,
    base_name,
    recurrent_shape,
)
from gpuscope.jobs.spec import DatasetSpec

_CLASS_INDEX = {c: i for i, c in enumerate(OP_CLASSES)}
_NO_KERNEL_CLASSES = frozenset({"constant", "control"})
_CUDNN_CLASSES = frozenset({"conv", "norm"})
#: Convolution ops whose bias PyTorch adds in a separate kernel (``conv_bias_bytes``).
_BIASED_CONV = frozenset({"convolution", "_convolution", "conv2d", "conv1d", "conv3d",
                          "conv_transpose2d", "cudnn_convolution"})
_VIEW_OPS = VIEW_OPS  # kept for importers of the old name
_op_base = op_base
#: Ops CUDA autocast runs in FP32 (PyTorch's "CUDA Ops that can autocast to float32",
#: https://pytorch.org/docs/stable/amp.html#cuda-ops-that-can-autocast-to-float32), by the aten
#: names a trace records, forward; and the backward kernels of those ops (FP32 like their
#: forward). An ``amp-*`` job on a graph not traced under autocast keeps their traffic whole.
AUTOCAST_FP32_FORWARD: frozenset[str] = frozenset({
    "layer_norm", "native_layer_norm", "group_norm", "native_group_norm", "softmax", "_softmax",
    "log_softmax", "_log_softmax", "nll_loss", "nll_loss_forward", "nll_loss2d_forward",
    "cross_entropy_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
    "binary_cross_entropy_with_logits", "poisson_nll_loss", "cosine_embedding_loss",
    "hinge_embedding_loss", "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss",
    "triplet_margin_loss", "multi_margin_loss", "exp", "expm1", "log", "log10", "log2", "log1p",
    "reciprocal", "rsqrt", "pow", "sum", "prod", "cumsum", "cumprod", "norm",
    "linalg_vector_norm", "linalg_matrix_norm", "logsumexp", "softplus", "acos", "asin", "cosh",
    "sinh", "tan", "erfinv", "cosine_similarity", "dist", "pdist", "cdist", "renorm",
})
AUTOCAST_FP32_BACKWARD: frozenset[str] = frozenset({
    "native_layer_norm_backward", "native_group_norm_backward", "_softmax_backward_data",
    "_log_softmax_backward_data", "nll_loss_backward", "nll_loss2d_backward", "mse_loss_backward",
    "l1_loss_backward", "smooth_l1_loss_backward", "huber_loss_backward", "softplus_backward",
    "binary_cross_entropy_with_logits_backward", "kl_div_backward",
})


def autocast_fp32(op: str, phase: str) -> bool:
    """Whether CUDA autocast runs this traced op in FP32 (``AUTOCAST_FP32_FORWARD`` in the
    forward, ``AUTOCAST_FP32_BACKWARD`` in backward)."""
    base = op_base(op)
    if phase == "forward":
        return base in AUTOCAST_FP32_FORWARD
    return phase == "backward" and base in AUTOCAST_FP32_BACKWARD


#: Kernels per timestep of a recurrent layer: cuDNN's recurrent GEMM and its fused element-wise
#: kernel (forward: gates; backward-data: gate gradients), each at least one ``launch_us``.
RNN_KERNELS_PER_STEP: int = 2


class EmulatedJob(Protocol):
    """What :func:`estimate` reads of a job: a :class:`~gpuscope.jobs.spec.JobSpec`, or a stand-in
    for a model outside the catalog (``emulator/fidelity.py``'s Gavel jobs)."""

    @property
    def dataset(self) -> str: ...
    @property
    def optimizer(self) -> str: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def epochs(self) -> int: ...
    @property
    def steps(self) -> int: ...
    @property
    def precision(self) -> str: ...
    @property
    def dataset_spec(self) -> DatasetSpec: ...


def job_precision(job: EmulatedJob) -> str:
    """The job's precision (``fp32`` for jobs without the field)."""
    p = str(getattr(job, "precision", "fp32") or "fp32")
    return p if p in PRECISIONS else "fp32"


def _conv_configs(graph: OpGraph) -> int:
    """Distinct forward convolution configurations (input, weight and output shapes, dtype):
    cuDNN's autotuner (``cudnn.benchmark``) benchmarks each configuration once and caches it,
    so ResNet-101's 104 convolutions cost about as much to tune as ResNet-50's 53."""
    ins: dict[int, list[tuple[int, ...]]] = {}
    convs = {i for i, n in enumerate(graph.nodes) if n.op_class == "conv" and n.phase == "forward"}
    for s, d in graph.edges:
        if d in convs:
            ins.setdefault(d, []).append(tuple(graph.nodes[s].shape))
    return len({(tuple(sorted(ins.get(i, []))), tuple(graph.nodes[i].shape), graph.nodes[i].dtype_bytes)
                for i in convs})


def conv_bias_bytes(graph: OpGraph, kern_idx: list[int]) -> np.ndarray:
    """Bytes moved by the separate bias kernel of each kernel node (0 for most): PyTorch runs a
    cuDNN convolution (transposed ones too) without its bias and adds the bias after it
    (``output.add_(reshape_bias(input.dim(), bias))`` in ``aten/src/ATen/native/Convolution.cpp``,
    PyTorch 1.x and 2.x alike: one kernel reading and writing the output), and the bias
    gradient is its own reduction of the output gradient (one read of it). A traced
    ``convolution`` / ``convolution_backward`` node holds neither. Depthwise convolutions
    (``groups`` = input channels > 1: PyTorch's own kernel, which adds the bias itself) are
    left out. The backward node is found by the weight it reads."""
    prods: dict[int, list[int]] = {}
    for s, d in graph.edges:
        prods.setdefault(d, []).append(s)
    nodes = graph.nodes
    by_weight: dict[int, float] = {}  # weight node -> forward output bytes of a biased conv
    for i, n in enumerate(nodes):
        if n.op_class == "conv" and n.phase == "forward" and op_base(n.op) in _BIASED_CONV:
            w = _bias_weight(graph, prods.get(i, []), i)
            if w is not None:
                by_weight[w] = float(n.out_bytes)
    out = np.zeros(len(kern_idx))
    for k, i in enumerate(kern_idx):
        n = nodes[i]
        if n.op_class != "conv":
            continue
        hit = [by_weight[j] for j in prods.get(i, []) if j in by_weight]
        if hit:
            out[k] = (2.0 if n.phase == "forward" else 1.0) * hit[0]
    return out


def _bias_weight(graph: OpGraph, ins: list[int], i: int) -> int | None:
    """The weight node of forward convolution ``i`` when PyTorch adds its bias in a kernel
    of its own (a 1-D input of the output's channels), else None. A 2-D convolution's weight
    is the ``K x C/g x R x S`` input of its geometry (``graphkernels.conv_geometry``: plain or
    transposed); another's, the input with the output's channels first. A parameter wins a
    tie with the data input, else the later input."""
    nodes, out = graph.nodes, tuple(graph.nodes[i].shape)
    c_out = out[1] if len(out) > 1 else -1
    if not any(len(nodes[j].shape) == 1 and nodes[j].shape[0] == c_out for j in ins):
        return None
    same = [j for j in ins if len(nodes[j].shape) == len(out)]
    geo = (conv_geometry([tuple(nodes[j].shape) for j in same], out, backward=False)
           if len(out) == 4 else None)
    if geo is not None:
        _, c, _, _, k, r, s, _, g, _, _ = (int(v) for v in geo[0])
        if g > 1 and g == c:
            return None
        w = [j for j in same if tuple(nodes[j].shape) == (k, c // g, r, s)]
    else:
        w = [j for j in same if nodes[j].shape[0] == c_out]
    if len(w) > 1:
        w = [j for j in w if nodes[j].op == "Parameter"] or w[1:]
    return w[0] if len(w) == 1 else None


def _gemm_mnk(op: str, op_class: str, shape: tuple[int, ...] | list[int], flops: float,
              steps: float) -> tuple[float, float, float, float]:
    """``(batch, M, N, K)`` of a cuBLAS GEMM node (``mm``, ``addmm``, ``bmm``, ...: class
    ``matmul``, output ``(..., M, N)``, ``K = flops / (2 batch M N)``); zeros for every other
    kernel, fused attention and recurrences included (their own kernels, not cuBLAS calls)."""
    if (op_class != "matmul" or steps > 0 or len(shape) < 2 or flops <= 0
            or base_name(op) in ATTENTION_NAMES):
        return (0.0, 0.0, 0.0, 0.0)
    m, n = float(shape[-2]), float(shape[-1])
    b = float(np.prod(shape[:-2])) if len(shape) > 2 else 1.0
    if m * n * b <= 0:
        return (0.0, 0.0, 0.0, 0.0)
    return (b, m, n, flops / (2.0 * b * m * n))


@dataclass(frozen=True)
class GraphCost:
    """Device-independent arrays of one OpGraph's kernels (built once, reused per device).

    ``kernels``: each kernel's shapes for the kernel model (``graphkernels``; None: priced by
    FLOPs and bytes, ``perf.flops_batch``); ``scalar``: kernels with a
    scalar (<= 1 element) output; ``activation_bytes``: saved-for-backward bytes;
    ``live_activation_bytes``: the step's liveness peak less its gradients (``act_bytes``);
    ``steps``: sequential timesteps of a recurrent kernel (0 for every other kernel; its
    ``kernels`` row is one timestep);
    ``env_steps``/``host_optimizer``: the graph's host-side work (``host_serial_times``);
    ``workers``: processes running the same step on the one GPU (Gavel's A3C: 4);
    ``sparse_nnz_per_sample``/``sparse_dense_width``: a sparse input built on the host each
    step, its mean non-zeros per sample and its dense width (Gavel's Recommendation;
    ``hostwork.sparse_batch_host_s``);
    ``n_dispatch``/``n_views``/``n_cudnn`` (and their ``_forward`` parts): ops the host
    dispatches, of which views (no kernel) and cuDNN calls (convolutions, norms), priced by
    ``dispatch_s``; ``n_conv_configs``: distinct convolution configurations cuDNN autotunes at
    start-up; ``opt_tensors``/``n_param_tensors``: tensors each optimizer foreach kernel covers
    and the parameter tensors (PyTorch 1.x per-tensor loops, ``hostwork``); ``bias_bytes``:
    traffic of a convolution's separate bias kernel (``conv_bias_bytes``; launched from inside
    the convolution op's own call, so no dispatch of its own: ``cudnn_dispatch_us`` covers it);
    ``pure_half``: the FP32-traced step run under ``model.half()`` (``model_half``)."""

    flops: np.ndarray
    bytes: np.ndarray
    numel: np.ndarray
    cls: np.ndarray
    is_half: np.ndarray
    forward: np.ndarray
    n_dispatch: int
    n_dispatch_forward: int
    n_conv_forward: int
    param_bytes: float
    activation_bytes: float
    batch_size: int
    kernels: KernelBatch | None = None
    is_mm: np.ndarray | None = None
    optimizer: np.ndarray | None = None
    scalar: np.ndarray | None = None
    half_traced: bool = False
    steps: np.ndarray | None = None
    env_steps: int = 0
    host_optimizer: bool = False
    workers: int = 1
    sparse_nnz_per_sample: float = 0.0
    sparse_dense_width: int = 0
    n_views: int = 0
    n_views_forward: int = 0
    n_cudnn: int = 0
    n_cudnn_forward: int = 0
    n_conv_configs: int = 0
    opt_tensors: np.ndarray | None = None
    n_param_tensors: int = 0
    live_activation_bytes: float | None = None
    attn_fp32: np.ndarray | None = None
    gemm_mnk: np.ndarray | None = None
    keeps_fp32: np.ndarray | None = None
    bias_bytes: np.ndarray | None = None
    pure_half: bool = False

    def model_half(self) -> GraphCost:
        """This FP32-traced step run under ``model.half()``: every tensor, weights and
        optimizer state included, in half precision (priced under ``amp-fp16``'s math rules;
        ``kernels.precision.model_half_keeps_fp32`` has what differs from autocast)."""
        return replace(self, pure_half=True)

    def act_bytes(self, params: EmulatorParams) -> float:
        """The footprint's activation bytes: the liveness peak less the gradients
        (``emulator.liveness``) unless ``params.memory_liveness`` is 0 (the previous rule:
        the saved-for-backward bytes)."""
        if params.memory_liveness and self.live_activation_bytes is not None:
            return self.live_activation_bytes
        return self.activation_bytes

    @classmethod
    def from_graph(cls, graph: OpGraph, batch_size: int | None = None) -> GraphCost:
        kern_idx = [
            i for i, n in enumerate(graph.nodes)
            if n.op_class not in _NO_KERNEL_CLASSES and op_base(n.op) not in VIEW_OPS
        ]
        kern = [graph.nodes[i] for i in kern_idx]
        dispatch = [n for n in graph.nodes if n.op_class not in _NO_KERNEL_CLASSES]
        flops = np.array([(n.flops or 0.0) * attention_work_fraction(n.op, n.shape) for n in kern],
                         dtype=np.float64)
        # Unknown traffic: read the output's size once and write it once.
        byts = np.array(
            [n.bytes_accessed if n.bytes_accessed is not None else 2.0 * n.out_bytes for n in kern],
            dtype=np.float64,
        )
        numel = np.array([max(1, n.numel) for n in kern], dtype=np.float64)
        dtb = np.array([max(1, n.dtype_bytes) for n in kern], dtype=np.float64)
        bs = batch_size or int(graph.meta.get("batch_size") or 1)
        steps = np.zeros(len(kern), dtype=np.float64)
        for j, n in enumerate(kern):
            rec = recurrent_shape(n.op, n.shape)
            if rec is not None:
                steps[j] = float(rec[0])
        opt_tensors, n_par = optimizer_tensor_counts(graph, kern)
        p_bytes = param_bytes(graph)
        gemm_mnk = np.array([_gemm_mnk(n.op, n.op_class, n.shape, n.flops or 0.0, steps[j])
                             for j, n in enumerate(kern)], dtype=np.float64).reshape(-1, 4)
        attn_fp32 = np.array([base_name(n.op) in ATTENTION_NAMES and n.dtype_bytes >= 4
                              for n in kern], dtype=bool)
        bias = conv_bias_bytes(graph, kern_idx)
        return cls(
            flops=flops, bytes=byts, numel=numel,
            cls=np.array([_CLASS_INDEX.get(n.op_class, _CLASS_INDEX["other"]) for n in kern]),
            is_half=np.array([n.dtype_bytes <= 2 and n.op_class in ("conv", "matmul") for n in kern], dtype=bool),
            forward=np.array([n.phase == "forward" for n in kern], dtype=bool),
            n_dispatch=len(dispatch),
            n_dispatch_forward=sum(1 for n in dispatch if n.phase == "forward"),
            n_conv_forward=sum(1 for n in kern if n.op_class == "conv" and n.phase == "forward"),
            param_bytes=p_bytes, activation_bytes=saved_bytes(graph),
            batch_size=bs,
            kernels=graph_kernels(graph, kern_idx, flops, byts, dtb, steps, gemm_mnk, attn_fp32),
            steps=steps if bool((steps > 0).any()) else None,
            env_steps=int(graph.meta.get("env_steps", 0) or 0),
            host_optimizer=bool(graph.meta.get("host_optimizer", False)),
            workers=max(1, int(graph.meta.get("workers", 1) or 1)),
            sparse_nnz_per_sample=float(graph.meta.get("sparse_nnz_per_sample", 0.0) or 0.0),
            sparse_dense_width=int(graph.meta.get("sparse_dense_width", 0) or 0),
            is_mm=np.array([n.op_class in ("conv", "matmul") for n in kern], dtype=bool),
            optimizer=np.array([n.phase == "optimizer" for n in kern], dtype=bool),
            scalar=np.array([n.numel <= 1 for n in kern], dtype=bool),
            half_traced=any(n.dtype_bytes == 2 and n.op_class in ("conv", "matmul") for n in kern),
            n_views=len(dispatch) - len(kern),
            n_views_forward=sum(1 for n in dispatch if n.phase == "forward") - sum(1 for n in kern if n.phase == "forward"),
            n_cudnn=sum(1 for n in kern if n.op_class in _CUDNN_CLASSES),
            n_cudnn_forward=sum(1 for n in kern if n.op_class in _CUDNN_CLASSES and n.phase == "forward"),
            n_conv_configs=_conv_configs(graph),
            opt_tensors=opt_tensors, n_param_tensors=n_par,
            live_activation_bytes=live_activation_bytes(graph, p_bytes),
            # fused attention on FP32 tensors: PyTorch's memory-efficient kernel (precision)
            attn_fp32=attn_fp32,
            keeps_fp32=np.array([autocast_fp32(n.op, n.phase) for n in kern], dtype=bool),
            gemm_mnk=gemm_mnk,
            bias_bytes=bias if (bias > 0).any() else None,
        )

    def dispatch_s(self, params: EmulatorParams, speed: float, forward_only: bool = False) -> float:
        """Host time to dispatch the step's ops (or its forward ops), seconds: ``dispatch_us``
        per op, ``cudnn_dispatch_us`` per convolution/normalisation kernel and
        ``view_dispatch_us`` per view instead (all equal in the legacy era)."""
        n = self.n_dispatch_forward if forward_only else self.n_dispatch
        nc = self.n_cudnn_forward if forward_only else self.n_cudnn
        nv = self.n_views_forward if forward_only else self.n_views
        us = (n * params.dispatch_us + nc * (params.cudnn_dispatch_us - params.dispatch_us)
              + nv * (params.view_dispatch_us - params.dispatch_us))
        if not forward_only and params.per_tensor_optimizer > 0:  # PyTorch 1.x optimizer loops
            us += params.per_tensor_optimizer * per_tensor_extra_dispatch(self) * params.dispatch_us
        return us * 1e-6 / speed
