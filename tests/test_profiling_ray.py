"""Ray backend on a local Ray instance (CPU): tasks stream results into the driver's ledger."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gpuscope.core.errors import InputError
from gpuscope.jobs.spec import JobSpec
from gpuscope.profiling import Ledger, RunOptions, label_runs, read_trace


@pytest.mark.ray
def test_ray_backend_local_cpu(tmp_path: Path) -> None:
    import ray

    from gpuscope.profiling.backends.ray import gpu_type_resource, run_campaign_ray

    jobs = [JobSpec("lenet", "cifar10", o, b, 1, steps_per_epoch=2)
            for o in ("sgd", "adam") for b in (8, 16)]
    # Job 3 fails on purpose: an error is a recorded result, not a lost task.
    code = ("import json, sys, time\njob = json.load(open(sys.argv[1]))\ntime.sleep(0.5)\n"
            "sys.exit(1 if job['optimizer'] == 'adam' and job['batch_size'] == 16 else 0)")
    opts = RunOptions(device_name="cpu-ray", period_s=0.1, timeout_s=60, use_nvml=False,
                      command=(sys.executable, "-c", code, "{job}"))
    out = tmp_path / "runs"
    broken = RunOptions(device_name="cpu-ray", period_s=0.1, timeout_s=60, use_nvml=False,
                        busy_probe_s=0.0,
                        command=(sys.executable, "-c", "import sys; sys.exit('no GPU here')"))
    try:
        counts = run_campaign_ray(jobs, out, opts, init_kwargs={"num_cpus": 2}, progress=False)
        # every run failing alike at start-up aborts with one line, records nothing
        with pytest.raises(InputError, match="environment failure.*no GPU here"):
            run_campaign_ray(jobs, tmp_path / "broken", broken, progress=False)
    finally:
        ray.shutdown()
    with Ledger(tmp_path / "broken" / "ledger.sqlite") as led:
        assert len(led) == 0
    assert counts == {"ok": 3, "error": 1}
    with Ledger(out / "ledger.sqlite") as led:
        runs = led.runs()
    assert sorted(runs["run_id"]) == sorted(j.key for j in jobs)
    for tp in runs["trace_path"]:
        df, meta = read_trace(tp)
        assert meta.device == "cpu-ray" and "gpu_util" not in df.columns
        assert meta.exec_time_s >= 0.5
    labels = label_runs(out)
    assert len(labels) == 4 and set(labels["status"]) == {"ok", "error"}
    assert gpu_type_resource("h100") == "gpu_type:h100"
