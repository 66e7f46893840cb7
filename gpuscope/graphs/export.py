"""High-level export: a JobSpec's training-step graph, and the catalog summary table.

``export_graph(job)`` dispatches: a job with a ``graph`` file → the file frontends
(``read_graph``: .json/.json.gz, .pb, .pbtxt); a catalog PyTorch job → the aten trace of
``gpuscope.workloads``' ``train_step`` on the ``meta`` device (``torch_frontend``); a catalog
job with ``framework="tensorflow"`` → the Keras version of the model (``keras_models``; plain
classifiers only, else ``InputError``) traced by ``keras_train_step_graph``.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterable
from typing import Any

import pandas as pd

from gpuscope.graphs.files import read_graph
from gpuscope.graphs.opgraph import OpGraph
from gpuscope.jobs.spec import JobSpec


def job_meta(job: JobSpec) -> dict[str, Any]:
    meta: dict[str, Any] = {"model": job.model, "dataset": job.dataset,
                            "optimizer": job.optimizer, "batch_size": job.batch_size,
                            "graph_key": job.graph_key}
    # only when set: the graphs of existing fp32 catalog jobs stay byte-identical
    if job.precision != "fp32":
        meta["precision"] = job.precision
    if job.grad_accum != 1:
        meta["grad_accum"] = job.grad_accum
    return meta


def _fake_cpu(wl: Any, job: JobSpec) -> Any:
    """Move a meta-built workload to fake CPU tensors (``FakeTensorMode``: shapes, dtypes and
    the device's dispatch keys, no data) and rebuild its optimizers there. Autocast has no
    meta kernel path (``torch.autocast`` is ignored for meta tensors), so mixed-precision steps
    are traced on fake CPU tensors under CPU autocast, whose policy casts the same ops
    (matmul, linear, conv, bmm, baddbmm, scaled dot-product attention) to half precision as
    CUDA's and keeps the same reductions and norms in fp32."""
    import torch

    from gpuscope.workloads.workload import make_workload

    memo: dict[int, torch.Tensor] = {}  # tied weights (GPT-2's embedding/head) stay tied

    def fake(t: torch.Tensor) -> torch.Tensor:
        if id(t) not in memo:
            e = torch.empty_like(t, device="cpu")
            memo[id(t)] = torch.nn.Parameter(e, t.requires_grad) \
                if isinstance(t, torch.nn.Parameter) else e
        return memo[id(t)]

    for mod in wl.modules.modules():
        for store in (mod._parameters, mod._buffers):
            for name, t in store.items():
                if t is not None:
                    store[name] = fake(t)
    return make_workload(job, wl.kind, wl.modules, scaler_device="cpu")


def trace_module(model: Any, job: JobSpec) -> OpGraph:
    """One training step of an in-memory ``nn.Module`` as ``job`` describes it (dataset,
    batch, optimizer, precision), traced where its parameters are: the meta device for a
    weightless trace (``amp-*`` precisions need it: they are traced on fake CPU tensors)."""
    import torch

    from gpuscope.core.errors import InputError
    from gpuscope.graphs.frontends.torch import trace_train_step
    from gpuscope.workloads.workload import make_workload

    modules = torch.nn.ModuleDict({"model": model})
    modules.train()
    device = next(iter(model.parameters())).device
    meta = {**job_meta(job), "trace_device": device.type}
    if job.precision.startswith("amp-"):
        if device.type != "meta":
            raise InputError("trace(): build the model on the meta device for amp-* precision")
        from torch._subclasses.fake_tensor import FakeTensorMode

        with FakeTensorMode(allow_non_fake_inputs=True):
            wl = _fake_cpu(make_workload(job, "auto", modules), job)
            batch = wl.sample_batch(device="cpu")
            return trace_train_step(wl.train_step, batch, wl.modules, wl.optimizers,
                                    name=job.graph_key, meta={**meta, "trace_device": "fake-cpu"})
    wl = make_workload(job, "auto", modules)
    batch = wl.sample_batch(device=device)
    return trace_train_step(wl.train_step, batch, wl.modules, wl.optimizers, name=job.graph_key,
                            meta=meta)


def export_torch(job: JobSpec, device: str = "meta") -> OpGraph:
    """Trace the catalog workload of ``job`` (forward, backward, optimizer step) on ``device``."""

    meta = {**job_meta(job), "trace_device": device}
    if job.module is not None or job.hf is not None:
        return _export_source(job, device, meta)
    return _trace(job, device, meta)


def _trace(job: JobSpec, device: str, meta: dict[str, Any]) -> OpGraph:
    from gpuscope.graphs.frontends.torch import trace_train_step
    from gpuscope.workloads import build_workload

    if job.precision.startswith("amp-") and device == "meta":
        from torch._subclasses.fake_tensor import FakeTensorMode

        with FakeTensorMode(allow_non_fake_inputs=True):
            wl = _fake_cpu(build_workload(job, device="meta"), job)
            batch = wl.sample_batch(job.batch_size, device="cpu")
            meta["trace_device"] = "fake-cpu"
            return trace_train_step(wl.train_step, batch, wl.modules, wl.optimizers,
                                    name=job.graph_key, meta=meta)
    wl = build_workload(job, device=device)
    batch = wl.sample_batch(job.batch_size, device=device)
    return trace_train_step(wl.train_step, batch, wl.modules, wl.optimizers,
                            name=job.graph_key, meta=meta)


def _export_source(job: JobSpec, device: str, meta: dict[str, Any]) -> OpGraph:
    """Trace a ``module``/``hf`` job; a failure is bad input, named by the failing op."""
    from gpuscope.core.errors import InputError
    from gpuscope.graphs.frontends.torch import OpWatch
    from gpuscope.workloads import build_workload

    try:
        return _trace(job, device, meta)
    except InputError:
        raise
    except NotImplementedError as e:  # an op without a meta kernel: real arithmetic on CPU
        if device != "meta":
            raise InputError(f"{job.model}: {e}") from None
        warnings.warn(f"{job.graph_key}: meta-device trace failed ({e}); tracing on cpu",
                      RuntimeWarning, stacklevel=2)
        return _export_source(job, "cpu", {**meta, "trace_device": "cpu"})
    except Exception as e:  # noqa: BLE001 - user models fail in any way; find the op
        first_error = e
    watch = OpWatch()
    try:
        wl = build_workload(job, device=device)
        batch = wl.sample_batch(job.batch_size, device=device)
        with watch:
            wl.train_step(batch)
    except Exception:  # noqa: BLE001
        pass
    ds = job.dataset_spec
    shapes = "x".join(map(str, (job.batch_size, *ds.sample_shape)))
    where = f" at {watch.failed}" if watch.failed else ""
    msg = (str(first_error).strip().splitlines() or [type(first_error).__name__])[0]
    raise InputError(f"{job.model}: the training step failed{where} on input {shapes} "
                     f"({job.dataset}): {type(first_error).__name__}: {msg}") from None


def export_keras(job: JobSpec) -> OpGraph:
    """Training step of the Keras version of a catalog classifier (``keras_models``)."""
    from gpuscope.graphs.frontends.keras_models import keras_model
    from gpuscope.graphs.frontends.tensorflow import keras_train_step_graph

    ds = job.dataset_spec
    model = keras_model(job.model, job.dataset)
    return keras_train_step_graph(model, (ds.height, ds.width, ds.channels), ds.num_classes,
                                  job.batch_size, optimizer=job.optimizer, name=job.graph_key,
                                  meta={**job_meta(job), "framework": "tensorflow"})


def export_graph(job: JobSpec) -> OpGraph:
    """The computational graph of one training step of ``job`` (see the module docstring)."""
    if job.graph is not None:
        g = read_graph(job.graph)
        g.meta = {**g.meta, **job_meta(job)}
        return g
    if job.framework == "tensorflow":
        return export_keras(job)
    try:
        return export_torch(job, device="meta")
    except (NotImplementedError, RuntimeError) as e:
        # an op without a meta kernel: trace with real arithmetic on the CPU (slower, same ops)
        warnings.warn(f"{job.graph_key}: meta-device trace failed ({e}); tracing on cpu",
                      RuntimeWarning, stacklevel=2)
        return export_torch(job, device="cpu")


def catalog_summary(jobs: Iterable[JobSpec], progress: bool = True) -> pd.DataFrame:
    """One row per distinct graph: model, dataset, optimizer, batch_size, nodes, edges,
    param_count, gflops_per_step (known FLOPs of forward+backward+optimizer), export_s."""
    from gpuscope.core.progress import bar

    jobs = list({j.graph_key: j for j in jobs}.values())
    if any(j.graph is None and j.framework == "pytorch" for j in jobs):
        import gpuscope.graphs.frontends.torch  # noqa: F401  (import time is not export time)
        import gpuscope.workloads  # noqa: F401
    rows = []
    for job in bar(jobs, desc="export graphs", unit="graph", quiet=not progress):
        t0 = time.perf_counter()
        g = export_graph(job)
        dt = time.perf_counter() - t0
        rows.append({
            "model": job.model, "dataset": job.dataset, "optimizer": job.optimizer,
            "batch_size": job.batch_size, "nodes": g.num_nodes, "edges": g.num_edges,
            "param_count": int(g.meta.get("param_count", 0)),
            "gflops_per_step": g.total_flops() / 1e9, "export_s": dt,
        })
    return pd.DataFrame(rows, columns=["model", "dataset", "optimizer", "batch_size", "nodes",
                                       "edges", "param_count", "gflops_per_step", "export_s"])
