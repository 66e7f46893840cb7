"""Campaigns: parsing, malformed files, ledger, SIGKILL mid-run and resume."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuscope.core.errors import InputError
from gpuscope.jobs.spec import table_jobs
from gpuscope.profiling import Ledger, load_campaign, parse_campaign
from gpuscope.profiling.campaign import pending_jobs

ROOT = Path(__file__).resolve().parents[1]
GPUSCOPE = [sys.executable, "-m", "gpuscope.cli"]
#: The profile subcommands alone (no other stage imported): a fast driver for the kill test.
PROFILE = [sys.executable, "-m", "gpuscope"]

SMALL = """
[campaign]
name = "t"
timeout_s = 30
period_s = 0.1
optimizers = ["sgd", "adam"]
batch_sizes = [8]
epochs = [1, 2]

[[matrix]]
models = ["lenet"]
datasets = ["cifar10"]
steps_per_epoch = 2

[[matrix]]
models = ["cvae"]
datasets = ["mnist"]
"""


def test_table3_campaign_is_seed_table3() -> None:
    c = load_campaign(ROOT / "campaigns" / "table3.toml")
    assert len(c.jobs) == 432
    assert sorted(j.key for j in c.jobs) == sorted(j.key for j in table_jobs(3))
    assert c.period_s == pytest.approx(1 / 6)


def test_parse_small_campaign_and_group_overrides(tmp_path: Path) -> None:
    p = tmp_path / "c.toml"
    p.write_text(SMALL)
    c = load_campaign(p)
    assert c.name == "t" and c.timeout_s == 30 and len(c.jobs) == 8
    assert {j.steps_per_epoch for j in c.jobs if j.model == "lenet"} == {2}
    assert {j.steps_per_epoch for j in c.jobs if j.model == "cvae"} == {None}
    for name in ("cpu-small", "cpu-measured"):
        assert load_campaign(ROOT / "campaigns" / f"{name}.toml").jobs


@pytest.mark.parametrize("text,needle", [
    ("[campaign\nname = 1", "not valid TOML"),
    ("[campaign]\nname='x'\n", "[[matrix]]"),
    ("[campaign]\nbatch_size = [8]\n[[matrix]]\nmodels=['lenet']\ndatasets=['cifar10']", "unknown key"),
    ("[[matrix]]\nmodels=['lenet']\ndatasets=['mnist']", "defined for"),
    ("[[matrix]]\nmodels=['lenet']\ndatasets=['cifar10']\nbatch_sizes=[0]", "batch_size"),
    ("[[matrix]]\nmodels=['lenet']\ndatasets=['cifar10']\nbatch_sizes=['8']", "integers"),
    ("[campaign]\ntimeout_s=-1\n[[matrix]]\nmodels=['lenet']\ndatasets=['cifar10']", "timeout_s"),
    ("[[matrix]]\nmodels=['lenet']", "needs models and datasets"),
])
def test_malformed_campaign_one_line_exit_2(tmp_path: Path, text: str, needle: str) -> None:
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(InputError, match=None) as ei:
        load_campaign(p)
    assert needle in str(ei.value) and "\n" not in str(ei.value)


def test_malformed_campaign_cli(tmp_path: Path) -> None:
    p = tmp_path / "bad.toml"
    p.write_text("[campaign\n")
    r = subprocess.run([*GPUSCOPE, "profile", "run", str(p), "--device-name", "x",
                        "--out", str(tmp_path / "runs")], capture_output=True, text=True,
                       cwd=ROOT, timeout=60)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuscope: error: campaign")
    assert "Traceback" not in r.stderr


def _ledger_ids(runs: Path) -> list[str]:
    if not (runs / "ledger.sqlite").exists():
        return []
    try:
        con = sqlite3.connect(runs / "ledger.sqlite", timeout=5)
        try:
            return [r[0] for r in con.execute("SELECT run_id FROM runs")]
        finally:
            con.close()
    except sqlite3.OperationalError:  # table not created yet
        return []


def test_sigkill_mid_campaign_then_resume(tmp_path: Path) -> None:
    camp = tmp_path / "c.toml"
    camp.write_text(SMALL)
    runs = tmp_path / "runs"
    cmd = [*PROFILE, "profile", "run", str(camp), "--device-name", "fake", "--out", str(runs),
           "--no-nvml", "--quiet", "--command",
           f"{sys.executable} -c 'import time; time.sleep(0.7); print(\"{{}}\")' {{job}}"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while len(_ledger_ids(runs)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # land somewhere inside the next run
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = _ledger_ids(runs)
    assert 3 <= len(before) < 8
    # Every recorded run has its complete trace; at most the run in flight is lost.
    traces = sorted(p.stem for p in (runs / "traces").glob("[!.]*.parquet"))
    assert sorted(before) == traces
    mtimes = {p: p.stat().st_mtime_ns for p in (runs / "traces").glob("[!.]*.parquet")}

    r = subprocess.run([c for c in cmd], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert sum(out["ran"].values()) == 8 - len(before)  # finished runs were skipped
    assert out["recorded"] == 8
    after = _ledger_ids(runs)
    assert len(after) == len(set(after)) == 8
    c = load_campaign(camp)
    assert sorted(after) == sorted(j.key for j in c.jobs)
    assert all(p.stat().st_mtime_ns == m for p, m in mtimes.items())  # not re-run
    assert not list((runs / "traces").glob(".*.tmp"))
    with Ledger(runs / "ledger.sqlite") as led:
        assert pending_jobs(c, led) == []
        assert set(led.runs()["status"]) == {"ok"}


def test_max_runs_limits_pending(tmp_path: Path) -> None:
    c = parse_campaign({"matrix": [{"models": ["lenet"], "datasets": ["cifar10"]}]})
    with Ledger(tmp_path / "ledger.sqlite") as led:
        assert len(pending_jobs(c, led, max_runs=3)) == 3
        assert len(pending_jobs(c, led)) == 16
