"""Integration: a throwaway Slurm (examples/cluster-2types.toml: 4 nodes, 2 GPU types,
2 partitions) runs a 20-job plan; what Slurm records must match the plan.

Needs root and the Debian packages slurmctld, slurmd, slurm-client, munge (``.ci/run``
installs them when it runs as root); otherwise every test here skips with the reason. The
cluster fixture's finalizer stops every daemon even when a test fails.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from gpuscope.core.errors import SlurmError
from gpuscope.slurm import daemons
from gpuscope.slurm.collect import collect, gpu_overcommit
from gpuscope.slurm.submit import submit

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "cluster-2types.toml"
PROBLEM = daemons.prereq_problem()
pytestmark = pytest.mark.skipif(PROBLEM is not None, reason=f"no local Slurm: {PROBLEM}")

# 20 jobs: (job_id, node, gpus, planned start, planned finish) in seconds. Every node is full
# at some instant (a100-2 at t=1-2: 1+1+2 = 4 GPUs; v100-1 at 0-2: 8; v100-2 at 2-3: 2+6 = 8),
# so a scheduler that ignored the plan's order or the GPU counts would show in the records.
PLAN20 = [
    ("j01", "a100-1", 2, 0, 2), ("j02", "a100-1", 2, 0, 2), ("j03", "a100-1", 4, 2, 4),
    ("j04", "a100-1", 1, 4, 5), ("j05", "a100-1", 3, 4, 6),
    ("j06", "a100-2", 1, 0, 3), ("j07", "a100-2", 1, 0, 1), ("j08", "a100-2", 1, 1, 2),
    ("j09", "a100-2", 2, 1, 3), ("j10", "a100-2", 4, 3, 4),
    ("j11", "v100-1", 8, 0, 2), ("j12", "v100-1", 4, 2, 4), ("j13", "v100-1", 4, 2, 3),
    ("j14", "v100-1", 4, 3, 5),
    ("j15", "v100-2", 1, 0, 1), ("j16", "v100-2", 8, 1, 2), ("j17", "v100-2", 2, 2, 3),
    ("j18", "v100-2", 6, 2, 4), ("j19", "v100-2", 2, 3, 4), ("j20", "v100-2", 8, 4, 5),
]


def _live(st: daemons.ClusterState) -> list[int]:
    return [p for p in st.pids.values() if daemons.alive(p, st.root)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("slurm-state")
    st = daemons.up(EXAMPLE, root)
    try:
        yield st
    finally:
        daemons.down(root)
        assert _live(st) == []


@pytest.fixture(scope="module")
def run20(cluster, tmp_path_factory):
    out = tmp_path_factory.mktemp("plan20")
    plan = pd.DataFrame(PLAN20, columns=["job_id", "node", "gpus", "start_s", "finish_s"])
    plan.to_csv(out / "plan20.csv", index=False)
    sub, meta = submit(out / "plan20.csv", out, state_dir=cluster.root, dry_workload=True,
                       time_scale=1.0)
    sub2, res = collect(out, timeout_s=90, progress=False)
    return out, plan, sub2, res


def test_all_daemons_up(cluster):
    assert set(cluster.pids) == {"munged", "slurmctld", "slurmd:a100-1", "slurmd:a100-2",
                                 "slurmd:v100-1", "slurmd:v100-2"}
    assert len(_live(cluster)) == 6


def test_plan20_runs_as_planned(run20):
    out, plan, sub, res = run20
    act = res.actual.set_index("job_id")
    assert res.complete and (act["slurm_state"] == "COMPLETED").all()
    assert len(act) == 20
    # placement equal to the plan, and the cluster file's node GPU counts never exceeded
    assert (act.loc[plan["job_id"], "node"].to_numpy() == plan["node"].to_numpy()).all()
    assert res.comparison.placement_agree == 20
    assert res.violations == []
    node_gpus = {"a100-1": 4, "a100-2": 4, "v100-1": 8, "v100-2": 8}
    assert gpu_overcommit(res.actual, node_gpus) == []
    # each job got as many distinct GPU indices as it asked for, within its node
    for r in res.actual.to_dict("records"):
        ids = [int(i) for i in r["gpu_ids"].split(",")]
        assert len(set(ids)) == r["gpus"] and max(ids) < node_gpus[r["node"]]
    # order kept: a job starts only after the jobs the plan finishes before it on its node
    for j in plan.itertuples():
        before = plan[(plan["node"] == j.node) & (plan["finish_s"] <= j.start_s)]
        if len(before):
            assert act.loc[j.job_id, "start_epoch"] >= act.loc[before["job_id"], "end_epoch"].max()
    # the record file is new, the plan untouched; ids recorded
    assert (out / "slurm_plan20.csv").is_file()
    assert pd.read_csv(out / "plan20.csv").shape == (20, 5)
    assert sub["slurm_job_id"].notna().all()
    # the makespan is the planned one plus Slurm's scheduling latency, not more
    assert 6.0 <= res.comparison.makespan_actual_s < 6.0 + 20.0


def test_second_up_in_same_state_dir_refused(cluster):
    with pytest.raises(SlurmError, match="already up"):
        daemons.up(EXAMPLE, cluster.root)


def test_failed_up_stops_every_daemon(tmp_path):
    with pytest.raises(SlurmError, match="timed out"):
        daemons.up(EXAMPLE, tmp_path / "s", timeout_s=0.0)
    st = daemons.load_state(tmp_path / "s")
    assert st is not None and st.pids and _live(st) == []
    if Path(st.munge_dir).parent == Path("/run"):  # nothing left outside the state folder
        assert not Path(st.munge_dir).exists()


def test_cli_up_down(tmp_path, capsys):
    from gpuscope.cli import main

    state = str(tmp_path / "cli")
    assert main(["slurm", "up", "--cluster", str(EXAMPLE), "--state-dir", state]) == 0
    out = capsys.readouterr().out
    assert "4 node(s)" in out and "export SLURM_CONF=" in out
    st = daemons.load_state(state)
    try:
        assert len(_live(st)) == 6
    finally:
        assert main(["slurm", "down", "--state-dir", state]) == 0
    assert _live(st) == []
    assert "stopped: slurmd:a100-1" in capsys.readouterr().out
    if Path(st.munge_dir).parent == Path("/run"):  # a private munge folder is removed
        assert not Path(st.munge_dir).exists()


@pytest.mark.slow
def test_allocate_submit_collect_cli(cluster, tmp_path, capsys):
    """The issue's "done when": allocate table8 with ECT on the cluster file, submit as a dry
    workload, collect: every job on its planned node."""
    from gpuscope.cli import main

    out = str(tmp_path / "out")
    assert main(["allocate", "--jobs", "table8", "--cluster", str(EXAMPLE), "--policy", "ect",
                 "--submit", "slurm", "--dry-workload", "--time-scale", "auto:8",
                 "--slurm-state-dir", cluster.root, "-o", out]) == 0
    assert "submitted 6 job(s)" in capsys.readouterr().out
    plan = pd.read_csv(Path(out) / "plan_ect_fifo.csv")
    assert main(["slurm", "collect", "-o", out, "--timeout-s", "60"]) == 0
    text = capsys.readouterr().out
    assert "placement agreement: 6/6 jobs on their planned node" in text
    assert "GPU capacity per the records: never exceeded" in text
    act = pd.read_csv(Path(out) / "slurm_actual.csv")
    assert list(act["device"]) == list(plan.sort_values(["start_s", "finish_s"])["device"])


@pytest.mark.slow
def test_mdrl_export_submit(tmp_path, capsys):
    """seed 003's Fig. 3 plan on the bundled GIST AI-X cluster, multi-server f-flavor jobs
    included (--nodes=2, gpu:a100:8 on each), run as a dry workload and read back."""
    from gpuscope.cli import main

    state = str(tmp_path / "gist")
    daemons.up("gist-aix", state)
    try:
        out = str(tmp_path / "out")
        assert main(["mdrl", "export", "--cluster", "gist-aix", "--partitions", "A100,V100",
                     "--submit", "slurm", "--dry-workload", "--time-scale", "auto:8",
                     "--slurm-state-dir", state, "-o", out]) == 0
        assert "submitted 10 job(s)" in capsys.readouterr().out
        # the jobs last seconds; the wait only ends early, and a loaded machine starts them late
        sub, res = collect(out, timeout_s=240, progress=False)
    finally:
        daemons.down(state)
    assert res.complete and res.comparison.placement_agree == 10
    assert res.violations == []
    multi = res.actual[res.actual["node"].str.contains(";")]
    assert sorted(multi["node"]) == ["dgx-a100-1;dgx-a100-2", "dgx1v-1;dgx1v-2"]
    assert (multi["gpus"] == 16).all()
    script = (Path(out) / "slurm" / "scripts" / "a100-j4.sbatch").read_text()
    assert "#SBATCH --nodes=2" in script and "#SBATCH --gres=gpu:a100:8" in script
