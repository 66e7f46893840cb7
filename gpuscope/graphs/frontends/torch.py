"""PyTorch frontend: trace one full training step (forward, backward, optimizer update) to aten
ops and build an ``OpGraph`` (seed 001 §3.1: "the model being trained is converted into a
graph"; Driple converts TensorFlow training-step graphs, which contain the optimizer's ops, so
Adam and SGD jobs differ here as they do there).

How: ``train_step`` runs on the ``meta`` device (shapes and dtypes, no arithmetic, so a
ResNet-50 step traces in about a second) under a ``TorchDispatchMode`` that sees every aten op:

* dataflow edges come from tensor identity: each op's output tensors map to its node; an
  in-place op (``add_``, ``_foreach_mul_``) writes its mutated arguments, which then map to the
  new node. Every tensor seen is kept alive until the trace ends so ``id()`` is never reused;
* tensors no op produced (parameters, buffers, optimizer state, the batch) become ``constant``
  source nodes named after what they are (``param:conv1.weight``, ``input:0``);
* phase: ``optimizer`` inside ``optimizer.step`` (step pre/post hooks), ``backward`` when the
  autograd engine is running a node (``torch._C._current_autograd_node()``), else ``forward``;
* aliases (``detach``, ``lift_fresh``) and ``.item()`` make no node; profiler ops are skipped;
* recurrent layers (``nn.LSTM``/``GRU``/``RNN``) are traced as cuDNN runs them, one
  sequential ``gpuscope.<cell>_recurrence`` node per layer and direction
  (``gpuscope.graphs.ops.recurrent``), not ~10 aten ops per timestep;
* ``F.scaled_dot_product_attention`` (our transformers, Hugging Face's default ``sdpa``
  attention) is traced as the fused kernel a GPU runs, one ``gpuscope.sdpa_attention`` node
  forward and one backward, keeping ``q, k, v``, the output and its logsumexp for backward,
  not the ``S x S`` probabilities of the math path (``gpuscope.graphs.ops.attention``); a model
  whose real code computed attention explicitly (``math_attention = True``: Gavel's 2018
  Transformer) keeps the math path's ops;
* ``F.dropout`` in training is traced as CUDA runs it, one ``native_dropout`` node with a
  bool mask (one byte per element) and one ``native_dropout_backward``, not the CPU/meta
  path's input-dtype noise tensor (``gpuscope.graphs.ops.dropout``);
* a foreach op over N tensors (``_foreach_mul_``) is ONE node whose ``numel`` and ``shape`` are
  the total over its tensor list (``shape == (total numel,)``), its FLOPs likewise.

Optimizers whose ``foreach`` is unset are traced with ``foreach=True`` (PyTorch's default on a
GPU, where the jobs run); the first step, which only creates optimizer state, runs untraced
before the traced one, so the graph is the steady-state step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from gpuscope.graphs.opgraph import OpGraph, OpNode
from gpuscope.graphs.ops.aten import (
    ALIAS_OPS,
    TRACED_NAMESPACES,
    base_name,
    estimate_flops,
    is_foreach,
    op_class,
)
from gpuscope.graphs.ops.traffic import read_bytes

#: Copies AccumulateGrad makes on the meta device only (on a GPU it steals the gradient
#: buffer): aliases, so ``.grad`` maps to the op that computed the gradient.
_GRAD_COPY_OPS = frozenset({"new_empty_strided", "copy_", "clone", "empty_strided", "_to_copy"})


def _tensors(x: Any) -> list[torch.Tensor]:
    return [t for t in tree_flatten(x)[0] if isinstance(t, torch.Tensor)]


def _shape(t: torch.Tensor) -> tuple[int, ...]:
    return tuple(int(s) for s in t.shape)


class OpWatch(TorchDispatchMode):
    """Remembers the aten op that raised, to name it in a failed trace's error message."""

    def __init__(self) -> None:
        super().__init__()
        self.failed: str | None = None
        self.last: str | None = None

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        try:
            return func(*args, **(kwargs or {}))
        except Exception:
            if self.failed is None:
                self.failed = str(func)
            raise


class _Recorder(TorchDispatchMode):
    """Records every aten op into nodes and edges (see the module docstring)."""

    def __init__(self, names: dict[int, str]) -> None:
        super().__init__()
        self.names = names
        self.nodes: list[OpNode] = []
        self.edges: list[tuple[int, int]] = []
        self.producer: dict[int, int] = {}
        self.keep: list[torch.Tensor] = []  # strong refs: ids stay unique during the trace
        self.optimizer_depth = 0
        self._counts: dict[str, int] = {}

    # -- helpers ---------------------------------------------------------------------------
    @staticmethod
    def _in_accumulate_grad() -> bool:
        node = torch._C._current_autograd_node()
        return node is not None and type(node).__name__ == "AccumulateGrad"

    def _phase(self) -> str:
        if self.optimizer_depth > 0:
            return "optimizer"
        return "backward" if torch._C._current_autograd_node() is not None else "forward"

    def _source(self, t: torch.Tensor, phase: str) -> int:
        """Node index producing ``t``; a ``constant`` source node when no op produced it."""
        key = id(t)
        idx = self.producer.get(key)
        if idx is not None:
            return idx
        name = self.names.get(key) or f"const:{len(self.nodes)}"
        self.nodes.append(OpNode(
            name=name, op="Parameter" if name.startswith("param:") else "Input"
            if name.startswith("input:") else "Constant",
            op_class="constant", shape=_shape(t), numel=int(t.numel()),
            dtype_bytes=int(t.element_size()), flops=0.0,
            bytes_accessed=float(t.numel() * t.element_size()),
            phase="data" if name.startswith("input:") else phase,
        ))
        self.producer[key] = len(self.nodes) - 1
        self.keep.append(t)
        return len(self.nodes) - 1

    @staticmethod
    def _written(func: Any, args: tuple, kwargs: dict) -> list[torch.Tensor]:
        """Tensors an op mutates (schema arguments with a write alias)."""
        out: list[torch.Tensor] = []
        for i, a in enumerate(func._schema.arguments):
            if a.alias_info is None or not a.alias_info.is_write:
                continue
            v = args[i] if i < len(args) else kwargs.get(a.name)
            out.extend(_tensors(v))
        return out

    # -- dispatch --------------------------------------------------------------------------
    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func.namespace not in TRACED_NAMESPACES:
            return out
        opname = func._opname
        ins = _tensors((args, kwargs))
        if opname in ALIAS_OPS or (opname in _GRAD_COPY_OPS and self._in_accumulate_grad()):
            # forward the producer of the aliased tensor (no node)
            outs = _tensors(out) + self._written(func, args, kwargs)
            src = next((self.producer[id(t)] for t in reversed(ins) if id(t) in self.producer), None)
            if src is not None:
                for t in outs:
                    self.producer[id(t)] = src
                self.keep.extend(outs)
            return out
        phase = self._phase()
        srcs: list[int] = []
        for t in ins:
            s = self._source(t, phase)
            if s not in srcs:
                srcs.append(s)
        outs = _tensors(out)
        seen = {id(t) for t in outs}
        outs += [t for t in self._written(func, args, kwargs) if id(t) not in seen]
        op = str(func)
        foreach = is_foreach(op)
        first = outs[0] if outs else None
        if foreach:
            numel = sum(int(t.numel()) for t in outs)
            shape: tuple[int, ...] = (numel,)
        else:
            numel = int(first.numel()) if first is not None else 0
            shape = _shape(first) if first is not None else ()
        # indexed reads (embedding, gather, nll_loss) touch only the rows they select
        in_bytes = read_bytes(base_name(op), ins,
                              args[1] if opname == "index_select" and len(args) > 1 else None)
        out_bytes = sum(t.numel() * t.element_size() for t in outs)
        klass = op_class(op, phase)
        flops = estimate_flops(
            op, [_shape(t) for t in ins], self._args_meta(opname, args, outs), numel,
            sum(int(t.numel()) for t in ins) if foreach else (int(ins[0].numel()) if ins else 0),
            op_class(op, "forward"),
        )
        short = base_name(op) if not foreach else f"foreach_{base_name(op)}"
        k = self._counts.get(short, 0)
        self._counts[short] = k + 1
        idx = len(self.nodes)
        self.nodes.append(OpNode(
            name=f"{short}_{k}", op=op, op_class=klass, shape=shape, numel=numel,
            dtype_bytes=int(first.element_size()) if first is not None else 4,
            flops=flops, bytes_accessed=float(in_bytes + out_bytes), phase=phase,
        ))
        self.edges.extend((s, idx) for s in srcs)
        for t in outs:
            self.producer[id(t)] = idx
        self.keep.extend(ins)
        self.keep.extend(outs)
        return out

    @staticmethod
    def _args_meta(opname: str, args: tuple, outs: list[torch.Tensor]) -> dict[str, Any]:
        """Non-tensor arguments the FLOP formulas need (aten schemas, positional)."""
        meta: dict[str, Any] = {
            "tensor_args": [_shape(a) for a in args if isinstance(a, torch.Tensor)],
            "out_shape": _shape(outs[0]) if outs else (),
        }
        if opname == "convolution" and len(args) > 6:
            meta["transposed"] = bool(args[6])
        elif opname == "convolution_backward" and len(args) > 10:
            meta["transposed"] = bool(args[7])
            meta["output_mask"] = tuple(args[10])
        elif opname in ("max_pool2d_with_indices", "avg_pool2d", "max_pool2d") and len(args) > 1:
            meta["kernel"] = tuple(args[1])
        elif opname in ("max_pool2d_with_indices_backward", "avg_pool2d_backward") and len(args) > 2:
            meta["kernel"] = tuple(args[2])
        return meta


def _name_tensors(modules: Any, optimizers: Iterable[torch.optim.Optimizer],
                  batch: Any) -> dict[int, str]:
    names: dict[int, str] = {}
    pnames: dict[int, str] = {}
    for pname, p in modules.named_parameters():
        names[id(p)] = pnames[id(p)] = f"param:{pname}"
    for bname, b in modules.named_buffers():
        names[id(b)] = f"buffer:{bname}"
    for opt in optimizers:
        for p, st in opt.state.items():
            for k, v in st.items():
                if isinstance(v, torch.Tensor):
                    names[id(v)] = f"state:{pnames.get(id(p), 'p')[6:]}.{k}"
    for i, t in enumerate(_tensors(batch)):
        names[id(t)] = f"input:{i}"
    return names


class _ForeachDefault:
    """Context: optimizers with ``foreach=None`` use ``foreach=True`` (the GPU default)."""

    def __init__(self, optimizers: list[torch.optim.Optimizer]) -> None:
        self.optimizers = optimizers
        self.changed: list[dict[str, Any]] = []

    def __enter__(self) -> _ForeachDefault:
        for opt in self.optimizers:
            for g in opt.param_groups:
                if "foreach" in g and g["foreach"] is None and not g.get("fused"):
                    g["foreach"] = True
                    self.changed.append(g)
        return self

    def __exit__(self, *exc: object) -> None:
        for g in self.changed:
            g["foreach"] = None


def trace_train_step(train_step: Callable[[Any], Any], batch: Any, modules: Any,
                     optimizers: list[torch.optim.Optimizer], *, name: str = "graph",
                     meta: dict[str, Any] | None = None, warmup: bool = True,
                     fused_sdpa: bool = True) -> OpGraph:
    """Trace ``train_step(batch)`` (forward, backward, optimizer step) into an ``OpGraph``.

    Args:
        train_step: runs one training step on ``batch``.
        batch: the step's input (tensors, or a structure of tensors).
        modules: an ``nn.Module`` (or ``ModuleDict``) owning the parameters, for node names.
        optimizers: the optimizers ``train_step`` steps (their steps are the optimizer phase).
        warmup: run one untraced step first so the optimizer state exists (steady state).
        fused_sdpa: trace ``F.scaled_dot_product_attention`` as the fused kernel PyTorch >= 2.0
            runs on a GPU (``gpuscope.graphs.ops.attention``); False, or a module with a true
            ``math_attention`` attribute (code that computed attention explicitly, Gavel's
            2018 Transformer), keeps its math path.
    """
    from gpuscope.graphs.ops.attention import fused_attention
    from gpuscope.graphs.ops.dropout import gpu_dropout
    from gpuscope.graphs.ops.recurrent import fused_recurrent_layers

    optimizers = list(optimizers)
    fused_sdpa = fused_sdpa and not any(getattr(m, "math_attention", False)
                                        for m in modules.modules())
    with _ForeachDefault(optimizers), fused_recurrent_layers(modules), \
            fused_attention(fused_sdpa), gpu_dropout():
        if warmup:
            train_step(batch)
        rec = _Recorder(_name_tensors(modules, optimizers, batch))

        def _enter(*_a: Any) -> None:
            rec.optimizer_depth += 1

        def _exit(*_a: Any) -> None:
            rec.optimizer_depth -= 1

        handles = [h for o in optimizers for h in (o.register_step_pre_hook(_enter),
                                                   o.register_step_post_hook(_exit))]
        try:
            with rec:
                train_step(batch)
        finally:
            for h in handles:
                h.remove()
    params = {id(p): p for p in modules.parameters() if p.requires_grad}
    g_meta: dict[str, Any] = {
        "framework": "pytorch",
        "param_count": int(sum(p.numel() for p in params.values())),
        "param_bytes": int(sum(p.numel() * p.element_size() for p in params.values())),
    }
    first = _tensors(batch)
    if first:
        g_meta["input_shape"] = list(_shape(first[0]))
    g_meta.update(meta or {})
    graph = OpGraph(name=name, nodes=rec.nodes, edges=rec.edges, meta=g_meta)
    rec.keep.clear()
    return graph

