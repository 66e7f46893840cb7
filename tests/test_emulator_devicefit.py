"""``gpuscope emulator fit``: a device's figures fitted back from a kernel sweep whose answer
is known (latencies made by the kernel model on a catalog GPU with altered figures), the
fitted entry reproducing its own measurements, and ``estimate``/``emulate kernels`` taking it
through ``--catalog``."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpuscope.cli import main
from gpuscope.cluster.devices import get_device, load_catalog
from gpuscope.core.errors import InputError
from gpuscope.emulator.calibration.kernel_fit import measured_latency
from gpuscope.emulator.calibration.profiled import fit_profiled
from gpuscope.emulator.kernels import KernelDevice, default_kernel_params
from gpuscope.emulator.kernels.ops import table_seconds
from gpuscope.profiling.kernelplan import Limits, plan

P = default_kernel_params()
#: The altered figures of the "measured" A100: FP32 peak x 1.3, TF32 x 0.8, FP16/BF16 tensor
#: cores x 1.15, DRAM bandwidth x 0.7; host floors 18 us before the kernel, 9 us after.
TRUE = {"fp32": 1.3, "tf32": 0.8, "fp16": 1.15}
BW, PRE, POST = 0.7, 18.0, 9.0


def _sweep(device: str = "a100-pcie-40gb", name: str | None = None) -> pd.DataFrame:
    lim = Limits(max_elems=2**26, max_flops=2.0**37, sms=108)
    rows = pd.DataFrame(plan(600, lim, ("fp32", "tf32", "fp16", "bf16"), seed=3))
    mm = rows["op"].isin(["bmm", "linear", "conv"])  # every GEMM/conv, 6 rows of the others
    rows = rows[mm | (rows.groupby("op").cumcount() < 6)].reset_index(drop=True)
    base = KernelDevice.from_spec(get_device(device))
    true = replace(base, bw=base.bw * BW, **{k: getattr(base, k) * v for k, v in TRUE.items()})
    t = table_seconds(rows, true, P)
    return rows.assign(device=name or device, status="ok", device_kind="gpu",
                       latency_ms=measured_latency(PRE * 1e-6, POST * 1e-6, t) * 1e3)


def test_fit_recovers_altered_figures_and_reproduces_its_measurements() -> None:
    df = _sweep()
    res = fit_profiled(df, "a100-pcie-40gb", P)
    assert res.name == "a100-pcie-40gb-fitted"  # a bundled name is not reused
    for k, v in TRUE.items():
        assert res.fit.scales[k] == pytest.approx(v, rel=0.02), k
    assert res.fit.bw_scale == pytest.approx(BW, rel=0.03)
    fl = res.fit.floors_us  # a launch-bound kernel shows pre + post (their split: the knee)
    assert fl["add"] + fl["add:post"] == pytest.approx(PRE + POST, rel=0.05)
    a100 = get_device("a100-pcie-40gb")
    assert res.spec.fp32_tflops == pytest.approx(a100.fp32_tflops * 1.3, rel=0.03)
    assert res.spec.mem_bw_gbs == pytest.approx(a100.mem_bw_gbs * 0.7, rel=0.03)
    assert res.report["median_abs_log"] < 0.02
    assert set(res.report["fitted_peaks"]) == {"fp32", "tf32", "fp16"}


def test_fitted_entry_is_a_catalog_that_estimate_and_emulate_kernels_accept(
        tmp_path: Path, capsys) -> None:
    df = _sweep("t4", "my-t4").drop(columns=["device_kind"])
    df = df[df["precision"] != "tf32"]  # a T4 has no TF32: those rows would not exist
    src = tmp_path / "k.parquet"
    df.to_parquet(src)
    out = tmp_path / "fit"
    assert main(["emulator", "fit", "--kernels", str(src), "--device", "my-t4", "--like", "t4",
                 "-o", str(out)]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["device"] == "my-t4" and res["median_abs_log"] < 0.02
    assert res["bw_scale"] == pytest.approx(BW, rel=0.03)
    assert json.loads((out / "fit.json").read_text())["rows"] == len(df)
    cat = out / "devices.toml"
    # the entry's sustained peaks are the altered ones (the T4's catalog entry has a
    # sustained clock; the fitted one states the peaks it sustains)
    got, t4 = (KernelDevice.from_spec(d) for d in (load_catalog(cat)["my-t4"], get_device("t4")))
    for k in ("fp32", "fp16"):
        assert getattr(got, k) == pytest.approx(getattr(t4, k) * TRUE[k], rel=0.03), k
    assert got.bw == pytest.approx(t4.bw * BW, rel=0.03)
    assert "fitted on a kernel sweep" in cat.read_text()
    assert main(["estimate", "--model", "lenet", "--dataset", "cifar10", "--batch-size", "8",
                 "--devices", "my-t4,t4", "--catalog", str(cat), "--format", "csv"]) == 0
    assert "my-t4" in capsys.readouterr().out
    pred = tmp_path / "pred.parquet"
    assert main(["emulate", "kernels", "--input", str(src), "-o", str(pred), "--catalog",
                 str(cat), "--kernel-params", str(out / "kernel_params.json")]) == 0
    got = pd.read_parquet(pred)
    err = np.abs(np.log(got["pred_ms"] / got["latency_ms"]))
    assert np.median(err) < 0.02  # its own measurements back, through the CLI


def test_bad_inputs_are_one_line(tmp_path: Path, capsys) -> None:
    df = _sweep("t4").iloc[:40]
    good = tmp_path / "k.parquet"
    df.to_parquet(good)
    nolat = tmp_path / "nolat.csv"
    df.drop(columns=["latency_ms"]).to_csv(nolat, index=False)
    cases = [
        (["--kernels", str(nolat), "--device", "t4"], "latency_ms"),
        (["--kernels", str(good), "--device", "my-gpu"], "not my-gpu"),
        (["--kernels", str(good), "--device", "t4", "--like", "nope"], "nope"),
        (["--kernels", str(tmp_path / "none.parquet"), "--device", "t4"], "none.parquet"),
    ]
    for argv, msg in cases:
        assert main(["emulator", "fit", *argv, "-o", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and msg in err[0], (argv, err)
    with pytest.raises(InputError, match="not in the catalog"):
        fit_profiled(df.assign(device="my-gpu"), "my-gpu", P)


def test_foreach_ops_and_the_precision_column_are_priced() -> None:
    a100 = KernelDevice.from_spec(get_device("a100-pcie-40gb"))
    rows = pd.DataFrame([
        {"op": "add", "B": 64, "H": 2**20, "precision": "fp32"},
        {"op": "foreach_add", "B": 64, "H": 2**20, "precision": "fp32"},  # same traffic
        {"op": "add", "B": 64, "H": 2**20, "precision": "bf16"},          # half of it
        {"op": "bmm", "B": 8, "M": 4096, "N": 4096, "K": 4096, "precision": "fp32"},
        {"op": "bmm", "B": 8, "M": 4096, "N": 4096, "K": 4096, "precision": "tf32"},
        {"op": "bmm", "B": 8, "M": 4096, "N": 4096, "K": 4096, "precision": "fp16"},
    ])
    t = table_seconds(rows, a100, P)
    assert t[1] == pytest.approx(t[0], rel=1e-9)
    assert t[2] == pytest.approx(t[0] / 2, rel=0.05)
    assert t[3] > 4 * t[4] > 4 * t[5]  # SIMT FP32, then TF32 and FP16 tensor cores
    with pytest.raises(InputError, match="unknown precision"):
        table_seconds(rows.assign(precision="fp8"), a100, P)
