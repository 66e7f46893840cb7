"""gpuscope.slurm without a running Slurm: config text, placement, dependencies, records."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from gpuscope.core.errors import InputError
from gpuscope.slurm import daemons, procs
from gpuscope.slurm._cluster import load
from gpuscope.slurm.collect import gpu_overcommit, read_jobcomp, read_log
from gpuscope.slurm.config import Layout, gres_conf, slurm_conf
from gpuscope.slurm.submit import dependencies, place, read_plan, script_text

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "cluster-2types.toml"


@pytest.fixture(scope="module")
def cfg():
    return load(EXAMPLE)


def test_example_cluster_is_4_nodes_2_types_2_partitions(cfg):
    assert [s.name for s in cfg.servers] == ["a100-1", "a100-2", "v100-1", "v100-2"]
    assert cfg.type_counts() == {"a100": 8, "v100": 16}
    assert [p.name for p in cfg.partitions] == ["A100", "V100"]


def test_instances_fill_servers_in_file_order(cfg):
    # a100#0-3 on a100-1, a100#4-7 on a100-2; v100#0-7 on v100-1, v100#8-15 on v100-2
    assert [cfg.instance_node("a100", i).name for i in (0, 3, 4, 7)] == \
        ["a100-1", "a100-1", "a100-2", "a100-2"]
    assert cfg.instance_node("v100", 8).name == "v100-2"
    assert cfg.instance_offset("v100-2") == 8 and cfg.instance_offset("a100-1") == 0
    with pytest.raises(InputError, match="has 8 GPU"):
        cfg.instance_node("a100", 8)


def test_gpu_counts_is_the_allocators_view_of_a_cluster_file(cfg):
    from gpuscope.cluster.counts import ClusterSpec

    assert cfg.gpu_counts() == ClusterSpec(("a100", "v100"), (8, 16))
    assert ClusterSpec.from_arg(str(EXAMPLE)) == cfg.gpu_counts()
    assert ClusterSpec.from_arg("a100:2,v100") == ClusterSpec(("a100", "v100"), (2, 1))


def test_conf_text(cfg, tmp_path):
    lay = Layout(tmp_path, tmp_path / "munge")
    ports = {"a100-1": 1001, "a100-2": 1002, "v100-1": 1003, "v100-2": 1004}
    text = slurm_conf(cfg, lay, 1000, ports)
    assert "SlurmctldPort=1000" in text
    assert ("NodeName=v100-2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=1004 CPUs=80 "
            "RealMemory=524288 Gres=gpu:v100:8 State=UNKNOWN") in text
    assert "PartitionName=A100 Nodes=a100-1,a100-2 Default=YES MaxTime=INFINITE State=UP" in text
    assert "PartitionName=V100 Nodes=v100-1,v100-2 MaxTime=INFINITE State=UP" in text
    for key in ("SelectType=select/cons_tres", "ProctrackType=proctrack/linuxproc",
                "TaskPlugin=task/none", f"AuthInfo=socket={tmp_path}/munge/munge.socket",
                f"JobCompLoc={tmp_path}/jobcomp.txt"):
        assert key in text
    assert text == slurm_conf(cfg, lay, 1000, ports)  # deterministic
    g = gres_conf(cfg, lay).splitlines()
    assert g[0] == "AutoDetect=off"
    assert g[1] == f"NodeName=a100-1 Name=gpu Type=a100 File={tmp_path}/dev/a100-1-gpu[0-3]"


def _plan(rows):
    return pd.DataFrame(rows, columns=["job_id", "node", "gpus", "start_s", "finish_s"])


def test_dependencies_keep_node_order_transitively_reduced(cfg):
    df = place(_plan([
        ("a", "a100-1", 2, 0, 2), ("b", "a100-1", 2, 0, 3), ("c", "a100-1", 4, 3, 4),
        ("d", "a100-1", 1, 4, 5), ("e", "a100-2", 1, 0, 1), ("f", "a100-2", 1, 2, 3),
        ("g", "a100-1", 2, 2, 3)]), cfg)
    ids = list(df["job_id"])
    deps = {ids[j]: sorted(ids[k] for k in ks) for j, ks in enumerate(dependencies(df))}
    # c starts at 3 after a (ends 2), b (3) and g (3); g itself waits for a, so a is implied
    assert deps == {"a": [], "b": [], "e": [], "g": ["a"], "f": ["e"], "c": ["b", "g"],
                    "d": ["c"]}


def test_place_from_allocator_instances(cfg, tmp_path):
    p = tmp_path / "plan.csv"
    pd.DataFrame({"job_id": ["x", "y", "z"], "device": ["a100", "v100", "a100"],
                  "gpu": [5, 9, 0], "arrival_s": [0, 0, 0], "start_s": [0.0, 1.0, 2.0],
                  "finish_s": [3.0, 4.0, 5.0], "jct_s": [3, 4, 5],
                  "status": ["ok", "ok", "rejected"]}).to_csv(p, index=False)
    df = place(read_plan(p), cfg)
    assert list(df["job_id"]) == ["x", "y"]  # rejected jobs are not run
    assert list(df["node"]) == ["a100-2", "v100-2"]
    assert list(df["partition"]) == ["A100", "V100"]
    assert list(df["duration_s"]) == [3.0, 3.0]
    script = script_text(df.iloc[0].to_dict(), "sleep 3", Path("/x/%j.out"))
    assert "#SBATCH --gres=gpu:a100:1" in script and "#SBATCH --nodelist=a100-2" in script


def test_place_errors(cfg, tmp_path):
    with pytest.raises(InputError, match="asks for 5 GPU"):
        place(_plan([("a", "a100-1", 5, 0, 1)]), cfg)
    with pytest.raises(InputError, match="no server 'nope'"):
        place(_plan([("a", "nope", 1, 0, 1)]), cfg)
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"job_id": ["a", "a"], "node": ["a100-1", "a100-1"]}).to_csv(bad, index=False)
    with pytest.raises(InputError, match="appears twice"):
        read_plan(bad)
    mismatch = pd.DataFrame({"job_id": ["a"], "device": ["v100"], "node": ["a100-1"]})
    with pytest.raises(InputError, match="has a100 GPUs"):
        place(mismatch, cfg)


def test_records(tmp_path):
    comp = tmp_path / "jobcomp.txt"
    comp.write_text(
        "JobId=3 UserId=root(0) GroupId=root(0) Name=wrap JobState=COMPLETED Partition=V100 "
        "TimeLimit=525600 StartTime=2026-11-23T13:24:45 EndTime=2026-11-23T13:24:46 "
        "NodeList=n2 NodeCnt=1 ProcCnt=1 WorkDir=/tmp ReservationName= Tres=cpu=1 Account= "
        "ExitCode=0:0 \n")
    rec = read_jobcomp(comp)["3"]
    assert rec["JobState"] == "COMPLETED" and rec["NodeList"] == "n2"
    assert rec["ReservationName"] == "" and rec["StartTime"] == "2026-11-23T13:24:45"
    log = tmp_path / "j.out"
    log.write_text("gpuscope-slurm start=10.5 node=n2 gpus=0,1 slurm_job_id=3 job_id=a\n"
                   "hello\ngpuscope-slurm end=12.25 rc=0\n")
    assert read_log(log) == {"start": "10.5", "node": "n2", "gpus": "0,1",
                             "slurm_job_id": "3", "job_id": "a", "end": "12.25", "rc": "0"}


def test_gpu_overcommit_finds_violations():
    act = pd.DataFrame({"job_id": ["a", "b", "c", "d"], "node": ["n1", "n1", "n1", "n2"],
                        "gpus": [2, 2, 1, 1], "gpu_ids": ["0,1", "2,3", "0", "0"],
                        "start_epoch": [0.0, 0.0, 2.0, 0.0], "end_epoch": [2.0, 3.0, 3.0, 1.0]})
    # c starts exactly when a ends (half-open intervals): no violation, 4 GPUs at most
    assert gpu_overcommit(act, {"n1": 4, "n2": 1}) == []
    assert gpu_overcommit(act, {"n1": 3, "n2": 1}) == ["n1: 4 GPUs in use at once, has 3"]
    act.loc[2, "start_epoch"] = 1.5
    assert gpu_overcommit(act, {"n1": 8, "n2": 1}) == ["n1: GPU 0 held by a and c at once"]


def test_prereq_messages(monkeypatch):
    monkeypatch.setattr(daemons.os, "geteuid", lambda: 1000)
    assert "must run as root" in daemons.prereq_problem()
    monkeypatch.setattr(daemons.os, "geteuid", lambda: 0)
    monkeypatch.setattr(daemons.shutil, "which", lambda b, path=None: None)
    msg = daemons.prereq_problem()
    assert msg.startswith("missing Debian package(s) munge, slurm-client, slurmctld, slurmd")
    with pytest.raises(InputError, match="missing Debian package"):
        daemons.up(EXAMPLE, "/nonexistent")


def test_cli_errors_are_one_line(tmp_path, capsys):
    from gpuscope.cli import main

    assert main(["slurm", "collect", "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no slurm_submission.json" in err[0]
    assert main(["slurm", "down", "--state-dir", str(tmp_path)]) == 2
    assert "no gpuscope Slurm cluster" in capsys.readouterr().err


def test_job_commands(tmp_path):
    import json
    import sys

    from gpuscope.jobs.spec import JobSpec
    from gpuscope.slurm.submit import Workload, _command

    job = JobSpec("lenet", "cifar10", "sgd", 8, 1, steps_per_epoch=2, job_id="a")
    row = {"job_id": "a", "gpu_type": "v100", "node": "v100-1", "gpus": 2, "duration_s": 300.0}
    # the real job: its JobSpec written for the node, run by the workloads entry point
    cmd = _command(row, Workload(jobs={"a": job}), 1.0, tmp_path)
    assert cmd == f"{sys.executable} -m gpuscope.workloads.run --job {tmp_path / 'a.json'}"
    assert JobSpec.from_dict(json.loads((tmp_path / "a.json").read_text())) == job
    # a user template; a dry run sleeps the planned time x scale, at least 1 s
    t = Workload(command="train --gpus {gpus} --node {node} {job_id} {device}")
    assert _command(row, t, 1.0, tmp_path) == "train --gpus 2 --node v100-1 a v100"
    assert _command(row, Workload(dry=True), 0.01, tmp_path) == "sleep 3.000"
    assert _command(row, Workload(dry=True), 0.001, tmp_path) == "sleep 1.000"
    with pytest.raises(InputError, match="unknown placeholder"):
        _command(row, Workload(command="x {nope}"), 1.0, tmp_path)
    with pytest.raises(InputError, match="--dry-workload, --command or --jobs"):
        _command(row, Workload(), 1.0, tmp_path)


def test_multi_node_rows(cfg):
    plan = pd.DataFrame({"job_id": ["big", "small"], "node": ["v100-1;v100-2", "v100-2"],
                         "gpus": [16, 2], "cpus": [160, 8], "mem_gb": [1024, 64],
                         "start_s": [0.0, 5.0], "finish_s": [5.0, 6.0]})
    df = place(plan, cfg)
    script = script_text(df.iloc[0].to_dict(), "sleep 5", Path("/x/%j.out"))
    for opt in ("--nodelist=v100-1,v100-2", "--nodes=2", "--gres=gpu:v100:8",
                "--cpus-per-task=80", "--mem=524288M"):
        assert f"#SBATCH {opt}\n" in script
    assert dependencies(df) == [[], [0]]  # small shares v100-2 with big, after it
    with pytest.raises(InputError, match="asks for 15 GPU"):
        place(plan.assign(gpus=[15, 2]), cfg)
    with pytest.raises(InputError, match="differ in GPU type"):
        place(plan.assign(node=["a100-1;v100-2", "v100-2"]), cfg)


def test_time_scale_flag():
    from gpuscope.slurm.cli import time_scale
    from gpuscope.slurm.submit import auto_scale

    assert time_scale("auto") == "auto" and time_scale("auto:8") == "auto:8"
    assert time_scale("0.5") == 0.5
    for bad in ("auto:0", "auto:x", "-1", "fast"):
        with pytest.raises(InputError):
            time_scale(bad)
    df = pd.DataFrame({"finish_s": [100.0, 400.0]})
    assert auto_scale(df, 8.0) == 0.02 and auto_scale(df) == 0.15
    assert auto_scale(pd.DataFrame({"finish_s": [4.0]})) == 1.0  # never slower than the plan


def test_down_without_permission_is_one_line(monkeypatch):
    def deny(pid, sig):
        raise PermissionError

    monkeypatch.setattr(procs.os, "kill", deny)
    with pytest.raises(InputError, match="run `gpuscope slurm down` as root"):
        procs.send_signal(1, 15)
