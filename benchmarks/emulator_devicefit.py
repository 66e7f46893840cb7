"""How well `gpuscope emulator fit` describes a GPU from a small sweep of its own kernels.

For each GPU of NeuSight's measured kernels (../shared/data/neusight-kernels, MIT): take
``--per-op`` rows per op as "the sweep" (what `gpuscope profile kernels` would measure), fit
the GPU's figures on them (`calibration.profiled.fit_profiled`: compute scale, bandwidth
scale, host floors; the kernel model's class parameters held), then predict up to
``--test`` other rows of the same GPU that the sweep did not contain. Prints the median
|log(pred / measured)| per op class on those rows, with the catalog figures (no fit, median
floors) beside them. Caveat: the class parameters shipped in kernel_params.json were fitted
on these five GPUs, so this measures the device fit, not a GPU the model never saw
(benchmarks/emulator_kernels.py does leave-one-GPU-out).

    python benchmarks/emulator_devicefit.py [--per-op 200] [--test 20000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from gpuscope.emulator.calibration.kernel_fit import (
    catalog_names,
    measured_latency,
    neusight_dir,
    predict_ms,
    read_kernel_table,
)
from gpuscope.emulator.calibration.profiled import fit_profiled
from gpuscope.emulator.kernels import KernelDevice, default_kernel_params
from gpuscope.emulator.kernels.ops import OP_CLASS, table_seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(neusight_dir()))
    ap.add_argument("--per-op", type=int, default=200, help="sweep rows per op")
    ap.add_argument("--test", type=int, default=20000, help="held-back rows per GPU")
    a = ap.parse_args()
    t0 = time.perf_counter()
    p = default_kernel_params()
    df = read_kernel_table(a.data)
    df = df.assign(device=catalog_names(df["device"]))
    rows = []
    for dev, g in df.groupby("device"):
        g = g.sample(frac=1.0, random_state=0)
        sweep = g.groupby("op").head(a.per_op)
        test = g.drop(sweep.index).head(a.test)
        t_fit = time.perf_counter()
        res = fit_profiled(sweep, str(dev), p)
        t_fit = time.perf_counter() - t_fit
        t = table_seconds(test, KernelDevice.from_spec(res.spec), p)
        ops = test["op"].astype(str)
        pre = ops.map(res.fit.floors_us).to_numpy() * 1e-6
        post = (ops + ":post").map(res.fit.floors_us).to_numpy() * 1e-6
        fitted = measured_latency(pre, post, t) * 1e3
        catalog = predict_ms(test, p)
        meas = test["latency_ms"].to_numpy(dtype=float)
        for name, pred in (("fitted", fitted), ("catalog", catalog)):
            err = np.abs(np.log(pred / meas))
            for cls in sorted(set(ops.map(OP_CLASS))):
                m = (ops.map(OP_CLASS) == cls).to_numpy()
                rows.append((dev, name, cls, float(np.median(err[m]))))
            rows.append((dev, name, "all rows", float(np.median(err))))
        print(f"{dev}: sweep {len(sweep)} rows, fit {t_fit:.1f} s, compute x"
              f"{res.fit.compute_scale:.3f}, bandwidth x{res.fit.bw_scale:.3f}; "
              f"{len(test)} other rows", flush=True)
    tab = pd.DataFrame(rows, columns=["gpu", "figures", "class", "median_abs_log"])
    wide = tab.pivot_table(index=["class"], columns=["figures", "gpu"], values="median_abs_log")
    print(wide.round(3).to_string())
    allr = tab[tab["class"] == "all rows"].groupby("figures")["median_abs_log"].median()
    print(f"device fit: {a.per_op} rows per op -> other rows median |log| {allr['fitted']:.3f} "
          f"(catalog figures {allr['catalog']:.3f}); median over GPUs; {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
