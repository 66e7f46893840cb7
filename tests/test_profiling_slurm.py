"""Profiling campaigns on a throwaway Slurm: one sbatch per run, on a node of the requested
GPU type, results through the one ledger; resumable when the campaign or a job dies.

Needs root and the Slurm/munge Debian packages (else skipped with the reason).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from gpuscope.jobs.spec import JobSpec
from gpuscope.profiling import Ledger, RunOptions, read_trace
from gpuscope.slurm import daemons
from gpuscope.slurm.collect import read_jobcomp

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "cluster-2types.toml"
PROBLEM = daemons.prereq_problem()
pytestmark = pytest.mark.skipif(PROBLEM is not None, reason=f"no local Slurm: {PROBLEM}")

# The job: sleep briefly and report the GPU Slurm gave it. adam/16 fails on purpose (a recorded
# error); sgd/16 cancels its own Slurm job the first time (a job that dies: no result, left
# pending), and succeeds when run again.
CODE = """import json, os, subprocess, sys, time
job = json.load(open(sys.argv[1]))
marker = sys.argv[2] + '/cancelled-once'
if job['optimizer'] == 'sgd' and job['batch_size'] == 16 and not os.path.exists(marker):
    open(marker, 'w').close()
    subprocess.run(['scancel', os.environ['SLURM_JOB_ID']])
    time.sleep(30)
time.sleep(0.3)
print(json.dumps({'gpus': os.environ.get('SLURM_JOB_GPUS'), 'node': os.environ.get('SLURMD_NODENAME')}))
sys.exit(1 if job['optimizer'] == 'adam' and job['batch_size'] == 16 else 0)
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("slurm-prof")
    st = daemons.up(EXAMPLE, root)
    try:
        yield st
    finally:
        daemons.down(root)
        assert not [p for p in st.pids.values() if daemons.alive(p, st.root)]


def test_campaign_on_slurm_resumes(cluster, tmp_path):
    from gpuscope.profiling.backends.slurm import run_campaign_slurm

    jobs = [JobSpec("lenet", "cifar10", o, b, 1, steps_per_epoch=2)
            for o in ("sgd", "adam") for b in (8, 16)]
    out = tmp_path / "runs"
    opts = RunOptions(device_name="v100", period_s=0.1, timeout_s=60, use_nvml=False,
                      command=(sys.executable, "-c", CODE, "{job}", str(tmp_path)))
    # 1) the campaign "dies" right after submitting (wait=False): nothing recorded yet
    c0 = run_campaign_slurm(jobs, out, opts, gpus=1, state_dir=cluster.root, wait=False,
                            progress=False)
    assert sum(c0.values()) == 0
    first_ids = json.loads((out / "slurm" / "inflight.json").read_text())
    assert len(first_ids) == 4
    # 2) a new campaign adopts the queued/running jobs instead of resubmitting them
    c1 = run_campaign_slurm(jobs, out, opts, gpus=1, state_dir=cluster.root, progress=False)
    assert c1 == {"ok": 2, "error": 1, "lost": 1}
    with Ledger(out / "ledger.sqlite") as led:
        assert len(led) == 3
        done = led.done_ids()
    lost = [j for j in jobs if j.key not in done]
    assert [(j.optimizer, j.batch_size) for j in lost] == [("sgd", 16)]
    # 3) the lost run is still pending: the next campaign runs it
    c2 = run_campaign_slurm(lost, out, opts, gpus=1, state_dir=cluster.root, progress=False)
    assert c2 == {"ok": 1}
    with Ledger(out / "ledger.sqlite") as led:
        runs = led.runs()
    assert sorted(runs["run_id"]) == sorted(j.key for j in jobs)
    # one sbatch per run (+1 for the rerun), each on a v100 node, never resubmitted on adopt.
    # The result is ingested as soon as the worker wrote it; Slurm logs the job's end a moment
    # later, so wait for the completion log to catch up.
    ids = sorted(first_ids.values(), key=int)
    for _ in range(100):
        comp = read_jobcomp(cluster.layout.jobcomp)
        if len([i for i in comp if int(i) >= int(ids[0])]) >= 5:
            break
        time.sleep(0.1)
    assert len([i for i in comp if int(i) >= int(ids[0])]) == 5
    for sid in ids:
        assert comp[sid]["NodeList"].startswith("v100-")
    for tp in runs["trace_path"]:
        path = Path(tp) if Path(tp).is_absolute() else out / tp
        df, meta = read_trace(path)
        assert meta.device == "v100" and meta.exec_time_s >= 0.3
    assert not list((out / "slurm" / "results").glob("*.parquet"))  # all moved to traces/


def test_cli_backend_slurm(cluster, tmp_path):
    from gpuscope.cli import main

    camp = tmp_path / "c.toml"
    camp.write_text('[campaign]\nname = "tiny"\ntimeout_s = 60\nperiod_s = 0.1\n'
                    'optimizers = ["sgd"]\nbatch_sizes = [8]\nepochs = [1]\n[[matrix]]\n'
                    'models = ["lenet"]\ndatasets = ["cifar10"]\nsteps_per_epoch = 2\n')
    out = tmp_path / "runs"
    cmd = f"{sys.executable} -c 'import sys; sys.exit(0)' {{job}}"
    rc = main(["profile", "run", str(camp), "--device-name", "a100", "--out", str(out),
               "--backend", "slurm", "--gpus", "1", "--no-nvml", "--slurm-state-dir",
               cluster.root, "--command", cmd, "--quiet"])
    assert rc == 0
    with Ledger(out / "ledger.sqlite") as led:
        assert len(led) == 1 and set(led.runs()["status"]) == {"ok"}


def test_environment_failure_cancels_the_rest(cluster, tmp_path):
    """Every run fails at start-up with the same message: after the first 3 results the
    campaign stops with one line, cancels the jobs still queued, and records nothing."""
    from gpuscope.core.errors import InputError
    from gpuscope.profiling.backends.slurm import run_campaign_slurm

    jobs = [JobSpec("lenet", "cifar10", "sgd", b, 1, steps_per_epoch=2) for b in range(1, 9)]
    out = tmp_path / "runs"
    code = "import sys, time; time.sleep(0.2); sys.exit('no GPU here')"
    opts = RunOptions(device_name="v100", period_s=0.1, timeout_s=60, use_nvml=False,
                      command=(sys.executable, "-c", code, "{job}"))
    with pytest.raises(InputError, match="environment failure.*no GPU here"):
        run_campaign_slurm(jobs, out, opts, gpus=1, state_dir=cluster.root, progress=False,
                           poll_s=0.2)
    with Ledger(out / "ledger.sqlite") as led:
        assert len(led) == 0
    assert json.loads((out / "slurm" / "inflight.json").read_text()) == {}
    assert not list((out / "traces").glob("*.parquet"))
