"""The emulator and the predictor against a real GPU (measured on an H100 SXM5 80GB).

Two measured sources, both committed (``benchmarks/gpu_session.sh`` made them):

* ``datasets/measured/h100-steps.csv``: 75 jobs timed in one process (batch already on the
  GPU; ``gpuscope profile steps``). Compared with the emulator's GPU-side step time
  ``host_gpu_s(t_gpu, t_dispatch) + t_sync`` (its input-pipeline term is left out, as the measurement
  has no pipeline) and its memory footprint against the caching allocator's peak reserve.
* ``datasets/measured/h100/``: 23 real profiler runs (own process, CPU input pipeline, NVML
  at 6 Hz). Compared with the emulator's execution time, and with the bundled ``h100``
  predictor checkpoint (which was trained on emulated data only).

The ``h100`` is a ``modern`` host-era device; that era's host costs are FITTED here, on a
declared subset only (``FIT_FAMILIES``: the CNN families of seed 001's Tables 3/4): per-step
sync, per-kernel and per-cuDNN-kernel dispatch on the step times, start-up and cuDNN
autotuning on the runs; every other family is held out and reported apart.
Memory is compared without the CUDA context (the allocator's reserve does not count it).
The runs are emulated on the measured host (16-core VM, 4 DataLoader workers: the runner's
``min(4, cores)``), not the catalog's AWS p5 share.

Prints one line per family (fit or held out), the precision speed-ups, the runs, and the
summary line; ``--fit`` refits the modern era and writes it to ``calibration.json``;
``--write`` writes ``results/tables/h100_check.csv`` and ``results/figures/h100_emulated_vs_measured.png``.

    python benchmarks/emulator_vs_gpu.py [--fit] [--write]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dataclasses import replace  # noqa: E402

from gpuscope.cluster.devices import DeviceSpec, get_device  # noqa: E402
from gpuscope.emulator import default_params, estimate  # noqa: E402
from gpuscope.emulator.calibration.fit import HOST_RUN_PARAMS, fit_host_runs, fit_host_steps  # noqa: E402
from gpuscope.emulator.calibration.measured import h100_step_rows, in_process_step_s  # noqa: E402
from gpuscope.emulator.params import CALIBRATION_FILE, EmulatorParams  # noqa: E402
from gpuscope.emulator.perf import GraphCost  # noqa: E402
from gpuscope.graphs import GraphCache  # noqa: E402
from gpuscope.jobs.spec import MODEL_FAMILY, JobSpec  # noqa: E402

RUNS = ROOT / "datasets/measured/h100"
#: The families the modern host era is fitted on (seed 001's CNNs); all others are held out.
FIT_FAMILIES: frozenset[str] = frozenset({"resnet", "vgg", "densenet", "inception", "lenet", "alexnet"})
MODERN_PROV = "; host_eras.modern fitted by benchmarks/emulator_vs_gpu.py --fit on the measured H100 step times and runs of the CNN families "


def measured_host(dev: DeviceSpec) -> DeviceSpec:
    """The catalog H100 on the host the runs were measured on (datasets/measured/h100-env.md:
    16-core Intel Xeon VM) with the runner's 4 DataLoader workers as its pipeline cores."""
    return replace(dev, host_cpu="Intel Xeon (16-core VM)", host_cores=16, host_threads=16,
                   host_cpu_quota=4.0)


def run_params(p: EmulatorParams, imagenet_ms: float | None = None) -> EmulatorParams:
    """The runner evaluates nothing (gpuscope.workloads.run): no evaluation pass; its ImageNet
    pipeline costs ``imagenet_ms`` per sample (fitted, ``fit_modern``)."""
    cpu = p.cpu_ms_per_sample if imagenet_ms is None else {**p.cpu_ms_per_sample, "imagenet": imagenet_ms}
    return p.with_(eval_fraction=0.0, cpu_ms_per_sample=cpu)


def _job(r: pd.Series, epochs: int = 1, spe: int | None = None) -> JobSpec:
    return JobSpec(r["model"], r["dataset"], r["optimizer"], int(r["batch_size"]), epochs,
                   steps_per_epoch=spe, precision=r.get("precision", "fp32") or "fp32")


def step_rows(cache: GraphCache) -> tuple[pd.DataFrame, list[tuple[JobSpec, GraphCost, DeviceSpec, float]]]:
    """The measured steps (``calibration.measured.h100_step_rows``) with the fit split."""
    df, rows = h100_step_rows(cache)
    df["fit"] = df["family"].isin(FIT_FAMILIES)
    return df, [(r.job, r.cost, r.device, r.measured_s) for r in rows]


def step_table(df: pd.DataFrame, rows: list, p: EmulatorParams) -> pd.DataFrame:
    df = df.copy()
    emu_step, emu_mem = [], []
    for job, cost, dev, _ in rows:
        e = estimate(job, cost, dev, p)
        emu_step.append(in_process_step_s(e, dev, p))
        emu_mem.append(e.mem_mb - e.memory.context_mb)  # the allocator does not see the context
    df["emu_step_s"] = emu_step
    df["emu_mem_mb"] = emu_mem
    df["log_step"] = np.log(df["emu_step_s"] / df["step_s"])
    df["log_mem"] = np.log(df["emu_mem_mb"] / df["mem_reserved_mb"])
    return df


def run_rows(cache: GraphCache) -> tuple[pd.DataFrame, list[tuple[JobSpec, GraphCost, DeviceSpec, float]]]:
    dev = measured_host(get_device("h100"))
    lab = pd.read_parquet(RUNS / "labels.parquet")
    lab = lab[lab["status"] == "ok"].reset_index(drop=True)
    lab["family"] = lab["model"].map(MODEL_FAMILY)
    lab["fit"] = lab["family"].isin(FIT_FAMILIES)
    rows = []
    for _, r in lab.iterrows():
        j = _job(r, int(r["epochs"]), int(r["steps_per_epoch"]))
        rows.append((j, GraphCost.from_graph(cache.get_or_export(j), j.batch_size), dev,
                     float(r["exec_time_s"])))
    return lab, rows


def run_table(lab: pd.DataFrame, rows: list, p: EmulatorParams) -> pd.DataFrame:
    from gpuscope.predictor import load_predictor

    lab = lab.copy()
    lab["emu_exec_s"] = [estimate(j, c, d, p).exec_time_s for j, c, d, _ in rows]
    pred = load_predictor(ROOT / "datasets/checkpoints/h100.pt").predict([r[0] for r in rows])
    lab["pred_exec_s"] = pred["exec_time_s"].to_numpy()
    return lab


def fit_modern(srows: list, sfit: np.ndarray, rrows: list, rfit: np.ndarray,
               p: EmulatorParams, refit: bool) -> tuple[EmulatorParams, float]:
    """On the FIT_FAMILIES rows only: with ``refit`` the modern era's host costs (steps, then
    runs); always the runner's ImageNet pipeline cost per sample (reference-core ms), which
    is the measured runs' own synthetic decode (gpuscope.workloads.data), not the era's."""
    if refit:
        p = fit_host_steps([r for r, f in zip(srows, sfit) if f], p, "modern")
    fit_runs = [r for r, f in zip(rrows, rfit) if f]
    q = fit_host_runs(fit_runs, run_params(p), "modern", names=HOST_RUN_PARAMS if refit else (),
                      pipeline=("imagenet",))
    return p.with_(host_eras=q.host_eras), q.cpu_ms_per_sample["imagenet"]


def _split(name: str, err: pd.Series, fit: pd.Series) -> str:
    f, h = err[fit], err[~fit]
    return (f"{name}: fit families {float(np.median(np.abs(f))):.3f} (n={len(f)}), held out "
            f"{float(np.median(np.abs(h))):.3f} (n={len(h)})")


def _plot(steps: pd.DataFrame, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(11, 4.6))
    for prec, m in (("fp32", "o"), ("tf32", "s"), ("amp-bf16", "^"), ("amp-fp16", "v")):
        s = steps[steps["precision"] == prec]
        ax[0].scatter(s["step_s"] * 1e3, s["emu_step_s"] * 1e3, marker=m, label=prec, alpha=0.7)
        ax[1].scatter(s["mem_reserved_mb"], s["emu_mem_mb"], marker=m, label=prec, alpha=0.7)
    for a, name in ((ax[0], "step time (ms)"), (ax[1], "GPU memory (MB)")):
        a.set_xscale("log")
        a.set_yscale("log")
        lo, hi = a.get_xlim()
        a.plot([lo, hi], [lo, hi], "k--", lw=0.8)
        a.set_xlabel(f"measured {name}")
        a.set_ylabel(f"emulated {name}")
        a.legend(fontsize=8)
    ax[0].set_title("H100 SXM5, 75 jobs: emulated vs measured step")
    ax[1].set_title("memory: emulator vs allocator peak reserve")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", action="store_true", help="write the table and the figure")
    ap.add_argument("--fit", action="store_true",
                    help="refit the modern host era on FIT_FAMILIES and write calibration.json")
    a = ap.parse_args()
    cache = GraphCache(None)
    p = default_params()
    sdf, srows = step_rows(cache)
    ldf, rrows = run_rows(cache)
    p, imagenet_ms = fit_modern(srows, sdf["fit"].to_numpy(), rrows, ldf["fit"].to_numpy(), p, a.fit)
    if a.fit:
        prov = json.loads(CALIBRATION_FILE.read_text()).get("provenance", "").split(MODERN_PROV)[0]
        p.save(CALIBRATION_FILE, provenance=prov + MODERN_PROV + ", ".join(sorted(FIT_FAMILIES))
               + " (datasets/measured/h100-steps.csv, datasets/measured/h100/)")
    print("modern host era (fitted on " + ", ".join(sorted(FIT_FAMILIES)) + "): "
          + ", ".join(f"{k}={v}" if isinstance(v, dict) else f"{k}={v:.4g}"
                    for k, v in sorted(p.host_eras.get("modern", {}).items()))
          + f"; runner's ImageNet pipeline {imagenet_ms:.2f} ms/sample (reference core)")
    steps = step_table(sdf, srows, p)
    fam = steps.groupby("family").agg(
        n=("job", "size"), fit=("fit", "first"),
        step=("log_step", lambda x: float(np.median(np.abs(x)))),
        step_bias=("log_step", "median"), mem=("log_mem", lambda x: float(np.median(np.abs(x)))),
        mem_bias=("log_mem", "median"))
    fam["fit"] = fam["fit"].map({True: "fit", False: "held out"})
    print(fam.sort_values(["fit", "step"]).round(3).to_string())
    prec = steps[steps.groupby(["model", "dataset", "batch_size"])["precision"].transform("nunique") > 1]
    print("precision speed-ups (measured fp32 step / step), emulated in brackets, every job "
          "measured in fp32 and another precision:")
    for (m, _ds, b), g in prec.groupby(["model", "dataset", "batch_size"]):
        base = g[g["precision"] == "fp32"]
        if base.empty or len(g) < 2:
            continue
        for _, r in g[g["precision"] != "fp32"].iterrows():
            print(f"  {m} b{b} {r['precision']}: {base['step_s'].iloc[0] / r['step_s']:.2f}x "
                  f"({base['emu_step_s'].iloc[0] / r['emu_step_s']:.2f}x)")
    runs = run_table(ldf, rrows, run_params(p, imagenet_ms))
    runs["err_emu"] = (runs["emu_exec_s"] - runs["exec_time_s"]).abs() / runs["exec_time_s"]
    runs["err_pred"] = (runs["pred_exec_s"] - runs["exec_time_s"]).abs() / runs["exec_time_s"]
    print(runs[["run_id", "fit", "exec_time_s", "emu_exec_s", "pred_exec_s"]].round(1).to_string())
    print(_split("step |log ratio|", steps["log_step"], steps["fit"]))
    print(_split("memory |log ratio|", steps["log_mem"], steps["fit"]))
    rerr = np.log(runs["emu_exec_s"] / runs["exec_time_s"])
    print(_split("run exec time |log ratio|", rerr, runs["fit"]))
    for name, m in (("fit", runs["fit"]), ("held out", ~runs["fit"])):
        print(f"run exec MAPE {name}: emulator {100 * runs.loc[m, 'err_emu'].mean():.1f} %, "
              f"h100 predictor {100 * runs.loc[m, 'err_pred'].mean():.1f} % (n={int(m.sum())})")
    step_err = float(np.median(np.abs(steps["log_step"])))
    mem_err = float(np.median(np.abs(steps["log_mem"])))
    worst = fam["step"].idxmax()
    if a.write:
        cols = ["job", "family", "precision", "step_s", "emu_step_s", "mem_reserved_mb",
                "emu_mem_mb", "log_step", "log_mem"]
        (ROOT / "results/tables").mkdir(exist_ok=True)
        steps[cols].to_csv(ROOT / "results/tables/h100_check.csv", index=False, float_format="%.5g")
        _plot(steps, ROOT / "results/figures/h100_emulated_vs_measured.png")
    print(f"gpu check (h100, measured): emulator step median |log ratio| {step_err:.3f} "
          f"(worst family {worst} {fam.loc[worst, 'step']:.3f}; target 0.15), memory "
          f"{mem_err:.3f}; real runs exec MAPE emulator {100 * runs['err_emu'].mean():.1f} %, "
          f"h100 predictor {100 * runs['err_pred'].mean():.1f} % (n={len(runs)})")
    return 0 if math.isfinite(step_err) else 1


if __name__ == "__main__":
    sys.exit(main())
