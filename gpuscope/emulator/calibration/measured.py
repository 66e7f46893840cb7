"""Measured training steps the emulator is checked against (graph level).

* ``h100_steps``: gpuscope's own H100 SXM measurement (``datasets/measured/h100-steps.csv``:
  75 jobs timed in one process, the batch already on the GPU), compared with the emulator's
  ``host_gpu_s(t_gpu, t_dispatch) + t_sync``;
* ``gpubench``: the torchvision CNN iterations of pytorch-gpu-benchmark
  (``../shared/data/pytorch-gpu-benchmark/train_iter_times.csv``, MIT, measured by J. Ryu and
  contributors on an RTX 2080 Ti, TITAN Xp, TITAN RTX and a DGX A100's A100-SXM4-40GB):
  ``zero_grad`` + forward (with the batch's copy to the GPU) + cross-entropy + backward, no
  optimizer step, batch 12, 224 x 224, ``cudnn.benchmark``; ``fp32`` (TF32 convolutions on the
  A100, CUDA 11.1) and ``fp16(pure)`` (``model.half()``: the FP32 trace priced as
  ``GraphCost.model_half`` under ``amp-fp16`` rules: half the traffic except batch norm's,
  which runs in PyTorch's own kernels, FP16 tensor cores where the GPU has them). The
  models are ``gpuscope.workloads.models.torchvision``'s; the emulated iteration is
  ``host_gpu_s(t_gpu, t_dispatch) + step_sync`` (the DataLoader's hand-off happens outside the timed
  region) on the benchmark's machines (PyTorch 1.x: legacy host era; the catalog's
  ``rtx2080ti``/``titan-xp``/``titan-rtx`` carry those hosts, the A100 the DGX A100's EPYC).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from gpuscope.cluster.devices import DeviceSpec, get_device
from gpuscope.emulator.hostwork import HOST_GPU_P_RANGE, host_gpu_p_start, host_gpu_s
from gpuscope.emulator.params import EmulatorParams
from gpuscope.emulator.perf import Estimate, GraphCost, estimate
from gpuscope.graphs import GraphCache
from gpuscope.jobs.spec import JobSpec

ROOT = Path(__file__).resolve().parents[3]
H100_STEPS: Path = ROOT / "datasets" / "measured" / "h100-steps.csv"
#: pytorch-gpu-benchmark's GPU names -> catalog devices.
GPUBENCH_DEVICES: dict[str, str] = {"A100 40GB SXM4 (DGX A100)": "a100", "RTX 2080 Ti 11GB": "rtx2080ti",
                                    "TITAN RTX 24GB": "titan-rtx", "TITAN Xp 12GB": "titan-xp"}
GPUBENCH_PRECISION: dict[str, str] = {"fp32": "fp32", "fp16(pure)": "amp-fp16"}


@dataclass(frozen=True)
class StepRow:
    """One measured step: the job, its graph cost, the device and the measured seconds."""

    job: JobSpec
    cost: GraphCost
    device: DeviceSpec
    measured_s: float


def gpubench_path() -> Path:
    from gpuscope.core.data import external_dir

    return external_dir() / "pytorch-gpu-benchmark" / "train_iter_times.csv"


def dgx_a100(dev: DeviceSpec) -> DeviceSpec:
    """The catalog A100 SXM4 40GB on the DGX A100 the benchmark ran on: 2 x AMD EPYC 7742
    at the 2.25 GHz its system_info recorded as the maximum (Zen 2: 2.25 x 1.10 / 4.4 of the
    reference core, no boost credited, as for the other three machines), PyTorch 1.7 (NGC
    20.10: the legacy host era)."""
    return replace(dev, host_cpu="2 x AMD EPYC 7742 (DGX A100)", host_cores=128,
                   host_threads=256, host_single_core=0.5625, host_cpu_quota=0.0,
                   host_era="legacy")


def gpubench_rows(cache: GraphCache, path: str | Path | None = None,
                  models: list[str] | None = None) -> tuple[pd.DataFrame, list[StepRow]]:
    """The single-GPU fp32 and fp16 rows (``model, gpu, device, precision, measured_ms``) and
    their ``StepRow``s (one traced graph per model, shared by both precisions and every GPU)."""
    from gpuscope.core.io import read_csv

    d = read_csv(path or gpubench_path(), "pytorch-gpu-benchmark table")
    d = d[(d["n_gpus"] == 1) & d["precision"].isin(list(GPUBENCH_PRECISION))]
    if models is not None:
        d = d[d["model"].isin(models)]
    d = d.assign(device=d["gpu"].map(GPUBENCH_DEVICES)).dropna(subset=["device"])
    devs = {n: get_device(n) for n in d["device"].unique()}
    devs = {n: (dgx_a100(s) if n == "a100" else s) for n, s in devs.items()}
    costs: dict[tuple[str, bool], GraphCost] = {}  # (model, model.half())
    rows = []
    for r in d.itertuples():
        prec = GPUBENCH_PRECISION[str(r.precision)]
        job = JobSpec(str(r.model), "imagenet", "none", int(r.batch_size), 1, precision=prec,
                      module=f"gpuscope.workloads.models.torchvision:{r.model}")
        m = str(r.model)
        if (m, False) not in costs:
            fp32 = replace(job, precision="fp32")
            c = GraphCost.from_graph(cache.get_or_export(fp32), job.batch_size)
            costs[(m, False)], costs[(m, True)] = c, c.model_half()
        cost = costs[(m, r.precision == "fp16(pure)")]
        rows.append(StepRow(job, cost, devs[str(r.device)], float(r.iter_ms_median) * 1e-3))
    return d.reset_index(drop=True), rows


def in_process_step_s(e: Estimate, device: DeviceSpec, params: EmulatorParams,
                      loader: bool = True) -> float:
    """The emulated step of a measurement timed in one process with the batch ready (no input
    pipeline): ``host_gpu_s(t_gpu, t_dispatch) + t_sync`` of estimate ``e`` on ``device``
    (without the DataLoader hand-off in ``t_sync`` when ``loader`` is False)."""
    p = params.for_era(device.host_era)
    sync = e.t_sync_s if loader else p.step_sync_ms * 1e-3 / device.host_single_core
    return host_gpu_s(e.t_gpu_s, e.t_dispatch_s, p) + sync


def step_seconds(row: StepRow, params: EmulatorParams, loader: bool = True) -> float:
    """``in_process_step_s`` of a measured row."""
    return in_process_step_s(estimate(row.job, row.cost, row.device, params), row.device,
                             params, loader)


def gpubench_table(df: pd.DataFrame, rows: list[StepRow], params: EmulatorParams) -> pd.DataFrame:
    """``df`` with ``emulated_ms`` and ``log_err`` (log emulated / measured)."""
    emu = np.array([step_seconds(r, params, loader=False) for r in rows]) * 1e3
    return df.assign(emulated_ms=emu, log_err=np.log(emu / df["iter_ms_median"].to_numpy()))


def h100_step_rows(cache: GraphCache) -> tuple[pd.DataFrame, list[StepRow]]:
    """The measured H100 steps that ran (``status`` ok) and their ``StepRow``s."""
    from gpuscope.jobs.spec import MODEL_FAMILY

    dev = get_device("h100")
    df = pd.read_csv(H100_STEPS)
    df = df[df["status"] == "ok"].reset_index(drop=True)
    df["family"] = df["model"].map(MODEL_FAMILY)
    rows = []
    for _, r in df.iterrows():
        job = JobSpec(r["model"], r["dataset"], r["optimizer"], int(r["batch_size"]), 1,
                      precision=r.get("precision", "fp32") or "fp32")
        rows.append(StepRow(job, GraphCost.from_graph(cache.get_or_export(job), job.batch_size),
                            dev, float(r["step_s"])))
    return df, rows


def step_log_errors(rows: list[StepRow], params: EmulatorParams) -> np.ndarray:
    """log(emulated / measured) in-process step of each row."""
    return np.array([np.log(step_seconds(r, params) / r.measured_s) for r in rows])


#: pytorch-gpu-benchmark models whose fp32 rows fit the legacy host era's dispatch costs
#: (the CNN families seed 001's and the H100's fits use); every other model and every fp16
#: row is held out.
GPUBENCH_FIT_PREFIXES: tuple[str, ...] = ("resnet", "vgg", "densenet")


def gpubench_fit_mask(df: pd.DataFrame) -> np.ndarray:
    """Rows of ``gpubench_rows``'s frame in the declared fit set (``GPUBENCH_FIT_PREFIXES``,
    fp32); ``resnext``/``wide_resnet`` are held out (their grouped/wide convolutions)."""
    m = df["model"].astype(str)
    fam = m.str.startswith(GPUBENCH_FIT_PREFIXES) & ~m.str.startswith("resnext")
    return (fam & (df["precision"] == "fp32")).to_numpy()


def fit_legacy_dispatch(rows: list[StepRow], params: EmulatorParams) -> EmulatorParams:
    """The legacy host era's ``cudnn_dispatch_us`` (its base value: the host cost of a cuDNN
    convolution or normalisation call) and its host/GPU overlap norm ``host_gpu_p``
    (``hostwork.host_gpu_s``) on measured in-process steps of legacy-era devices, robust least
    squares on the log ratio, the DataLoader hand-off left out (``step_seconds``).
    ``dispatch_us`` (every other op) is held: CNN steps, made of cuDNN calls, do not identify
    it (fitted together, it went to 4 us and made Gavel's A3C and LM, of few cuDNN calls,
    1.7x too fast)."""
    from scipy.optimize import least_squares

    def with_x(x: np.ndarray) -> EmulatorParams:
        return params.with_(cudnn_dispatch_us=float(np.exp(x[0])), host_gpu_p=float(np.exp(x[1])))

    def err(x: np.ndarray) -> np.ndarray:
        q = with_x(x)
        return np.array([np.log(step_seconds(r, q, loader=False) / r.measured_s) for r in rows])

    p_lo, p_hi = np.log(HOST_GPU_P_RANGE)
    # two starts of the norm: near the max (where its gradient vanishes when host and GPU
    # times are far apart in most rows) and near the sum; the better fit is kept
    fits = [least_squares(err, [np.log(params.cudnn_dispatch_us), np.log(p0)],
                          bounds=([np.log(1.0), p_lo], [np.log(1000.0), p_hi]),
                          loss="soft_l1", f_scale=0.1)
            for p0 in (host_gpu_p_start(params.host_gpu_p), 1.5)]
    return with_x(min(fits, key=lambda r: float(r.cost)).x)
