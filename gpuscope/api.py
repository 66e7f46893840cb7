"""gpuscope's Python API: the entry points a user's script needs, importable from ``gpuscope``
(lazily, so ``import gpuscope`` and ``gpuscope --help`` stay fast). See docs/api.md.

* ``job(...)`` — a ``JobSpec`` (catalog model, ``module=``, ``hf=`` or ``graph=``);
* ``trace(model, dataset=..., batch_size=...)`` — the training-step graph of an in-memory
  ``nn.Module``; ``export_graph(job)`` — a job's graph;
* ``estimate(jobs, devices="all")`` — the emulator on catalog GPUs (one row per job x device);
* ``predict(jobs, device)`` — a trained predictor (the bundled checkpoint by default);
* ``allocate(jobs, cluster, policy, order)`` — predict every job on every GPU type, place,
  order and simulate the queue (seed 001 Alg. 1-2).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuscope.core.errors import InputError
from gpuscope.jobs.spec import JobSpec, source_model_name

if TYPE_CHECKING:
    import pandas as pd
    from torch import nn

    from gpuscope.allocator import AllocationResult
    from gpuscope.graphs import OpGraph


def job(model: str | None = None, *, dataset: str, batch_size: int, optimizer: str = "sgd",
        epochs: int = 1, module: str | None = None, hf: str | None = None,
        graph: str | None = None, **fields: Any) -> JobSpec:
    """A ``JobSpec``; ``model`` defaults to a name derived from ``module``/``hf``/``graph``.
    Other ``JobSpec`` fields (``precision``, ``grad_accum``, ``arrival_s``...) by keyword."""
    if model is None:
        if module or hf:
            model = source_model_name(module, hf)
        elif graph:
            model = Path(graph).stem
        else:
            raise InputError("job() needs a model name, module=, hf= or graph=")
    return JobSpec(model, dataset, optimizer, batch_size, epochs, module=module, hf=hf,
                   graph=graph, **fields)


def _jobs(jobs: JobSpec | Sequence[JobSpec] | str | Path) -> list[JobSpec]:
    from gpuscope.jobs.queue import assign_ids, read_queue

    if isinstance(jobs, JobSpec):
        return assign_ids([jobs])
    if isinstance(jobs, (str, Path)):
        return read_queue(jobs)
    return assign_ids(list(jobs))


def export_graph(job: JobSpec) -> OpGraph:
    """The training-step graph (forward, backward, optimizer) of ``job``."""
    from gpuscope.graphs import export_graph as _export

    return _export(job)


def trace(model: nn.Module, *, dataset: str, batch_size: int, optimizer: str = "adamw",
          precision: str = "fp32", grad_accum: int = 1, name: str | None = None) -> OpGraph:
    """Trace one training step of an in-memory ``model`` on ``dataset``-shaped inputs.

    The model is traced where its parameters are: build it under
    ``with torch.device("meta"):`` for a weightless trace (fast at any size, and the only way
    for models bigger than memory); ``amp-*`` precisions need it on the meta device. The loss
    is chosen from the output as for ``--module`` jobs (``Workload._auto_loss``).
    """
    from gpuscope.graphs.export import trace_module

    shapes = ",".join(f"{n}:{tuple(p.shape)}" for n, p in model.named_parameters())
    digest = hashlib.sha1((repr(model) + shapes).encode()).hexdigest()[:12]
    name = name or type(model).__name__
    j = JobSpec(name, dataset, optimizer, batch_size, 1, precision=precision,
                grad_accum=grad_accum, module=f"python:{type(model).__qualname__}@{digest}")
    return trace_module(model, j)


def estimate(jobs: JobSpec | Sequence[JobSpec] | str | Path, devices: str = "all",
             graph_cache: str | Path | None = None) -> pd.DataFrame:
    """The emulator on catalog GPUs: one row per job x device (columns of ``gpuscope
    estimate``: status, step_s, samples_per_s, mem_gb, fits, bottleneck, exec_time_s, ...,
    mem_gb_lo, mem_gb_hi, fit, at_risk).
    ``jobs``: a job, a list, or a queue file; ``devices``: ``all`` or ``v100,a100``."""
    import pandas as pd

    from gpuscope.cluster.devices import parse_device_list
    from gpuscope.emulator.table import COLUMNS, estimate_rows

    rows, _ = estimate_rows(_jobs(jobs), parse_device_list(devices),
                            None if graph_cache is None else str(graph_cache))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def predict(jobs: JobSpec | Sequence[JobSpec] | str | Path, device: str,
            checkpoint: str | Path | None = None,
            cache_dir: str | Path | None = None) -> pd.DataFrame:
    """Predicted resource use of ``jobs`` on ``device`` (one row per job, the columns of
    ``gpuscope.predictor.PREDICTION_COLUMNS``: the 13 targets, ``step_s``, ``oom_prob``,
    ``oom``, ``in_domain``, ``domain_reason``) with ``checkpoint`` (default: the bundled
    ``datasets/checkpoints/<device>.pt``)."""
    from gpuscope.core.data import bundled
    from gpuscope.predictor import load_predictor

    path = Path(checkpoint) if checkpoint else bundled("checkpoints") / f"{device}.pt"
    return load_predictor(path, cache_dir=cache_dir).predict(_jobs(jobs))


def allocate(jobs: JobSpec | Sequence[JobSpec] | str | Path, cluster: str,
             policy: str = "ect", order: str = "fifo",
             model_dir: str | Path | None = None, truth: str | Path | None = None,
             seed: int = 0) -> AllocationResult:
    """Predict every job on every GPU type of ``cluster`` (``a100:2,h100:1``), place them
    (``policy``), order each GPU's queue (``order``) and simulate: an ``AllocationResult``
    (``.placement``, ``.schedule`` frame, ``.metrics``: average JCT, makespan...)."""
    from gpuscope.allocator import ClusterSpec
    from gpuscope.allocator.inputs import check_devices, prepare, run
    from gpuscope.allocator.names import DEFAULT_MODEL_DIR

    spec = ClusterSpec.parse(cluster)
    check_devices(spec)
    inp = prepare(_jobs(jobs), spec, model_dir or DEFAULT_MODEL_DIR, truth, [policy])
    return run(inp, policy, order, seed=seed)


__all__ = ["allocate", "estimate", "export_graph", "job", "predict", "trace"]
