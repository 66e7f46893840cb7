"""The emulator's memory footprint against every measured run we hold: no false out-of-memory.

Every run below really ran on its GPU, so the emulator must not declare it out of memory
(``fit_status`` ``oom``); a job whose GPU memory lies inside the footprint's band is
``at_risk`` (``gpuscope.emulator.memory``). Sources:

* ``h100-steps``: ``datasets/measured/h100-steps.csv``, 75 jobs timed in one process on an
  H100 80GB; measured footprint = the caching allocator's peak reserve, compared with the
  emulated footprint less its CUDA context (the allocator does not see it);
* ``h100-runs``: ``datasets/measured/h100/``, 23 profiled runs; measured footprint = NVML's
  peak GPU memory (context included), compared with the whole emulated footprint;
* ``pytorch-gpu-benchmark``: ``<shared>/pytorch-gpu-benchmark/train_iter_times.csv`` (the
  shared data folder beside the checkout, ``--shared-data``), the
  single-GPU rows of its models the catalog has (batch 12; ``fp16(pure)`` as ``amp-fp16``,
  which keeps more; ``fp64`` not modelled), no optimizer step (as measured);
* ``gavel``: ``<data>/gavel/simulation_throughputs.json``, every single-GPU job type that ran
  on the K80, P100 or V100 (``emulator.fidelity`` models);
* ``gpuscheduler``: ``<data>/gpuscheduler/data_2d10d_filtered.csv``, AlexNet at each batch
  on the GTX 1080Ti, M60, K80 and the 2 GB Quadro P600 (one GPU);
* ``max-batch``: ``datasets/measured/max-batch.csv``, published batch sizes that ran (Lambda's
  benchmark: ResNet-50 and BERT SQuAD on 12 GPU types; NVIDIA's ResNet-50 recipe), each GPU as
  the catalog device of its architecture with the card's memory.

Prints per source: runs, false OOM, at risk, median |log(emulated / measured)| where a
footprint was measured and how many measured footprints lie inside the band; the H100 CUDA
context measured (NVML run peak less the allocator's reserve of the same job, jobs without
convolutions, whose reserve has no cuDNN benchmark trials); and the summary line
``memory: false OOM n/N, at risk k, median |log| footprint x``. Graphs come from the graph
cache (the first run traces about 130 graphs: ~15 min on 2 cores).

    python benchmarks/emulator_memory.py [--source NAME ...] [--csv rows.csv]
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpuscope.cluster.devices import DeviceSpec, get_device  # noqa: E402
from gpuscope.core.data import external_path  # noqa: E402
from gpuscope.emulator import default_params, estimate  # noqa: E402
from gpuscope.emulator.params import EmulatorParams  # noqa: E402
from gpuscope.emulator.perf import GraphCost  # noqa: E402
from gpuscope.graphs import GraphCache  # noqa: E402
from gpuscope.jobs.catalog import MODEL_FAMILY  # noqa: E402
from gpuscope.jobs.spec import FieldError, JobSpec, source_model_name  # noqa: E402

STEPS = ROOT / "datasets/measured/h100-steps.csv"
RUNS = ROOT / "datasets/measured/h100/labels.parquet"
MAX_BATCH = ROOT / "datasets/measured/max-batch.csv"
SQUAD = {m: f"{ROOT / 'benchmarks/memory_models.py'}:{m}" for m in ("bert_base_squad", "bert_large_squad")}
#: pytorch-gpu-benchmark GPU -> (catalog device, memory GB).
PGB_GPUS: dict[str, tuple[str, float]] = {
    "RTX 2080 Ti 11GB": ("rtx2080ti", 11.0), "TITAN Xp 12GB": ("titan-xp", 12.0),
    "TITAN RTX 24GB": ("titan-rtx", 24.0), "A100 40GB SXM4 (DGX A100)": ("a100", 40.0),
}
#: Families whose graphs have convolutions: their measured reserve holds cuDNN benchmark trials.
CONV_FAMILIES = frozenset({"resnet", "vgg", "densenet", "inception", "lenet", "alexnet", "gan", "vae"})


@dataclass
class Run:
    """One measured run: the job, its GPU and its measured footprint (MB) if any; ``context``
    tells whether that footprint includes the CUDA context."""

    source: str
    label: str
    job: Any
    cost: GraphCost
    device: DeviceSpec
    measured_mb: float = math.nan
    context: bool = True


def _cost(cache: GraphCache, job: JobSpec, memo: dict[str, GraphCost]) -> GraphCost:
    key = job.graph_key
    if key not in memo:
        memo[key] = GraphCost.from_graph(cache.get_or_export(job), job.batch_size)
    return memo[key]


def _graph_job(job: JobSpec) -> JobSpec:
    """The job whose graph ``job`` runs: ``tf32`` steps run the FP32 trace."""
    return replace(job, precision="fp32") if job.precision == "tf32" else job


def h100_steps(cache: GraphCache, memo: dict) -> list[Run]:
    df = pd.read_csv(STEPS)
    dev = get_device("h100")
    out = []
    for r in df[df.status == "ok"].itertuples():
        job = JobSpec(r.model, r.dataset, r.optimizer, int(r.batch_size), 1, precision=r.precision)
        out.append(Run("h100-steps", r.job, job, _cost(cache, _graph_job(job), memo), dev,
                       float(r.mem_reserved_mb), context=False))
    return out


def h100_runs(cache: GraphCache, memo: dict) -> list[Run]:
    lab = pd.read_parquet(RUNS)
    dev = get_device("h100")
    out = []
    for r in lab[lab.status == "ok"].itertuples():
        job = JobSpec(r.model, r.dataset, r.optimizer, int(r.batch_size), int(r.epochs),
                      steps_per_epoch=int(r.steps_per_epoch), precision=r.precision)
        out.append(Run("h100-runs", r.run_id, job, _cost(cache, _graph_job(job), memo), dev,
                       float(r.gpu_mem_peak)))
    return out


def shared_data() -> Path:
    """The shared data folder beside the checkout (``../shared/data`` of the repository or of
    its parent), or where it would be."""
    for base in (ROOT.parent, ROOT.parent.parent):
        if (base / "shared" / "data").is_dir():
            return base / "shared" / "data"
    return ROOT.parent / "shared" / "data"


def gpu_benchmark(cache: GraphCache, memo: dict, shared: Path) -> list[Run]:
    path = shared / "pytorch-gpu-benchmark" / "train_iter_times.csv"
    if not path.is_file():
        print(f"pytorch-gpu-benchmark: {path} not found, source skipped")
        return []
    df = pd.read_csv(path)
    df = df[(df.n_gpus == 1) & df.precision.isin(["fp32", "fp16(pure)"]) & df.model.isin(list(MODEL_FAMILY))]
    out = []
    for r in df.itertuples():
        name, mem = PGB_GPUS[r.gpu]
        prec = "amp-fp16" if r.precision.startswith("fp16") else "fp32"
        try:
            job = JobSpec(r.model, "imagenet", "none", int(r.batch_size), 1, precision=prec)
        except FieldError:  # a catalog model of that name built for another dataset
            continue
        out.append(Run("pytorch-gpu-benchmark", f"{r.model}-{r.precision}-{r.gpu}", job,
                       _cost(cache, job, memo), replace(get_device(name), mem_gb=mem)))
    return out


def gavel_runs(cache: GraphCache, memo: dict) -> list[Run]:
    from gpuscope.emulator.calibration.fidelity import GAVEL_FAMILIES, GavelJob, gavel_cost
    from gpuscope.emulator.calibration.fit import load_gavel

    g = load_gavel()  # the project's table of Gavel's measured throughputs
    g = g[(g.n_gpus == 1) & g.model.isin(list(GAVEL_FAMILIES))]
    costs: dict[tuple[str, int], GraphCost] = {}
    out = []
    for r in g.itertuples():
        model, ds, opt = GAVEL_FAMILIES[r.model]
        b = int(r.batch_size) or 1
        if (model, b) not in costs:  # ResNet-50 is the catalog's (emulator.fidelity)
            costs[(model, b)] = (_cost(cache, JobSpec(model, ds, opt, b, 1), memo)
                                 if model == "resnet50" else gavel_cost(model, b))
        out.append(Run("gavel", f"{r.job_type}-{r.device}", GavelJob(model, ds, opt, b),
                       costs[(model, b)], get_device(r.device)))
    return out


def alexnet_runs(cache: GraphCache, memo: dict) -> tuple[list[Run], int]:
    """The AlexNet table's single-GPU (device, batch) pairs, and how many were left out: the
    table holds measured and fitted times, and its own ``Memory`` column (GB, by batch: 4 at
    128 to 12 at 1024) exceeds the GPU's memory for some pairs (the 2 GB Quadro P600 at every
    batch): fitted entries, not runs that fitted."""
    from gpuscope.emulator.calibration.fit import load_alexnet

    # the table's Memory column is not in the project's table: read the authors' file by path
    path = external_path("gpuscheduler", "data_2d10d_filtered.csv",
                         what="the GPUScheduler authors' AlexNet table")
    need_gb = pd.read_csv(path).groupby("Batchsize")["Memory"].max()
    a = load_alexnet().drop_duplicates(["device", "batch_size"])
    out, skipped = [], 0
    for r in a.itertuples():
        dev = get_device(r.device)
        if need_gb[r.batch_size] > dev.mem_gb:
            skipped += 1
            continue
        job = JobSpec("alexnet", "imagenet", "sgd", int(r.batch_size), 1)
        out.append(Run("gpuscheduler", f"alexnet-b{r.batch_size}-{r.device}", job,
                       _cost(cache, job, memo), dev))
    return out, skipped


def max_batch(cache: GraphCache, memo: dict) -> list[Run]:
    t = pd.read_csv(MAX_BATCH)
    out = []
    for r in t.itertuples():
        src = {"module": SQUAD[r.model]} if r.model in SQUAD else {}
        name = source_model_name(module=src["module"]) if src else str(r.model)
        job = JobSpec(name, r.dataset, r.optimizer, int(r.batch_size), 1, precision=r.precision, **src)
        dev = replace(get_device(r.device), mem_gb=float(r.mem_gb))
        out.append(Run(f"max-batch ({r.source})", f"{r.model}-{r.precision}-b{r.batch_size}-{r.gpu}",
                       job, _cost(cache, _graph_job(job), memo), dev))
    return out


def score(runs: list[Run], p: EmulatorParams) -> pd.DataFrame:
    rows = []
    for r in runs:
        e = estimate(r.job, r.cost, r.device, p)
        m = e.memory
        ctx = 0.0 if r.context else m.context_mb
        ctx_lo = 0.0 if r.context else p.for_era(r.device.host_era).context_mb_lo
        ctx_hi = 0.0 if r.context else p.for_era(r.device.host_era).context_mb_hi
        rows.append({"source": r.source, "run": r.label, "device": r.device.name,
                     "capacity_mb": m.capacity_mb, "fit": m.fit_status, "emu_mb": m.total_mb - ctx,
                     "lo_mb": m.lo_mb - ctx_lo, "hi_mb": m.hi_mb - ctx_hi,
                     "measured_mb": r.measured_mb})
    df = pd.DataFrame(rows)
    df["log_err"] = np.log(df.emu_mb / df.measured_mb)
    df["in_band"] = (df.lo_mb <= df.measured_mb) & (df.measured_mb <= df.hi_mb)
    return df


def h100_context() -> tuple[float, int]:
    """Median NVML run peak less the allocator's peak reserve of the same job (no convolutions)."""
    steps = pd.read_csv(STEPS)
    lab = pd.read_parquet(RUNS)
    keys = ["model", "dataset", "optimizer", "batch_size", "precision"]
    m = lab.merge(steps[[*keys, "mem_reserved_mb"]], on=keys)
    m = m[~m.model.map(MODEL_FAMILY).isin(CONV_FAMILIES)]
    return float(np.median(m.gpu_mem_peak - m.mem_reserved_mb)), len(m)


def _note_alexnet(cache: GraphCache, memo: dict) -> list[Run]:
    runs, skipped = alexnet_runs(cache, memo)
    print(f"gpuscheduler: {skipped} (GPU, batch) pairs left out: the table's own Memory column "
          "exceeds the GPU's memory (fitted entries, not runs)")
    return runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    names = ("h100-steps", "h100-runs", "pytorch-gpu-benchmark", "gavel", "gpuscheduler", "max-batch")
    ap.add_argument("--source", nargs="*", choices=names, default=list(names))
    ap.add_argument("--csv", help="write the per-run rows here")
    ap.add_argument("--shared-data", type=Path, default=shared_data(),
                    help="shared external data folder (default: ../shared/data beside the checkout)")
    a = ap.parse_args()
    cache, memo = GraphCache(), {}
    build = {"h100-steps": lambda: h100_steps(cache, memo), "h100-runs": lambda: h100_runs(cache, memo),
             "pytorch-gpu-benchmark": lambda: gpu_benchmark(cache, memo, a.shared_data), "gavel": lambda: gavel_runs(cache, memo),
             "gpuscheduler": lambda: _note_alexnet(cache, memo), "max-batch": lambda: max_batch(cache, memo)}
    runs = [r for s in a.source for r in build[s]()]
    df = score(runs, default_params())
    print(f"{'source':32s} {'runs':>5s} {'false OOM':>9s} {'at risk':>7s} {'median |log|':>12s} {'in band':>8s}")
    for src, g in df.groupby("source", sort=False):
        meas = g[g.measured_mb.notna()]
        err = f"{np.median(np.abs(meas.log_err)):.3f}" if len(meas) else "-"
        band = f"{int(meas.in_band.sum())}/{len(meas)}" if len(meas) else "-"
        print(f"{src:32s} {len(g):5d} {int((g.fit == 'oom').sum()):9d} {int((g.fit == 'at_risk').sum()):7d} "
              f"{err:>12s} {band:>8s}")
    for r in df[df.fit == "oom"].itertuples():
        print(f"  false OOM: {r.source} {r.run}: {r.lo_mb:.0f}-{r.hi_mb:.0f} MB > {r.capacity_mb:.0f} MB")
    if "h100-runs" in a.source:
        ctx, n = h100_context()
        print(f"H100 CUDA context measured (NVML run peak - allocator reserve, {n} jobs without "
              f"convolutions): median {ctx:.0f} MB")
    meas = df[df.measured_mb.notna()]
    med = float(np.median(np.abs(meas.log_err))) if len(meas) else math.nan
    print(f"memory: false OOM {int((df.fit == 'oom').sum())}/{len(df)}, at risk "
          f"{int((df.fit == 'at_risk').sum())}, median |log| footprint {med:.3f}")
    if a.csv:
        df.to_csv(a.csv, index=False)


if __name__ == "__main__":
    main()
