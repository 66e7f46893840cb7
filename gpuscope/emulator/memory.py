"""Device memory footprint of a training job (issue 4; seed 001 §4.2's out-of-memory runs).

footprint = CUDA context + weights + gradients + optimizer state + activations + workspace:

* weights and gradients: ``param_bytes`` each (FP32 training);
* optimizer state: Adam keeps two more copies (first and second moments), SGD with momentum
  one (the catalog's SGD uses momentum 0.9, ``gpuscope.workloads``); GANs hold two
  optimizers, still one state per parameter;
* activations: the forward-phase outputs the backward pass needs, read off the OpGraph that
  was traced at the job's batch size, so they scale with the batch. Ops that allocate no new
  tensor are skipped: parameters/inputs (``constant``), views (``data_movement``), and
  in-place ops (aten names ending in ``_``, e.g. ``relu_``);
* the caching allocator's fragmentation adds ``alloc_overhead`` to activations and gradients.

A job whose footprint exceeds the device's memory fails with status ``oom``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuscope.devices import DeviceSpec
from gpuscope.emulator.params import EmulatorParams
from gpuscope.graphs.opgraph import OpGraph

MB = float(2**20)
OPTIMIZER_COPIES: dict[str, int] = {"sgd": 1, "adam": 2}
_NO_ALLOC_CLASSES = frozenset({"constant", "data_movement", "control"})


def is_inplace(op: str) -> bool:
    """True for aten in-place ops (``aten.relu_.default``): they allocate no output."""
    parts = op.split(".")
    base = parts[1] if len(parts) >= 2 and parts[0] == "aten" else parts[0]
    return base.endswith("_") and not base.startswith("_")


def activation_bytes(graph: OpGraph) -> float:
    """Bytes of forward-phase outputs kept for the backward pass (see the module docstring)."""
    sizes = [
        n.out_bytes for n in graph.nodes
        if n.phase == "forward" and n.op_class not in _NO_ALLOC_CLASSES and not is_inplace(n.op)
    ]
    return float(np.sum(sizes)) if sizes else 0.0


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
              params: EmulatorParams) -> MemoryFootprint:
    """Memory footprint of a training step of ``graph`` with ``optimizer`` on ``device``."""
    return footprint_from_sizes(param_bytes(graph), activation_bytes(graph), optimizer, device,
                                params)


def footprint_from_sizes(
    param_bytes: float, act_bytes: float, optimizer: str, device: DeviceSpec,
    params: EmulatorParams,
) -> MemoryFootprint:
    """The footprint from parameter and activation bytes (see the module docstring)."""
    over = 1.0 + params.alloc_overhead
    return MemoryFootprint(
        context_mb=params.context_mb,
        weights_mb=param_bytes / MB,
        grads_mb=param_bytes * over / MB,
        optimizer_mb=OPTIMIZER_COPIES.get(optimizer, 1) * param_bytes / MB,
        activations_mb=act_bytes * over / MB,
        workspace_mb=params.workspace_mb,
        capacity_mb=device.mem_mb,
    )
