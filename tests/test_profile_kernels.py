"""``gpuscope profile kernels`` on torch's CPU device: the table's schema and provenance, a
rerun that adds nothing, a bigger sweep that extends the smaller one, and an interrupted
sweep that keeps its rows (exit 130) and resumes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from gpuscope.cli import main
from gpuscope.profiling import kernels
from gpuscope.profiling.kernelplan import Limits, plan
from gpuscope.profiling.kernelschema import OP_COLUMNS

ARGS = ["--device-name", "cpu-test", "--device", "cpu", "--quiet"]


def _sweep(out: Path, rows: int) -> int:
    return main(["profile", "kernels", "-o", str(out), "--rows", str(rows), *ARGS])


def test_cpu_sweep_writes_the_schema_and_a_rerun_adds_nothing(tmp_path: Path, capsys) -> None:
    out = tmp_path / "k.parquet"
    assert _sweep(out, 22) == 0
    df = pd.read_parquet(out)
    assert len(df) == 22 and df["key"].is_unique
    assert set(df["op"]) == set(OP_COLUMNS)  # 22 rows already cover every op
    for op, g in df.groupby("op"):
        assert g[list(OP_COLUMNS[str(op)])].notna().all().all(), op
    assert (df["status"] == "ok").all() and (df["latency_ms"] > 0).all()
    assert (df["latency_ms_min"] <= df["latency_ms"]).all() and (df["reps"] >= 3).all()
    assert set(df["device"]) == {"cpu-test"} and set(df["device_kind"]) == {"cpu-only"}
    assert set(df["timer"]) == {"perf_counter"} and set(df["provenance"]) == {"measured"}
    assert set(df["precision"]) == {"fp32"}
    assert "CPU-only" in capsys.readouterr().err
    assert _sweep(out, 22) == 0
    assert '"measured": 0' in capsys.readouterr().out
    again = pd.read_parquet(out)
    assert again["key"].tolist() == df["key"].tolist()
    assert _sweep(out, 25) == 0  # the 25-row plan starts with the 22-row one
    more = pd.read_parquet(out)
    assert len(more) == 25 and more["key"].tolist()[:22] == df["key"].tolist()


def test_an_interrupted_sweep_keeps_its_rows_and_resumes(tmp_path: Path, monkeypatch,
                                                         capsys) -> None:
    out = tmp_path / "k.csv"
    real = kernels.measure_row
    calls = {"n": 0}

    def interrupted(row: dict[str, Any], *a: Any) -> dict[str, Any]:
        calls["n"] += 1
        if calls["n"] == 6:
            raise KeyboardInterrupt
        return real(row, *a)

    monkeypatch.setattr(kernels, "measure_row", interrupted)
    assert _sweep(out, 12) == 130
    first = pd.read_csv(out)
    assert len(first) == 5
    monkeypatch.setattr(kernels, "measure_row", real)
    assert _sweep(out, 12) == 0
    assert '"skipped": 5' in capsys.readouterr().out
    done = pd.read_csv(out)
    want = [r["key"] for r in plan(12, kernels.limits(__import__("torch").device("cpu")),
                                   ("fp32",))]
    assert sorted(done["key"]) == sorted(want)


def test_plan_covers_the_gemm_wave_boundaries_and_stays_within_its_limits() -> None:
    lim = Limits(max_elems=2**24, max_flops=2.0**36, sms=108)
    rows = plan(400, lim, ("fp32", "tf32", "fp16", "bf16"))
    bmm = {(r["B"], r["precision"]) for r in rows if r["op"] == "bmm" and r["M"] == 128
           and r["N"] == 128 and r["K"] == 128}
    assert {(107, "fp32"), (108, "fp32"), (109, "bf16"), (216, "tf32"), (217, "fp16")} <= bmm
    assert any(r["op"] == "add" and r["B"] * r["H"] == 1 for r in rows)  # the launch floor
    for r in rows:
        if r["op"] in ("bmm", "linear"):
            assert 2.0 * r["B"] * r["M"] * r["N"] * r["K"] <= lim.max_flops
        elif r["op"] != "conv":
            assert r["B"] * r["H"] <= lim.max_elems
        if r["op"].startswith("foreach"):
            assert r["precision"] == "fp32"
        elif r["op"] not in ("bmm", "linear", "conv"):
            assert r["precision"] != "tf32"


@pytest.mark.parametrize("argv, msg", [
    (["-o", "k.txt", "--device-name", "x"], "a .parquet or .csv file"),
    (["-o", "k.parquet", "--device-name", "bad name"], "--device-name must be"),
    (["-o", "k.parquet", "--device-name", "x", "--device", "tpu"], "not a torch device"),
    (["-o", "k.parquet", "--device-name", "x", "--device", "meta"], "cpu or cuda"),
    (["-o", "k.parquet", "--device-name", "h100", "--device", "cpu"], "NVML sees no GPU"),
])
def test_bad_input_is_one_line(tmp_path: Path, monkeypatch, capsys, argv: list[str],
                               msg: str) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["profile", "kernels", "--quiet", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and msg in err[0], err


def test_an_overridden_device_name_is_on_every_row(tmp_path: Path) -> None:
    out = tmp_path / "k.parquet"
    assert main(["profile", "kernels", "-o", str(out), "--rows", "3", "--device-name", "h100",
                 "--device-name-override", "--device", "cpu", "--quiet"]) == 0
    df = pd.read_parquet(out)
    assert set(df["device"]) == {"h100"} and set(df["device_kind"]) == {"cpu-only"}
    assert df["device_name_override"].str.contains("NVML sees no GPU").all()
