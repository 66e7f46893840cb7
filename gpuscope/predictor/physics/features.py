"""Physics-informed inputs: the emulator's analytic estimate plus graph totals.

The v2 predictor does not learn a job's cost from scratch: it reads what the analytic device
model (``gpuscope.emulator.estimate``: a roofline per op, host dispatch and input pipeline,
memory footprint) says for the (job, device), together with graph features that carry the
work, and learns the *correction* to it.

Feature groups (one row per (job, device); names in :data:`FEATURES`):

* ``graph``: device-independent totals of the training-step OpGraph — log10 FLOPs, bytes,
  parameter and activation bytes, op and kernel counts; the op-class histogram (share of
  FLOPs and of ops per ``OP_CLASSES`` class); share of half-precision ops; log2 batch size;
* ``analytic``: the emulator's estimate on the device — log10 step time, GPU-busy,
  memory-busy, dispatch and input-pipeline time, utilisations, memory (MB and share of
  capacity), fits, bottleneck one-hot, log10 start-up and per-epoch overhead;
* ``device``: the spec vector of ``multidevice.device_vector`` (peaks, memory, bandwidth...);
* ``context``: optimizer, precision and dataset-kind one-hots (fixed lists stored in the
  checkpoint: a value never trained on is flagged by the domain guard);
* ``runlen``: log10 epochs, total steps, analytic epoch time and analytic execution time —
  used only by targets that scale with the run's length (burst/idle durations), never by the
  per-step time model, so a model trained on 100-step campaigns composes full-epoch execution
  times (``compose_exec``);
* ``labels``: the analytic label of every target but execution time
  (``gpuscope.predictor.physics.analytic``: the label rules applied in closed form to the
  run's phase structure as the emulator's trace lays it out), in label space; not read by
  the per-step model either. ``an_<target>`` keeps each in label units: the base that
  ``hybrid`` corrects.

Execution time is composed as the emulator does (docs/emulator.md)::

    exec = overhead + total_steps × t_step,   t_step = t_step_analytic × exp(ĉ)

where ``overhead = exec_analytic − total_steps × t_step_analytic`` (start-up, per-epoch
evaluation and checkpoint, stalls) and ĉ is the learned log-correction of the per-step time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gpuscope.jobs.spec import JobSpec
from gpuscope.predictor.physics.analytic import LABEL_TARGETS, analytic_labels

#: Op classes of the histogram (``gpuscope.graphs.opgraph.OP_CLASSES``, frozen here so a
#: checkpoint's feature order never moves when the graph stage adds a class).
HIST_CLASSES: tuple[str, ...] = (
    "conv", "matmul", "norm", "pool", "activation", "elementwise", "reduction", "loss",
    "optimizer", "data_movement", "constant", "random", "control", "other",
)
OPTIMIZER_NAMES: tuple[str, ...] = ("sgd", "momentum", "adam", "adamw", "rmsprop", "adagrad",
                                    "none")
PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "amp-fp16", "amp-bf16")
DATASET_KINDS: tuple[str, ...] = ("image", "tokens", "sequence", "tabular", "frames")
BOTTLENECKS: tuple[str, ...] = ("gpu", "dispatch", "input")

GRAPH_FEATURES: tuple[str, ...] = (
    "g_log_flops", "g_log_bytes", "g_log_param_bytes", "g_log_act_bytes", "g_log_nodes",
    "g_log_kernels", "g_half_share", "g_log2_batch",
    *(f"g_flops_{c}" for c in HIST_CLASSES), *(f"g_ops_{c}" for c in HIST_CLASSES),
)
ANALYTIC_FEATURES: tuple[str, ...] = (
    "a_log_iter", "a_log_gpu", "a_log_mem_busy", "a_log_dispatch", "a_log_pipeline",
    "a_gpu_util", "a_gpu_mem_util", "a_cpu_util", "a_log_mem_mb", "a_mem_share", "a_fits",
    *(f"a_bneck_{b}" for b in BOTTLENECKS), "a_log_startup", "a_log_epoch_ovh", "a_log_eval",
    "a_log_ckpt",
)
DEVICE_FEATURES: tuple[str, ...] = ("d_log_fp32", "d_log_best", "d_log_mem_gb", "d_log_bw",
                                    "d_sms", "d_log_pcie", "d_host_core", "d_log2_cores")
CONTEXT_FEATURES: tuple[str, ...] = (
    *(f"c_opt_{o}" for o in OPTIMIZER_NAMES), *(f"c_prec_{p}" for p in PRECISIONS),
    *(f"c_kind_{k}" for k in DATASET_KINDS),
)
RUNLEN_FEATURES: tuple[str, ...] = ("r_log_epochs", "r_log_total_steps", "r_log_epoch_s",
                                    "r_log_exec_analytic")
#: The analytic labels (``analytic_labels``) in their label space (``hybrid.target_space``:
#: percentages / 100, memory peak / capacity, durations log1p); 0 for a run that does not fit.
LABEL_FEATURES: tuple[str, ...] = tuple(f"l_{t}" for t in LABEL_TARGETS)
#: All features, in checkpoint order (a checkpoint of an earlier gpuscope holds a prefix).
FEATURES: tuple[str, ...] = (GRAPH_FEATURES + ANALYTIC_FEATURES + DEVICE_FEATURES
                             + CONTEXT_FEATURES + RUNLEN_FEATURES + LABEL_FEATURES)
#: Features of the per-step models (no run length: see the module docstring).
STEP_FEATURES: tuple[str, ...] = tuple(f for f in FEATURES if f not in RUNLEN_FEATURES
                                       and f not in LABEL_FEATURES)
#: Analytic columns kept beside the features (not model inputs; used to compose outputs):
#: ``an_<target>`` is the analytic label of every target but execution time, in its units.
#: New rows asked for in one ``FeatureBuilder.frame`` call from which its ``workers`` are used
#: (below, starting processes costs about what they save at ~3.5 ms a row).
PARALLEL_MIN_ROWS: int = 256
ANALYTIC_COLUMNS: tuple[str, ...] = ("an_iter_s", "an_exec_s", "an_overhead_s", "an_mem_mb",
                                     "an_capacity_mb", "an_fits", "an_gpu_util",
                                     "an_gpu_mem_util", "an_cpu_util",
                                     *(f"an_{t}" for t in LABEL_TARGETS))


def _log10(v: float, floor: float = 1e-9) -> float:
    return math.log10(max(float(v), floor))


def graph_summary(graph: Any) -> dict[str, float]:
    """Device-independent totals of one OpGraph (``GRAPH_FEATURES`` minus the batch size).

    Kernels are ops outside the ``constant``/``control``/``data_movement`` classes; FLOPs and
    bytes are summed where the frontend knows them (bytes default to 2 × output bytes, as the
    emulator assumes)."""
    from gpuscope.emulator.memory import activation_bytes, param_bytes

    flops = {c: 0.0 for c in HIST_CLASSES}
    ops = {c: 0 for c in HIST_CLASSES}
    tot_bytes, kernels, half = 0.0, 0, 0
    for n in graph.nodes:
        c = n.op_class if n.op_class in flops else "other"
        ops[c] += 1
        flops[c] += float(n.flops or 0.0)
        if c not in ("constant", "control", "data_movement"):
            kernels += 1
            tot_bytes += float(n.bytes_accessed if n.bytes_accessed is not None
                               else 2.0 * n.numel * n.dtype_bytes)
            half += int(n.dtype_bytes <= 2)
    total_flops = sum(flops.values())
    n_nodes = max(1, len(graph.nodes))
    out: dict[str, float] = {
        "g_log_flops": _log10(total_flops, 1.0), "g_log_bytes": _log10(tot_bytes, 1.0),
        "g_log_param_bytes": _log10(param_bytes(graph), 1.0),
        "g_log_act_bytes": _log10(activation_bytes(graph), 1.0),
        "g_log_nodes": _log10(n_nodes, 1.0), "g_log_kernels": _log10(kernels, 1.0),
        "g_half_share": half / max(1, kernels),
    }
    for c in HIST_CLASSES:
        out[f"g_flops_{c}"] = flops[c] / total_flops if total_flops > 0 else 0.0
        out[f"g_ops_{c}"] = ops[c] / n_nodes
    return out


def device_features(device: Any) -> dict[str, float]:
    best = max(device.fp32_tflops, device.tensor_tflops, device.tf32_tflops)
    return {"d_log_fp32": _log10(device.fp32_tflops), "d_log_best": _log10(best),
            "d_log_mem_gb": _log10(device.mem_gb), "d_log_bw": _log10(device.mem_bw_gbs),
            "d_sms": device.sm_count / 100.0, "d_log_pcie": _log10(device.pcie_gbs),
            "d_host_core": float(device.host_single_core),
            "d_log2_cores": math.log2(max(device.host_pipeline_cores, 1e-3))}


def label_features(est: Any, job: JobSpec, device: Any) -> dict[str, float]:
    """``an_<target>`` (label units) and ``l_<target>`` (label space) of the analytic labels
    of the run as the emulator's traces sample it: its sample period, expected
    stalls and sensor noise."""
    from gpuscope.emulator.params import default_params
    from gpuscope.emulator.traces import PERIOD_S, effective_period

    p = default_params()
    lab = analytic_labels(est, job, device,
                          effective_period(est, PERIOD_S, int(p.max_trace_samples)),
                          p.stall_rate_per_min, p.stall_s, sensor_noise=True)
    out: dict[str, float] = {}
    for t, v in lab.items():
        out[f"an_{t}"] = v
        if not math.isfinite(v):
            z = 0.0
        elif t.endswith("_peak"):
            z = v / (float(device.mem_mb) if t == "gpu_mem_peak" else 100.0)
        else:
            z = math.log1p(max(v, 0.0))
        out[f"l_{t}"] = z
    return out


def analytic_features(est: Any, job: JobSpec) -> dict[str, float]:
    """Features and composition columns of one emulator ``Estimate``."""
    steps = float(job.total_steps)
    ovh = max(0.0, float(est.exec_time_s) - steps * float(est.iter_s)) if est.status == "ok" \
        else float(est.startup_s) + job.epochs * (float(est.eval_s) + float(est.ckpt_s))
    cap = float(est.memory.capacity_mb)
    out = {
        "a_log_iter": _log10(est.iter_s), "a_log_gpu": _log10(est.t_gpu_s),
        "a_log_mem_busy": _log10(est.t_mem_s), "a_log_dispatch": _log10(est.t_dispatch_s),
        "a_log_pipeline": _log10(est.t_pipeline_s), "a_gpu_util": float(est.gpu_util),
        "a_gpu_mem_util": float(est.gpu_mem_util), "a_cpu_util": float(est.cpu_util),
        "a_log_mem_mb": _log10(est.mem_mb, 1.0), "a_mem_share": float(est.mem_mb) / cap,
        "a_fits": float(est.memory.fits), "a_log_startup": _log10(est.startup_s),
        "a_log_epoch_ovh": _log10(float(est.eval_s) + float(est.ckpt_s)),
        "a_log_eval": _log10(est.eval_s), "a_log_ckpt": _log10(est.ckpt_s),
        # the run's phase structure (what burst/idle durations are made of)
        "r_log_epoch_s": _log10(job.steps * float(est.iter_s)),
        "r_log_exec_analytic": _log10(ovh + steps * float(est.iter_s)),
    }
    for b in BOTTLENECKS:
        out[f"a_bneck_{b}"] = float(est.bottleneck == b)
    out.update({"an_iter_s": float(est.iter_s), "an_overhead_s": ovh,
                "an_exec_s": ovh + steps * float(est.iter_s), "an_mem_mb": float(est.mem_mb),
                "an_capacity_mb": cap, "an_fits": float(est.memory.fits),
                "an_gpu_util": float(est.gpu_util), "an_gpu_mem_util": float(est.gpu_mem_util),
                "an_cpu_util": float(est.cpu_util)})
    return out


def context_features(job: JobSpec) -> dict[str, float]:
    opt = str(job.optimizer)
    prec = str(getattr(job, "precision", "fp32"))
    kind = str(getattr(job.dataset_spec, "kind", "image"))
    out = {f"c_opt_{o}": float(opt == o) for o in OPTIMIZER_NAMES}
    out.update({f"c_prec_{p}": float(prec == p) for p in PRECISIONS})
    out.update({f"c_kind_{k}": float(kind == k) for k in DATASET_KINDS})
    return out


def runlen_features(job: JobSpec) -> dict[str, float]:
    """The job's own run length (the analytic ones come with ``analytic_features``)."""
    return {"r_log_epochs": _log10(job.epochs), "r_log_total_steps": _log10(job.total_steps)}


GraphSource = Callable[[JobSpec], Any]


@dataclass
class FeatureBuilder:
    """Feature rows of (job, device) pairs; graph summaries and emulator costs cached by
    ``graph_key`` (plus precision), estimates by (graph, device, epochs, steps).

    Args:
        source: job → OpGraph (default ``GraphCache().get_or_export``).
        cache_dir: the GraphCache directory when ``source`` is not given.
        workers: processes for the analytic labels of new rows (``label_features``, ~3.5 ms
            a row: most of a first ``predict`` of a large queue): 1 = in this process (the
            default), 0 = one per core, N = N (``gpuscope predict --workers``). Used from
            ``PARALLEL_MIN_ROWS`` new rows in one ``frame`` call; same values either way (a
            pure function per row).
    """

    source: GraphSource | None = None
    cache_dir: str | Path | None = None
    workers: int = 1

    def __post_init__(self) -> None:
        self._graphs: dict[str, tuple[dict[str, float], Any]] = {}
        self._rows: dict[tuple, dict[str, float]] = {}
        self._devices: dict[str, Any] = {}

    def _device(self, name: str) -> Any:
        if name not in self._devices:
            from gpuscope.cluster.devices import get_device

            self._devices[name] = get_device(name)
        return self._devices[name]

    @staticmethod
    def graph_id(job: JobSpec) -> str:
        return f"{job.graph_key}|{getattr(job, 'precision', 'fp32')}"

    def graph_entry(self, job: JobSpec) -> tuple[dict[str, float], Any]:
        """(graph summary, emulator GraphCost) of the job's training-step graph."""
        gid = self.graph_id(job)
        if gid not in self._graphs:
            from gpuscope.emulator import GraphCost

            src = self.source
            if src is None:
                from gpuscope.graphs import GraphCache

                src = GraphCache(self.cache_dir).get_or_export
                self.source = src
            g = src(job)
            self._graphs[gid] = (graph_summary(g), GraphCost.from_graph(g, job.batch_size))
        return self._graphs[gid]

    @staticmethod
    def _key(job: JobSpec, device: str) -> tuple:
        return (FeatureBuilder.graph_id(job), device, job.epochs, job.steps)

    def _partial_row(self, job: JobSpec, device: str
                     ) -> tuple[dict[str, float], dict[str, float], Any, Any]:
        """(the columns before the analytic labels, those after, the estimate, the device)."""
        from gpuscope.emulator import estimate

        summ, cost = self.graph_entry(job)
        dev = self._device(device)
        est = estimate(job, cost, dev)
        head = dict(summ)
        head["g_log2_batch"] = math.log2(job.batch_size)
        head.update(analytic_features(est, job))
        tail = device_features(dev)
        tail.update(context_features(job))
        tail.update(runlen_features(job))
        return head, tail, est, dev

    def row(self, job: JobSpec, device: str) -> dict[str, float]:
        """All features and analytic columns of ``job`` on catalog device ``device``."""
        key = self._key(job, device)
        if key not in self._rows:
            head, tail, est, dev = self._partial_row(job, device)
            self._rows[key] = {**head, **label_features(est, job, dev), **tail}
        return self._rows[key]

    def _label_workers(self, n_new: int) -> int:
        if self.workers == 1 or n_new < PARALLEL_MIN_ROWS:
            return 1
        if self.workers > 1:
            return int(self.workers)
        import os

        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else (os.cpu_count() or 1)

    def _fill_parallel(self, pairs: list[tuple[JobSpec, str]], workers: int,
                       progress: bool) -> None:
        """The rows of ``pairs`` not cached yet, their analytic labels in ``workers``
        processes. Forked where the platform can (the workers run NumPy/SciPy only; a spawned
        worker would re-run an unguarded ``__main__`` script), else spawned."""
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        from tqdm.auto import tqdm

        todo: dict[tuple, tuple[dict[str, float], dict[str, float], Any, JobSpec, Any]] = {}
        for j, d in tqdm(pairs, desc="graphs+estimates", unit="row", delay=2.0,
                         disable=None if progress else True):
            key = self._key(j, d)
            if key not in self._rows and key not in todo:
                head, tail, est, dev = self._partial_row(j, d)
                todo[key] = (head, tail, est, j, dev)
        if not todo:
            return
        args = [(est, j, dev) for _, _, est, j, dev in todo.values()]
        chunk = max(1, min(64, len(args) // (4 * workers)))
        ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
        with ProcessPoolExecutor(workers, mp_context=ctx) as ex:
            labs = list(tqdm(ex.map(_label_features_args, args, chunksize=chunk),
                             total=len(args), desc=f"analytic labels ({workers} processes)",
                             unit="row", delay=2.0, disable=None if progress else True))
        for (key, (head, tail, *_)), lab in zip(todo.items(), labs, strict=True):
            self._rows[key] = {**head, **lab, **tail}

    def frame(self, jobs: Sequence[JobSpec], devices: Sequence[str],
              progress: bool = True) -> pd.DataFrame:
        """One row per (jobs[i], devices[i]): ``FEATURES`` + ``ANALYTIC_COLUMNS``.

        ``progress``: a bar on stderr (a terminal only) once the rows take over 2 s — a cold
        graph cache exports each job's graph here, minutes for a queue. Many new
        rows at once get their analytic labels in worker processes (``workers``)."""
        from tqdm.auto import tqdm

        pairs = list(zip(jobs, devices, strict=True))
        if self.workers != 1:  # count the new rows only when they may go to workers
            workers = self._label_workers(len({self._key(j, d) for j, d in pairs}
                                              - self._rows.keys()))
            if workers > 1:
                self._fill_parallel(pairs, workers, progress)
        rows = [self.row(j, d) for j, d in tqdm(pairs, desc="graphs+features", unit="row",
                                                delay=2.0, disable=None if progress else True)]
        cols = list(FEATURES) + list(ANALYTIC_COLUMNS)
        return pd.DataFrame(rows, columns=cols)


def _label_features_args(args: tuple[Any, JobSpec, Any]) -> dict[str, float]:
    """``label_features(*args)``, for worker processes (a module-level function pickles)."""
    return label_features(*args)


def compose_exec(frame: pd.DataFrame, total_steps: np.ndarray,
                 log_corr: np.ndarray | None = None) -> np.ndarray:
    """Execution time = analytic overhead + total steps × analytic step time × exp(ĉ)."""
    corr = np.zeros(len(frame)) if log_corr is None else np.asarray(log_corr, np.float64)
    return (frame["an_overhead_s"].to_numpy(np.float64)
            + np.asarray(total_steps, np.float64) * frame["an_iter_s"].to_numpy(np.float64)
            * np.exp(corr))


def step_correction(frame: pd.DataFrame, total_steps: np.ndarray,
                    exec_time: np.ndarray) -> np.ndarray:
    """The per-step log-correction a measured execution time implies (training label):
    ``log(((exec − overhead) / total_steps) / t_step_analytic)``; the implied step time is
    floored at 5 % of the analytic one (a run dominated by noise in its overhead)."""
    it = frame["an_iter_s"].to_numpy(np.float64)
    implied = (np.asarray(exec_time, np.float64) - frame["an_overhead_s"].to_numpy(np.float64)
               ) / np.asarray(total_steps, np.float64)
    return np.log(np.maximum(implied, 0.05 * it) / it)
