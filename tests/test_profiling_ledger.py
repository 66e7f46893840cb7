"""The ledger and campaign guards: a run's key holds device and provenance,
``--retry-errors``, environment failures abort, one campaign per folder, the job dies with
its campaign (SIGKILL, no orphan), and the busy-host check."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest

from gpuscope.cli import main as profile_main
from gpuscope.core.errors import InputError
from gpuscope.profiling import Ledger, TraceMeta, parse_campaign, write_trace
from gpuscope.profiling.campaign import pending_jobs, run_campaign, run_options
from gpuscope.profiling.ledger import campaign_lock
from gpuscope.profiling.runner import HOST_BUSY_FRAC, host_busy

ROOT = Path(__file__).resolve().parents[1]
TINY = """
[campaign]
name = "tiny"
timeout_s = 30
period_s = 0.05
optimizers = ["sgd", "adam"]
batch_sizes = [8]
epochs = [1, 2]

[[matrix]]
models = ["lenet"]
datasets = ["cifar10"]
steps_per_epoch = 1
"""
#: A fake job (no torch): writes its pid, sleeps, prints a result line. With ``hold`` in its
#: folder, the third job and later sleep 60 s (the SIGKILL test kills the campaign then).
FAKE_JOB = """
import os, pathlib, sys, time
d = pathlib.Path(sys.argv[1])
n = len(list(d.glob("*.pid")))
(d / f"{os.getpid()}.pid").write_text(sys.argv[2])
time.sleep(60 if (d / "hold").exists() and n >= 2 else 0.05)
print("{}")
"""


def _campaign(tmp_path: Path) -> Path:
    p = tmp_path / "c.toml"
    p.write_text(TINY)
    return p


def _fake(tmp_path: Path) -> str:
    script = tmp_path / "fake_job.py"
    script.write_text(FAKE_JOB)
    pids = tmp_path / "pids"
    pids.mkdir(exist_ok=True)
    return f"{sys.executable} {script} {pids} {{job}}"


def _meta(run_id: str, device: str = "a100", provenance: str = "measured",
          status: str = "ok") -> TraceMeta:
    return TraceMeta(run_id=run_id, job={"model": "lenet"}, device=device, status=status,
                     exec_time_s=1.0, provenance=provenance, error="" if status == "ok" else "x")


def _record(runs: Path, meta: TraceMeta) -> None:
    trace = runs / "traces" / f"{meta.run_id}.parquet"
    write_trace(trace, pd.DataFrame({"t_s": [0.0], "cpu_util": [1.0]}), meta)
    with Ledger(runs / "ledger.sqlite") as led:
        led.record(meta, trace)


def test_ledger_refuses_another_device_or_provenance(tmp_path: Path) -> None:
    _record(tmp_path, _meta("r1", "a100"))
    with Ledger(tmp_path / "ledger.sqlite", device="a100", provenance="measured") as led:
        assert led.done_ids() == {"r1"}
        with pytest.raises(InputError, match="emulated run"):
            led.record(_meta("r2", "a100", "emulated"), tmp_path / "x.parquet")
    for dev, prov in (("h100", "measured"), ("a100", "emulated")):
        with pytest.raises(InputError, match="holds 1 measured run") as ei:
            Ledger(tmp_path / "ledger.sqlite", device=dev, provenance=prov)
        assert "\n" not in str(ei.value)


def test_profile_run_into_other_device_folder_exits_2(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs"
    _record(runs, _meta("lenet-cifar10-sgd-b8-e1-s1", "a100"))
    rc = profile_main(["profile", "run", str(_campaign(tmp_path)), "--device-name", "my-h100",
                       "--out", str(runs), "--no-nvml", "--quiet", "--command", _fake(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "device 'a100'" in err[0], err
    assert not list((tmp_path / "pids").glob("*.pid"))  # nothing ran


def test_retry_errors_reruns_only_error_runs(tmp_path: Path) -> None:
    c = parse_campaign({"campaign": {"timeout_s": 30, "period_s": 0.05},
                        "matrix": [{"models": ["lenet"], "datasets": ["cifar10"],
                                    "optimizers": ["sgd"], "batch_sizes": [8],
                                    "epochs": [1, 2], "steps_per_epoch": 1}]})
    k_ok, k_err = (j.key for j in c.jobs)
    _record(tmp_path, _meta(k_ok, "fake"))
    _record(tmp_path, _meta(k_err, "fake", status="error"))
    with Ledger(tmp_path / "ledger.sqlite", device="fake", provenance="measured") as led:
        assert pending_jobs(c, led) == []
        assert [j.key for j in pending_jobs(c, led, retry_errors=True)] == [k_err]
    opts = run_options(c, "fake", use_nvml=False, busy_probe_s=0.0,
                       command=tuple(_fake(tmp_path).split()))
    assert run_campaign(c, tmp_path, opts, progress=False, retry_errors=True) == {"ok": 1}
    with Ledger(tmp_path / "ledger.sqlite") as led:
        runs = led.runs()
    assert sorted(runs["run_id"]) == sorted([k_ok, k_err]) and set(runs["status"]) == {"ok"}


@pytest.mark.parametrize("command", [
    f"{sys.executable} -c \"import sys; sys.exit('error: argument --device: invalid choice')\"",
    "/nonexistent/gpuscope-entry-point {job}",
])
def test_environment_failure_aborts_with_one_line(tmp_path: Path, command: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs"
    rc = profile_main(["profile", "run", str(_campaign(tmp_path)), "--device-name", "fake",
                       "--out", str(runs), "--no-nvml", "--quiet", "--command", command])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert "environment failure" in err[0] or "cannot start the job command" in err[0]
    with Ledger(runs / "ledger.sqlite") as led:
        assert len(led) == 0  # nothing recorded: a fixed rerun makes every run
    assert not list((runs / "traces").glob("*.parquet")) if (runs / "traces").exists() else True


def test_second_campaign_in_one_folder_refuses(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs"
    with campaign_lock(runs):
        rc = profile_main(["profile", "run", str(_campaign(tmp_path)), "--device-name", "fake",
                           "--out", str(runs), "--no-nvml", "--quiet",
                           "--command", _fake(tmp_path)])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and "in use by another campaign" in err[0], err
        assert f"pid {os.getpid()}" in err[0]
    with campaign_lock(runs):  # released on exit
        pass


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _campaign_holding_third_job(tmp_path: Path) -> tuple[subprocess.Popen[bytes], int,
                                                              list[str]]:
    """A campaign subprocess whose third job sleeps; returns (it, the job's pid, argv)."""
    runs, pids = tmp_path / "runs", tmp_path / "pids"
    cmd = _fake(tmp_path)
    (pids / "hold").write_text("")
    argv = ["profile", "run", str(_campaign(tmp_path)), "--device-name", "fake", "--out",
            str(runs), "--no-nvml", "--quiet", "--command", cmd]
    proc = subprocess.Popen([sys.executable, "-m", "gpuscope", *argv], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.monotonic() + 60
    while len(list(pids.glob("*.pid"))) < 3 and time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.05)
    held = [int(p.stem) for p in pids.glob("*.pid") if _alive(int(p.stem))]
    assert len(held) == 1  # the third job, sleeping
    return proc, held[0], argv


def test_sigterm_of_a_campaign_kills_its_job(tmp_path: Path) -> None:
    proc, job, _ = _campaign_holding_third_job(tmp_path)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and err.decode().strip().splitlines() == [
        "gpuscope: interrupted; finished work is kept"]
    assert not _alive(job)  # the group was killed on the way out


def test_sigkilled_campaign_leaves_no_orphan_and_resumes(tmp_path: Path) -> None:
    runs, pids = tmp_path / "runs", tmp_path / "pids"
    proc, job, argv = _campaign_holding_third_job(tmp_path)
    held = [job]
    proc.send_signal(signal.SIGKILL)  # the campaign only, not its job's process group
    proc.wait()
    end = time.monotonic() + 5
    while _alive(held[0]) and time.monotonic() < end:
        time.sleep(0.05)
    orphan = _alive(held[0])
    if orphan:  # do not leave it behind when the test fails
        os.kill(held[0], signal.SIGKILL)
    assert not orphan, "the training job outlived its SIGKILLed campaign"
    with Ledger(runs / "ledger.sqlite") as led:
        before = set(led.runs()["run_id"])
    assert len(before) == 2
    (pids / "hold").unlink()
    assert profile_main(argv) == 0
    with Ledger(runs / "ledger.sqlite") as led:
        after = list(led.runs()["run_id"])
    assert len(after) == len(set(after)) == 4 and before <= set(after)
    assert len(list(pids.glob("*.pid"))) == 3 + 2  # two made now, the finished two skipped


def test_host_busy_fraction_and_flag() -> None:
    assert host_busy(None, None, None) == (None, False)
    frac, busy = host_busy([50.0, 70.0], [10.0, 10.0], 5.0)
    assert frac == pytest.approx(0.5) and busy
    frac, busy = host_busy([12.0, float("nan")], [10.0, 1.0], 1.0)
    assert frac == pytest.approx(0.02) and not busy
    assert host_busy([], [], 100 * (HOST_BUSY_FRAC + 0.01))[1]


def test_busy_runs_are_recorded_and_warned(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs"
    c = parse_campaign(json.loads(json.dumps({"campaign": {"period_s": 0.05}, "matrix": [
        {"models": ["lenet"], "datasets": ["cifar10"], "optimizers": ["sgd"],
         "batch_sizes": [8], "epochs": [1], "steps_per_epoch": 1}]})))
    opts = run_options(c, "fake", use_nvml=False, command=tuple(_fake(tmp_path).split()))
    run_campaign(c, runs, opts, progress=False)
    with Ledger(runs / "ledger.sqlite") as led:
        meta = led.meta(c.jobs[0].key)
    assert meta is not None and 0.0 <= meta.host_busy_frac <= 1.0
    assert meta.host_busy == (meta.host_busy_frac > HOST_BUSY_FRAC)
    busy = _meta("lenet-cifar10-adam-b8-e1-s1", "fake")
    busy.host_busy, busy.host_busy_frac = True, 0.9
    _record(runs, busy)
    rc = profile_main(["profile", "run", str(_campaign(tmp_path)), "--device-name", "fake",
                       "--out", str(runs), "--no-nvml", "--quiet", "--max-runs", "1",
                       "--command", _fake(tmp_path)])
    out, err = capsys.readouterr()
    assert rc == 0 and json.loads(out)["host_busy"] >= 1
    assert "ran on a busy host" in err
    # the warning names the busiest run: the recorded 90 %, or more when this machine is
    # itself loaded and the fresh run is busy too
    m = re.search(r"up to (\d+) %", err)
    assert m is not None and int(m.group(1)) >= 90, err


def test_is_done_follows_the_key_and_retry_errors(tmp_path: Path) -> None:
    _record(tmp_path, _meta("r1", "a100", status="error"))
    with Ledger(tmp_path / "ledger.sqlite", device="a100", provenance="measured") as led:
        assert led.is_done("r1") and not led.is_done("r1", retry_errors=True)
        assert not led.is_done("r2")
