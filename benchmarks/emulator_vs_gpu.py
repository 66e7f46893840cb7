"""The emulator and the predictor against a real GPU (measured on an H100 SXM5 80GB).

Two measured sources, both committed (``benchmarks/gpu_session.sh`` made them):

* ``datasets/measured/h100-steps.csv``: 75 jobs timed in one process (batch already on the
  GPU; ``gpuscope.profiling.steptimes``). Compared with the emulator's GPU-side step time
  ``max(t_gpu, t_dispatch) + t_sync`` (its input-pipeline term is left out, as the measurement
  has no pipeline) and its memory footprint against the caching allocator's peak reserve.
* ``datasets/measured/h100/``: 23 real profiler runs (own process, CPU input pipeline, NVML
  at 6 Hz). Compared with the emulator's execution time, and with the bundled ``h100``
  predictor checkpoint (which was trained on emulated data only).

Prints one line per family and the summary line; writes ``docs/tables/h100_check.csv`` and
``docs/figures/h100_emulated_vs_measured.png`` with ``--write``.

    python benchmarks/emulator_vs_gpu.py [--write]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpuscope.devices import get_device  # noqa: E402
from gpuscope.emulator import default_params, estimate  # noqa: E402
from gpuscope.graphs import GraphCache  # noqa: E402
from gpuscope.jobs import MODEL_FAMILY, JobSpec  # noqa: E402

STEPS = ROOT / "datasets/measured/h100-steps.csv"
RUNS = ROOT / "datasets/measured/h100"


def _job(r: pd.Series, epochs: int = 1, spe: int | None = None) -> JobSpec:
    return JobSpec(r["model"], r["dataset"], r["optimizer"], int(r["batch_size"]), epochs,
                   steps_per_epoch=spe, precision=r.get("precision", "fp32") or "fp32")


def step_table(cache: GraphCache) -> pd.DataFrame:
    dev, p = get_device("h100"), default_params()
    df = pd.read_csv(STEPS)
    df = df[df["status"] == "ok"].reset_index(drop=True)
    emu_step, emu_mem = [], []
    for _, r in df.iterrows():
        job = _job(r)
        e = estimate(job, cache.get_or_export(job), dev, p)
        sync = p.step_sync_ms * 1e-3 / dev.host_single_core
        emu_step.append(max(e.t_gpu_s, e.t_dispatch_s) + sync)
        emu_mem.append(e.mem_mb)
    df["emu_step_s"] = emu_step
    df["emu_mem_mb"] = emu_mem
    df["log_step"] = np.log(df["emu_step_s"] / df["step_s"])
    df["log_mem"] = np.log(df["emu_mem_mb"] / df["mem_reserved_mb"])
    df["family"] = df["model"].map(MODEL_FAMILY)
    return df


def run_table(cache: GraphCache) -> pd.DataFrame:
    from gpuscope.predictor.predict import load_predictor

    dev, p = get_device("h100"), default_params()
    lab = pd.read_parquet(RUNS / "labels.parquet")
    lab = lab[lab["status"] == "ok"].reset_index(drop=True)
    jobs = [_job(r, int(r["epochs"]), int(r["steps_per_epoch"])) for _, r in lab.iterrows()]
    lab["emu_exec_s"] = [estimate(j, cache.get_or_export(j), dev, p).exec_time_s for j in jobs]
    pred = load_predictor(ROOT / "datasets/checkpoints/h100.pt").predict(jobs)
    lab["pred_exec_s"] = pred["exec_time_s"].to_numpy()
    lab["family"] = lab["model"].map(MODEL_FAMILY)
    return lab


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
    a = ap.parse_args()
    cache = GraphCache(None)
    steps = step_table(cache)
    fam = steps.groupby("family").agg(
        n=("job", "size"), step=("log_step", lambda x: float(np.median(np.abs(x)))),
        step_bias=("log_step", "median"), mem=("log_mem", lambda x: float(np.median(np.abs(x)))))
    print(fam.round(3).to_string())
    prec = steps[steps["model"].isin(["resnet50", "gpt2", "bert_base"])]
    print("precision speed-ups (measured fp32 step / step), emulated in brackets:")
    for (m, _ds, b), g in prec.groupby(["model", "dataset", "batch_size"]):
        base = g[g["precision"] == "fp32"]
        if base.empty or len(g) < 2:
            continue
        for _, r in g[g["precision"] != "fp32"].iterrows():
            print(f"  {m} b{b} {r['precision']}: {base['step_s'].iloc[0] / r['step_s']:.2f}x "
                  f"({base['emu_step_s'].iloc[0] / r['emu_step_s']:.2f}x)")
    runs = run_table(cache)
    runs["err_emu"] = (runs["emu_exec_s"] - runs["exec_time_s"]).abs() / runs["exec_time_s"]
    runs["err_pred"] = (runs["pred_exec_s"] - runs["exec_time_s"]).abs() / runs["exec_time_s"]
    print(runs[["run_id", "exec_time_s", "emu_exec_s", "pred_exec_s"]].round(1).to_string())
    step_err = float(np.median(np.abs(steps["log_step"])))
    mem_err = float(np.median(np.abs(steps["log_mem"])))
    worst = fam["step"].idxmax()
    if a.write:
        cols = ["job", "family", "precision", "step_s", "emu_step_s", "mem_reserved_mb",
                "emu_mem_mb", "log_step", "log_mem"]
        (ROOT / "docs/tables").mkdir(exist_ok=True)
        steps[cols].to_csv(ROOT / "docs/tables/h100_check.csv", index=False, float_format="%.5g")
        _plot(steps, ROOT / "docs/figures/h100_emulated_vs_measured.png")
    print(f"gpu check (h100, measured): emulator step median |log ratio| {step_err:.3f} "
          f"(worst family {worst} {fam.loc[worst, 'step']:.3f}; target 0.15), memory "
          f"{mem_err:.3f}; real runs exec MAPE emulator {100 * runs['err_emu'].mean():.1f} %, "
          f"h100 predictor {100 * runs['err_pred'].mean():.1f} % (n={len(runs)})")
    return 0 if math.isfinite(step_err) else 1


if __name__ == "__main__":
    sys.exit(main())
