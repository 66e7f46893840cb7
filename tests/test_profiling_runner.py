"""Runner statuses: ok, oom, error, timeout (seed 001 Fig. 5-7: OOM is a result, not a crash)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gpuscope.core.targets import GPU_RESOURCES
from gpuscope.jobs.spec import JobSpec
from gpuscope.profiling import RunOptions, read_trace, run_job

JOB = JobSpec("lenet", "cifar10", "sgd", 8, 1, steps_per_epoch=2)


def _opts(code: str | None = None, **kw: object) -> RunOptions:
    cmd = (sys.executable, "-c", code) if code is not None else None
    return RunOptions(device_name="testcpu", command=cmd, **kw)  # type: ignore[arg-type]


def test_real_job_ok_writes_trace_and_metadata(tmp_path: Path) -> None:
    path = tmp_path / "traces" / f"{JOB.key}.parquet"
    meta = run_job(JOB, path, _opts(timeout_s=120))
    assert meta.status == "ok", meta.error
    df, back = read_trace(path)
    assert back == meta
    assert meta.run_id == JOB.key and meta.provenance == "measured"
    assert meta.result.get("steps") == 2  # the entry point's JSON line
    assert meta.exec_time_s >= meta.result["exec_time_s"] > 0
    assert list(df.columns) == ["t_s", "cpu_util", "proc_cpu_util"]  # no GPU here
    assert set(meta.missing) == set(GPU_RESOURCES) and meta.mem_total_mb is None
    assert meta.device_info["kind"] == "cpu" and meta.device_info["cpu_model"]
    assert {"torch", "python", "psutil"} <= set(meta.versions) and meta.host
    # Sampled for the run's whole length at ~1/6 s (generous: shared, loaded machine).
    assert len(df) >= 0.5 * meta.exec_time_s * 6
    assert df["proc_cpu_util"].max() > 0


def test_real_job_out_of_memory(tmp_path: Path) -> None:
    job = JobSpec("vgg16", "imagenet", "adam", 64, 1, steps_per_epoch=1)
    meta = run_job(job, tmp_path / "t.parquet", _opts(timeout_s=120, memory_limit_mb=300))
    assert meta.status == "oom", meta.error
    assert "allocate" in meta.error.lower() or "memory" in meta.error.lower()


def test_error_status_keeps_last_error_line(tmp_path: Path) -> None:
    meta = run_job(JOB, tmp_path / "t.parquet", _opts("raise ValueError('bad layer shape')"))
    assert meta.status == "error" and meta.error == "ValueError: bad layer shape"
    _, back = read_trace(tmp_path / "t.parquet")
    assert back.status == "error"


def test_script_oom_exit_code(tmp_path: Path) -> None:
    code = ("import resource, sys\nresource.setrlimit(resource.RLIMIT_AS, (2**28, 2**28))\n"
            "try:\n    bytearray(2**30)\nexcept MemoryError:\n    sys.exit(3)")
    assert run_job(JOB, tmp_path / "t.parquet", _opts(code)).status == "oom"


def test_timeout_kills_the_process_tree(tmp_path: Path) -> None:
    # The job spawns a grandchild that would outlive a plain kill of the root.
    marker = tmp_path / "alive"
    code = (f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', "
            f"\"import time; time.sleep(3); open({str(marker)!r}, 'w').write('x')\"])\n"
            "time.sleep(30)")
    meta = run_job(JOB, tmp_path / "t.parquet", _opts(code, timeout_s=1.0))
    assert meta.status == "timeout"
    assert 1.0 <= meta.exec_time_s < 8.0
    import time

    time.sleep(3.5)
    assert not marker.exists(), "grandchild survived the timeout"


def test_invalid_job_is_an_error(tmp_path: Path) -> None:
    code = "import sys; print('{\"status\": \"error\", \"error\": \"job file broken\"}'); sys.exit(2)"
    meta = run_job(JOB, tmp_path / "t.parquet", _opts(code))
    assert meta.status == "error" and meta.error == "job file broken"


@pytest.mark.parametrize("rc,status", [(0, "ok"), (1, "error"), (3, "oom"), (7, "error")])
def test_exit_code_mapping(tmp_path: Path, rc: int, status: str) -> None:
    meta = run_job(JOB, tmp_path / "t.parquet", _opts(f"import sys; sys.exit({rc})"))
    assert meta.status == status
