"""Fit the emulator's graph-level free parameters to measured throughputs.

The kernel speeds are the kernel model's, fitted on measured kernels
(``gpuscope.emulator.calibration.kernel_fit``); fitted here, each with few parameters so that
they cannot overfit:

* ``fit_step_sync``: the per-step host latency on short-step jobs of one device;
* ``fit_device``: a device's start-up time on a measured dataset's execution times
  (``datasets/measured/<device>/``);
* ``fit_multi_gpu``: the all-reduce ``overlap`` and ``link_eff`` on log(emulated / measured)
  g-GPU speed-ups (g * t_iter(1) / t_iter(g), Gavel's 1/2/4/8-GPU throughputs);
* ``published_errors``: NVIDIA's published ResNet-50 throughputs (held out: the 3.0 graph,
  NCHW with unfused batch norm, cannot reach the channels-last recipe's V100 AMP figure at any
  tensor-core efficiency, so the 2.x fit of it is kept, ``kernel_params.json`` provenance);
* ``fit_host_steps`` / ``fit_host_runs``: a host era's dispatch, sync and start-up costs;
  ``fit_ctx_switch``: the context switch of time-sliced worker processes.

Error metric everywhere: median |log(emulated / measured)| (target: <= 0.15).
Also: readers for Gavel's throughputs and the GPUScheduler authors' AlexNet table (the
project's tables in ``datasets/measured/``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from gpuscope.cluster.devices import DeviceSpec
from gpuscope.core.data import gavel_entries, gavel_throughputs, measured_table, parse_job_type
from gpuscope.core.errors import InputError
from gpuscope.emulator.calibration.measured import in_process_step_s
from gpuscope.emulator.hostwork import HOST_GPU_P_RANGE, host_gpu_p_start
from gpuscope.emulator.multigpu import speedup
from gpuscope.emulator.params import EmulatorParams
from gpuscope.emulator.perf import EmulatedJob, GraphCost, estimate, gpu_times
from gpuscope.jobs.spec import JobSpec


@dataclass(frozen=True)
class Point:
    """One measurement: a job (graph cost) on a device (with g GPUs), measured steps/s."""

    job: EmulatedJob
    cost: GraphCost
    device: DeviceSpec
    measured: float
    n_gpus: int = 1
    label: str = ""


def log_errors(points: list[Point], params: EmulatorParams, quantity: str = "throughput",
               base: dict[str, float] | None = None) -> np.ndarray:
    """log(emulated / measured) per point. ``throughput``: steps/s on one GPU; ``speedup``:
    g-GPU throughput over one-GPU throughput (``measured`` is then that ratio)."""
    out = []
    for p in points:
        e = estimate(p.job, p.cost, p.device, params)
        if quantity == "throughput":
            emu = 1.0 / e.iter_s
        else:
            emu = speedup(e.iter_s, p.cost.param_bytes, p.device, p.n_gpus, params)
        out.append(np.log(emu / p.measured))
    return np.asarray(out, dtype=np.float64)


def median_abs(err: np.ndarray) -> float:
    return float(np.median(np.abs(err))) if err.size else float("nan")


def fit_step_sync(points: list[Point], params: EmulatorParams,
                  name: str = "step_sync_ms") -> EmulatorParams:
    """The per-step serial host latency ``name`` (``step_sync_ms``, or the DataLoader workers'
    hand-off ``loader_handoff_ms``) minimising log throughput error (identifiable only on
    jobs with short steps, e.g. CIFAR ResNet-18)."""
    def with_x(x: np.ndarray) -> EmulatorParams:
        return params.with_(**{name: float(np.exp(x[0]))})

    x0 = max(float(getattr(params, name)), 1.0)
    res = least_squares(lambda x: log_errors(points, with_x(x)), [np.log(x0)],
                        bounds=(np.log(0.01), np.log(200.0)), loss="soft_l1", f_scale=0.1)
    return with_x(res.x)


def fit_multi_gpu(points: list[Point], params: EmulatorParams) -> EmulatorParams:
    """``overlap`` and ``link_eff`` minimising squared log speed-up error."""
    def with_x(x: np.ndarray) -> EmulatorParams:
        return params.with_(overlap=float(x[0]), link_eff=float(x[1]))

    res = least_squares(lambda x: log_errors(points, with_x(x), "speedup"),
                        [params.overlap, params.link_eff], bounds=([0.0, 0.02], [0.99, 1.0]),
                        loss="soft_l1", f_scale=0.1)
    return with_x(res.x)


def exec_time_errors(rows: list[tuple[JobSpec, GraphCost, DeviceSpec, float]],
                     params: EmulatorParams) -> np.ndarray:
    """log(emulated / measured) execution time of measured runs (job, cost, device, seconds)."""
    return np.asarray([np.log(estimate(j, c, d, params).exec_time_s / t) for j, c, d, t in rows])


def fit_device(rows: list[tuple[JobSpec, GraphCost, DeviceSpec, float]],
               params: EmulatorParams) -> EmulatorParams:
    """Per-device calibration on a measured dataset: the start-up time (its host era's when
    the era sets one), least squares on log execution time (the device's kernel speeds are
    the kernel model's; a GPU's own figures come from a kernel sweep,
    ``calibration.kernel_fit.fit_device``)."""
    era = rows[0][2].host_era
    in_era = "startup_s" in params.host_eras.get(era, {})  # the era's start-up, if it has one

    def with_x(x: np.ndarray) -> EmulatorParams:
        st = float(np.exp(x[0]))
        return _with_era(params, era, {"startup_s": st}) if in_era else params.with_(startup_s=st)

    x0 = [np.log(params.for_era(era).startup_s)]
    res = least_squares(lambda x: exec_time_errors(rows, with_x(x)), x0,
                        bounds=([np.log(0.5)], [np.log(300.0)]), loss="soft_l1", f_scale=0.1)
    return with_x(res.x)


def load_gavel(path: str | Path | None = None) -> pd.DataFrame:
    """Gavel's isolated throughputs: ``device, job_type, model, batch_size, n_gpus,
    steps_per_s`` (consolidated placements; zero = did not run, dropped), from a
    ``simulation_throughputs.json`` at ``path`` or the project's table (``core.data``)."""
    data = gavel_throughputs(path)
    rows = []
    for dev, job_type, n, val in gavel_entries(data):
        thr = float(val.get("null", 0.0))
        if thr <= 0:
            continue
        model, bs = parse_job_type(job_type)
        rows.append({"device": dev, "job_type": job_type, "model": model, "batch_size": bs,
                     "n_gpus": n, "steps_per_s": thr})
    return pd.DataFrame(rows)


def load_alexnet() -> pd.DataFrame:
    """AlexNet single-GPU execution times of the GPUScheduler authors' table
    (``datasets/measured/gpuscheduler-alexnet.csv``): ``device, epochs, batch_size, images,
    exec_time_s`` with catalog device names."""
    names = {"GTX 1080Ti": "gtx1080ti", "M60": "m60", "K80": "k80", "Quadro P600": "quadro-p600"}
    d = measured_table("gpuscheduler-alexnet")
    d = d[d["n_gpus"] == 1]
    return pd.DataFrame({
        "device": d["gpu_type"].map(names), "epochs": d["epochs"], "batch_size": d["batch_size"],
        "images": d["images"], "exec_time_s": d["exec_time_s"],
    }).reset_index(drop=True)


#: Published single-GPU ResNet-50 v1.5 throughputs (img/s), GPU-bound (DALI):
#: NVIDIA DeepLearningExamples PyTorch/Classification/ConvNets/resnet50v1.5/README.md (NGC
#: 21.03): DGX-1 V100 16GB AMP 1200; DGX A100 80GB TF32 938, AMP 2470; its inference tables
#: (batch 256): V100 FP32 1261 / AMP 3382, T4 FP32 415 / AMP 1198. Lambda, "NVIDIA H100
#: Tensor Core GPU - Deep Learning Performance Analysis": H100 SXM ~2x A100 SXM on vision.
PUBLISHED_R50: dict[str, float] = {
    "v100_amp": 1200.0, "a100_tf32": 938.0, "a100_amp": 2470.0, "v100_fwd_fp32": 1261.0,
    "v100_fwd_amp": 3382.0, "t4_fwd_fp32": 415.0, "t4_fwd_amp": 1198.0, "h100_over_a100": 2.0,
}


def _published_thr(cost: GraphCost, dev: DeviceSpec, prec: str, prm: EmulatorParams,
                   fwd: bool = False) -> float:
    """GPU-bound samples/s of ``cost`` (forward only with ``fwd``) as NVIDIA's published
    recipes run it: channels-last (NHWC: no layout transposes) and multi-tensor (apex)
    optimizers (no per-tensor optimizer loops)."""
    t, tf, _ = gpu_times(cost, dev, prm.with_(amp_layout_passes=0.0, per_tensor_optimizer=0.0), prec)
    return cost.batch_size / (tf if fwd else t)


def published_errors(cost: GraphCost, params: EmulatorParams) -> dict[str, float]:
    """log(emulated / published) of each figure of ``PUBLISHED_R50`` (ResNet-50 graph
    ``cost``; the H100 figure as H100/A100 AMP, the T4 ones as T4/V100 forward ratios)."""
    from gpuscope.cluster.devices import get_device

    pub = PUBLISHED_R50
    v100, h100, t4 = get_device("v100"), get_device("h100"), get_device("t4")
    a100 = replace(get_device("a100"), mem_gb=80.0, mem_bw_gbs=2039.0)  # DGX A100 80GB

    def thr(dev: DeviceSpec, prec: str, fwd: bool = False) -> float:
        return _published_thr(cost, dev, prec, params, fwd)

    return {
        "v100_amp": float(np.log(thr(v100, "amp-fp16") / pub["v100_amp"])),
        "a100_tf32": float(np.log(thr(a100, "tf32") / pub["a100_tf32"])),
        "a100_amp": float(np.log(thr(a100, "amp-fp16") / pub["a100_amp"])),
        "h100_over_a100": float(np.log(thr(h100, "amp-fp16") / thr(a100, "amp-fp16")
                                       / pub["h100_over_a100"])),
        "t4_over_v100_fp32": float(np.log(thr(t4, "fp32", True) / thr(v100, "fp32", True)
                                          / (pub["t4_fwd_fp32"] / pub["v100_fwd_fp32"]))),
        "t4_over_v100_amp": float(np.log(thr(t4, "amp-fp16", True) / thr(v100, "amp-fp16", True)
                                         / (pub["t4_fwd_amp"] / pub["v100_fwd_amp"]))),
    }


#: Host-side parameters fitted per host era (``EmulatorParams.host_eras``).
HOST_STEP_PARAMS: tuple[str, ...] = ("step_sync_ms", "dispatch_us", "cudnn_dispatch_us")
HOST_RUN_PARAMS: tuple[str, ...] = ("startup_s", "autotune_s_per_conv")


def _with_era(params: EmulatorParams, era: str, values: dict[str, float]) -> EmulatorParams:
    eras = {k: dict(v) for k, v in params.host_eras.items()}
    eras[era] = {**eras.get(era, {}), **values}
    return params.with_(host_eras=eras)


def host_step_errors(rows: list[tuple[EmulatedJob, GraphCost, DeviceSpec, float]],
                     params: EmulatorParams) -> np.ndarray:
    """log(emulated / measured) in-process step time of (job, cost, device, seconds) rows: the
    emulator's step without its input pipeline, ``host_gpu_s(t_gpu, t_dispatch) + t_sync``
    (the measurement has the batch on the GPU already)."""
    return np.array([np.log(in_process_step_s(estimate(j, c, d, params), d, params) / t)
                     for j, c, d, t in rows], dtype=np.float64)


def fit_host_steps(rows: list[tuple[EmulatedJob, GraphCost, DeviceSpec, float]],
                   params: EmulatorParams, era: str, starve: bool = True) -> EmulatorParams:
    """``HOST_STEP_PARAMS`` of host era ``era`` (all rows' devices must be of that era) on
    measured in-process step times, robust least squares on the log ratio; views are taken as
    free (``view_dispatch_us`` = 0: not identifiable on CNN graphs, < 3 % of their ops). With
    ``starve`` also the era's host/GPU overlap norm ``host_gpu_p`` (how the launch queue and
    the GPU starve each other is the era's framework's: PyTorch 1.x or 2.x)."""
    if any(d.host_era != era for _, _, d, _ in rows):
        raise InputError(f"fit_host_steps: every device must be of host era {era!r}")
    base = _with_era(params, era, {"view_dispatch_us": 0.0})
    cur = base.for_era(era)
    n = len(HOST_STEP_PARAMS)

    def with_x(x: np.ndarray) -> EmulatorParams:
        names = HOST_STEP_PARAMS + (("host_gpu_p",) if starve else ())
        return _with_era(base, era, dict(zip(names, map(float, np.exp(x)))))

    x0 = np.log([max(1e-3, getattr(cur, k)) for k in HOST_STEP_PARAMS]
                + ([host_gpu_p_start(cur.host_gpu_p)] if starve else []))
    lo, hi = [np.log(1e-3)] * n, [np.log(1e3)] * n
    if starve:
        lo, hi = lo + [np.log(HOST_GPU_P_RANGE[0])], hi + [np.log(HOST_GPU_P_RANGE[1])]
    res = least_squares(lambda x: host_step_errors(rows, with_x(x)), x0,
                        bounds=(lo, hi), loss="soft_l1", f_scale=0.1)
    return with_x(res.x)


def fit_host_runs(rows: list[tuple[JobSpec, GraphCost, DeviceSpec, float]],
                  params: EmulatorParams, era: str, names: tuple[str, ...] = HOST_RUN_PARAMS,
                  pipeline: tuple[str, ...] = ()) -> EmulatorParams:
    """``names`` of host era ``era`` (default start-up and cuDNN autotuning per convolution
    configuration) and the input-pipeline cost per sample of the datasets ``pipeline``
    (``cpu_ms_per_sample``, not era-specific: it is the measured job's own pipeline) on
    measured execution times of whole runs, robust least squares on the log ratio."""
    if any(d.host_era != era for _, _, d, _ in rows):
        raise InputError(f"fit_host_runs: every device must be of host era {era!r}")
    cur = params.for_era(era)

    def with_x(x: np.ndarray) -> EmulatorParams:
        v = list(map(float, np.exp(x)))
        q = _with_era(params, era, dict(zip(names, v[:len(names)])))
        return q.with_(cpu_ms_per_sample={**q.cpu_ms_per_sample, **dict(zip(pipeline, v[len(names):]))})

    x0 = np.log([max(1e-3, getattr(cur, k)) for k in names]
                + [max(1e-3, params.cpu_ms_per_sample.get(k, params.cpu_ms_default)) for k in pipeline])
    res = least_squares(lambda x: exec_time_errors(rows, with_x(x)), x0,
                        bounds=(np.log(1e-3), np.log(300.0)), loss="soft_l1", f_scale=0.1)
    return with_x(res.x)


def colocation_errors(points: list[Point], params: EmulatorParams) -> np.ndarray:
    """log(emulated / measured) colocation slowdown per point (``fidelity.colocation_points``):
    the steps/s of one of the pair's processes over the job's steps/s alone, emulated with
    the point's ``workers`` and with one process fewer per copy (the job alone)."""
    out = []
    for p in points:
        alone = replace(p.cost, workers=max(1, p.cost.workers // 2))
        emu = estimate(p.job, alone, p.device, params).iter_s / estimate(p.job, p.cost, p.device, params).iter_s
        out.append(np.log(emu / p.measured))
    return np.asarray(out, dtype=np.float64)


def fit_ctx_switch(points: list[Point], params: EmulatorParams) -> EmulatorParams:
    """``ctx_switch_us`` minimising the log colocation-slowdown error of ``points`` (robust, as
    the other fits: Gavel's pairs have outliers)."""
    def with_x(x: np.ndarray) -> EmulatorParams:
        return params.with_(ctx_switch_us=float(np.exp(x[0])))

    x0 = np.log(max(params.ctx_switch_us, 5.0))
    res = least_squares(lambda x: colocation_errors(points, with_x(x)), [x0],
                        bounds=(np.log(0.01), np.log(500.0)), loss="soft_l1", f_scale=0.1)
    return with_x(res.x)
