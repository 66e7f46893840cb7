"""The kernel model against measured kernels, leaving one GPU out (and the graph-level line).

Kernels: NeuSight's ~250,000 measured kernel latencies on five GPUs (P4, T4, P100,
V100-PCIe-32GB, A100-PCIe-40GB; ``../shared/data/neusight-kernels``, MIT licence, measured by
Lee et al.). For each GPU the kernel model is refitted on the other four
(``gpuscope.emulator.calibration.leave_one_gpu_out``: class parameters, shape corrections,
host floors) and predicts every row of the held-out GPU from its spec sheet; median
|log(pred / measured)| per op class and held-out GPU, per class and over all rows. A second
table holds the held-out machine's host floors (its ``pre``/``post`` per op, fitted on its own
rows, the GPU model untouched): the part of the error that is the host's dispatch, not the GPU.

Graph level (``--graph``): the torchvision CNN iterations of pytorch-gpu-benchmark (fp32 and
fp16, per GPU; ``benchmarks/emulator_fidelity.py`` prints their table) and the measured H100
steps (``benchmarks/emulator_vs_gpu.py``), median |log(emulated / measured)| over all rows.
Last line: ``kernels: leave-one-GPU-out median |log| = X (worst class C Y)[; CNN iterations Z;
H100 steps W]``. ``--write`` refits on all five GPUs and writes
``gpuscope/emulator/kernels/kernel_params.json`` (before ``--graph`` is computed), with the
cited SGEMM scales of the architectures no measured kernel covers and Kepler's convolution
scale recomputed (``calibration.cited``).

    python benchmarks/emulator_kernels.py [--sample N] [--write] [--graph] [--data DIR]
    python benchmarks/emulator_kernels.py --graph-only   # minutes: the recorded kernel line
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace

import numpy as np
import pandas as pd

from gpuscope.emulator.calibration.cited import with_cited_scales
from gpuscope.emulator.calibration.kernel_fit import (
    catalog_names,
    fit_device,
    fit_kernel_params,
    leave_one_gpu_out,
    neusight_dir,
    predict_ms,
    read_kernel_table,
)
from gpuscope.emulator.kernels.params import KERNEL_PARAMS_FILE, default_kernel_params

TARGET_CLASS, TARGET_ALL = 0.15, 0.10


def _table(df: pd.DataFrame, title: str) -> tuple[pd.Series, float]:
    e = np.abs(np.log(df["pred_ms"] / df["latency_ms"]))
    df = df.assign(e=e)
    per = df.pivot_table(index="class", columns="held_out", values="e", aggfunc="median")
    per["all GPUs"] = df.groupby("class")["e"].median()
    per.loc["all classes"] = [*df.groupby("held_out")["e"].median(), float(e.median())]
    print(f"\n{title}: median |log(pred / measured)| (rows: op class; columns: held-out GPU)")
    print(per.round(3).to_string())
    return per["all GPUs"].drop("all classes"), float(e.median())


def host_known(lo: pd.DataFrame, params_of: dict[str, object]) -> pd.DataFrame:
    """The LOGO predictions again with the held-out machine's own host floors (fitted on its
    rows with the compute/bandwidth scales and every class parameter held)."""
    from gpuscope.cluster.devices import get_device

    parts = []
    for held, g in lo.groupby("held_out"):
        p = params_of[held]
        f = fit_device(g.sample(min(len(g), 4000), random_state=0), get_device(held), p,
                       floors_only=True)
        fl = {(k.split(":")[0] + (":post" if k.endswith(":post") else ""), held): v
              for k, v in f.floors_us.items()}
        parts.append(g.assign(pred_ms=predict_ms(g, p, floors=fl)))  # type: ignore[arg-type]
    return pd.concat(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(neusight_dir()), help="NeuSight kernel tables folder")
    ap.add_argument("--sample", type=int, default=1500, help="fit rows per (op, GPU) (0: all)")
    ap.add_argument("--write", action="store_true", help="refit on all GPUs, write the parameters")
    ap.add_argument("--graph", action="store_true", help="also the graph-level figures")
    ap.add_argument("--graph-only", action="store_true",
                    help="the graph-level figures after the kernel line the last --write recorded")
    a = ap.parse_args()
    if a.graph_only:
        rec = default_kernel_params().provenance.get("leave_one_gpu_out", "")
        print(f"{rec} (recorded by the last --write){graph_figures()}")
        return
    t0 = time.perf_counter()
    df = read_kernel_table(a.data)
    df = df.assign(device=catalog_names(df["device"]))
    base = default_kernel_params()
    print(f"{len(df)} measured kernels, {df['device'].nunique()} GPUs, ops: "
          f"{', '.join(sorted(df['op'].unique()))}", file=sys.stderr)
    fits: dict[str, object] = {}
    lo = leave_one_gpu_out(df, base, sample=a.sample or None,
                           progress=lambda s: print(s, file=sys.stderr, flush=True), fits=fits)
    per_class, overall = _table(lo, "Leave one GPU out")
    worst = per_class.idxmax()
    _table(host_known(lo, fits), "Leave one GPU out, held-out machine's host floors known")
    print(f"\ntargets: every class <= {TARGET_CLASS}, all rows <= {TARGET_ALL} "
          f"({time.perf_counter() - t0:.0f} s)")
    line = (f"kernels: leave-one-GPU-out median |log| = {overall:.3f} "
            f"(worst class {worst} {per_class[worst]:.3f})")
    if a.write:
        fit = fit_kernel_params(df, base, sample=a.sample or None)
        prov = {**fit.params.provenance,
                "fitted_on": (f"NeuSight kernel latencies (sitar-lab/NeuSight @6945927, MIT; "
                              f"../shared/data/neusight-kernels): {len(df)} rows on "
                              f"{', '.join(sorted(df['device'].unique()))}, "
                              f"{a.sample or 'all'} rows per (op, GPU) in the fit"),
                "command": "python benchmarks/emulator_kernels.py --write",
                "leave_one_gpu_out": line}
        old = default_kernel_params()  # the graph-level fits and cited figures are kept
        with_cited_scales(replace(fit.params, provenance={**old.provenance, **prov},
                                  gemm_tc=old.gemm_tc, attention=old.attention,
                                  batch_norm=old.batch_norm, reduce=old.reduce)
                          ).save(KERNEL_PARAMS_FILE)
        print(f"wrote {KERNEL_PARAMS_FILE}", file=sys.stderr)
    if a.graph:
        line += graph_figures()
    print(line)


def graph_figures() -> str:
    """``; CNN iterations Z; H100 steps W``: median |log(emulated / measured)| over every
    pytorch-gpu-benchmark row and every measured H100 step, current parameters."""
    from gpuscope.emulator.calibration.measured import (
        gpubench_rows,
        gpubench_table,
        h100_step_rows,
        step_log_errors,
    )
    from gpuscope.emulator.params import default_params
    from gpuscope.graphs import GraphCache

    cache, p = GraphCache(), default_params()
    df, rows = gpubench_rows(cache)
    cnn = float(np.median(np.abs(gpubench_table(df, rows, p)["log_err"])))
    h100 = float(np.median(np.abs(step_log_errors(h100_step_rows(cache)[1], p))))
    return f"; CNN iterations {cnn:.3f}; H100 steps {h100:.3f}"


if __name__ == "__main__":
    main()
