"""OpGraph: one framework-neutral computational graph of a training step.

Every frontend (PyTorch aten trace, TensorFlow GraphDef, JSON node/edge lists) produces an
``OpGraph``; the encoder (Driple's, design.md "Graph encoding") and the emulator consume it.

Nodes carry what the encoder and the emulator need:

* ``op``: the framework's op type (``aten.convolution.default``, ``Conv2D``, ...);
* ``op_class``: a canonical class shared by all frontends (``OP_CLASSES``);
* ``shape``/``numel``/``dtype_bytes``: the first output tensor;
* ``flops``: floating-point operations of the op, where the op is known (None otherwise);
* ``bytes_accessed``: bytes read plus written, where known (None otherwise);
* ``phase``: ``forward``, ``backward``, ``optimizer``, ``data`` or ``unknown``.

``meta`` holds graph-level facts: ``framework``, ``model``, ``dataset``, ``optimizer``,
``batch_size``, ``param_count`` (trainable parameters), ``param_bytes``, ``input_shape``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from gpuscope.core.limits import MAX_PATH_LEN, parse_number

#: Largest count or size a graph file may give (elements, FLOPs, bytes: 2**62).
MAX_COUNT: float = 2.0**62

#: Canonical op classes shared by all frontends.
OP_CLASSES: tuple[str, ...] = (
    "conv",          # convolutions and their gradients
    "matmul",        # mm, bmm, addmm, linear, MatMul, einsum
    "norm",          # batch/layer/group norm and their gradients
    "pool",          # max/avg/adaptive pooling and their gradients
    "activation",    # relu, sigmoid, tanh, gelu, softmax and their gradients
    "elementwise",   # add, mul, div, sub, pow, sqrt, where, comparisons ...
    "reduction",     # sum, mean, max over axes
    "loss",          # cross-entropy, nll, mse, bce
    "optimizer",     # ops of the parameter update (foreach/fused adam, sgd, ...)
    "data_movement", # view, reshape, transpose, cat, slice, copy, expand, permute ...
    "constant",      # parameters, inputs, constants, placeholders
    "random",        # dropout masks, random ops
    "control",       # TensorFlow control flow, NoOp, Identity, asserts
    "other",
)
PHASES: tuple[str, ...] = ("forward", "backward", "optimizer", "data", "unknown")


@dataclass
class OpNode:
    """One op of a computational graph (see the module docstring for the fields)."""

    name: str
    op: str
    op_class: str = "other"
    shape: tuple[int, ...] = ()
    numel: int = 0
    dtype_bytes: int = 4
    flops: float | None = None
    bytes_accessed: float | None = None
    phase: str = "unknown"

    @property
    def out_bytes(self) -> int:
        return int(self.numel) * int(self.dtype_bytes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "op": self.op, "op_class": self.op_class,
            "shape": list(self.shape), "numel": int(self.numel),
            "dtype_bytes": int(self.dtype_bytes), "flops": self.flops,
            "bytes_accessed": self.bytes_accessed, "phase": self.phase,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> OpNode:
        """A node from its JSON object; every number bounded (``ValueError`` naming the
        field), every name text of bounded length."""
        def num(key: str, default: Any, integer: bool = False, high: float = MAX_COUNT) -> Any:
            v = d.get(key, default)
            if v is None:
                return None
            try:
                return parse_number(v, integer=integer, low=0, high=high)
            except ValueError as e:
                raise ValueError(f"{key} {e}") from None

        def text(key: str, default: str | None = None) -> str:
            v = d.get(key, default)
            if not isinstance(v, str) or len(v) > MAX_PATH_LEN:
                raise ValueError(f"{key} must be text of at most {MAX_PATH_LEN} characters")
            return v

        shape = d.get("shape", ()) or ()
        if not isinstance(shape, (list, tuple)) or len(shape) > 64:
            raise ValueError("shape must be a list of at most 64 sizes")
        return cls(
            name=text("name"), op=text("op"), op_class=text("op_class", "other"),
            shape=tuple(int(parse_number(s, integer=True, low=-1, high=MAX_COUNT))
                        for s in shape),
            numel=int(num("numel", 0, True) or 0), dtype_bytes=int(num("dtype_bytes", 4, True,
                                                                      64) or 4),
            flops=num("flops", None), bytes_accessed=num("bytes_accessed", None),
            phase=text("phase", "unknown"),
        )


@dataclass
class OpGraph:
    """A directed graph of ``OpNode``; ``edges`` are (producer index, consumer index)."""

    name: str
    nodes: list[OpNode] = field(default_factory=list)
    edges: list[tuple[int, int]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @property
    def num_edges(self) -> int:
        return len(self.edges)

    def op_histogram(self) -> Counter[str]:
        """Count of nodes per framework op type."""
        return Counter(n.op for n in self.nodes)

    def class_histogram(self) -> Counter[str]:
        """Count of nodes per canonical op class."""
        return Counter(n.op_class for n in self.nodes)

    def total_flops(self, phase: str | None = None) -> float:
        """Sum of known FLOPs, optionally of one phase."""
        return float(
            sum(n.flops or 0.0 for n in self.nodes if phase is None or n.phase == phase)
        )

    def total_out_bytes(self, phase: str | None = None) -> int:
        return int(sum(n.out_bytes for n in self.nodes if phase is None or n.phase == phase))

    def to_networkx(self) -> nx.DiGraph:
        g = nx.DiGraph()
        g.add_nodes_from(range(len(self.nodes)))
        g.add_edges_from(self.edges)
        return g

    def validate(self) -> None:
        """Raise ValueError if an edge names a node that does not exist."""
        n = len(self.nodes)
        for s, d in self.edges:
            if not (0 <= s < n and 0 <= d < n):
                raise ValueError(f"graph {self.name!r}: edge ({s}, {d}) outside 0..{n - 1}")
