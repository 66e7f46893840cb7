"""gpuscope mdrl CLI: fig3, eval, export (sbatch / Kubernetes / Kueue parsed), train, errors."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from gpuscope.cli import main


def test_fig3_prints_both_makespans(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mdrl", "fig3"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"first-fit\s+\(1, 1, 2, 1\)\s+32\.0\s+0\.715", out)
    assert re.search(r"oracle\s+\(1, 2, 2, 1\)\s+27\.0\s+0\.847", out)


def _sbatch(path: Path) -> dict[str, str]:
    opts = {}
    for line in path.read_text().splitlines():
        if line.startswith("#SBATCH --"):
            k, _, v = line[len("#SBATCH --"):].partition("=")
            opts[k] = v
    return opts


def test_export_slurm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mdrl", "export", "--format", "slurm", "--partitions", "A100",
                 "-o", str(tmp_path)]) == 0
    plan = pd.read_csv(tmp_path / "plan.csv")
    for col in ("job_id", "partition", "servers", "gpus", "cpus", "mem_gb", "time_limit_s",
                "start_order"):
        assert col in plan.columns
    assert list(plan["start_order"]) == [1, 2, 3, 4, 5]
    files = sorted((tmp_path / "slurm").glob("*.sbatch"))
    assert len(files) == 5
    s = _sbatch(files[0])                              # job 0: s-A100 on dgx-a100-1 (oracle)
    assert s == {"job-name": "a100-j0", "partition": "A100", "nodelist": "dgx-a100-1",
                 "nodes": "1", "gres": "gpu:a100:2", "ntasks": "1", "cpus-per-task": "64",
                 "mem": "256G", "time": "72:00:00"}
    f = _sbatch(files[-1])                             # f-A100: both servers, 8 GPUs each
    assert f["nodes"] == "2" and f["gres"] == "gpu:a100:8" and f["time"] == "504:00:00"
    assert f["nodelist"] == "dgx-a100-1,dgx-a100-2" and f["mem"] == "1024G"
    assert int(f["ntasks-per-node"]) * int(f["cpus-per-task"]) * 2 == 512
    assert "horovod" in files[-1].read_text().lower()


def test_export_k8s_kueue(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml")
    assert main(["mdrl", "export", "--format", "k8s", "--kueue", "--partitions", "V100",
                 "-o", str(tmp_path)]) == 0
    jobs = [yaml.safe_load(p.read_text()) for p in sorted((tmp_path / "k8s").glob("0*.yaml"))]
    assert len(jobs) == 5 and all(j["apiVersion"] == "batch/v1" and j["kind"] == "Job"
                                  for j in jobs)
    first = jobs[0]
    pod = first["spec"]["template"]["spec"]
    assert pod["nodeName"] == "dgx1v-1"
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 2, "cpu": 20,
                                                           "memory": "128Gi"}
    assert first["spec"]["activeDeadlineSeconds"] == 72 * 3600
    last = jobs[-1]["spec"]
    assert last["completions"] == 2 and last["completionMode"] == "Indexed"
    terms = last["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == ["dgx1v-1", "dgx1v-2"]
    kq = list(yaml.safe_load_all((tmp_path / "k8s" / "kueue.yaml").read_text()))
    assert [o["kind"] for o in kq] == ["ResourceFlavor", "ClusterQueue", "LocalQueue"]
    quota = {r["name"]: r["nominalQuota"]
             for r in kq[1]["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}
    assert quota == {"cpu": 160, "memory": "1024Gi", "nvidia.com/gpu": 16}


@pytest.mark.slow  # torch + matplotlib imports and a tiny training: ~5 s idle, ~15 s at load 12
def test_train_eval_tiny(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    import torch

    assert main(["mdrl", "train", "--partitions", "A100", "--episodes", "8", "--quiet",
                 "--batch", "8", "-o", str(tmp_path)]) == 0
    ck = torch.load(tmp_path / "A100.pt", weights_only=True)
    assert ck["meta"]["partition"] == "A100" and ck["n_actions"] == 9   # 3*2 + 3 (§5.1)
    assert (tmp_path / "learning_curve.png").stat().st_size > 0
    assert len(pd.read_csv(tmp_path / "train.csv")) == 8
    capsys.readouterr()
    assert main(["mdrl", "eval", "--partitions", "A100", "--model-dir", str(tmp_path),
                 "--episodes", "3", "--quiet", "-o", str(tmp_path / "ev")]) == 0
    out = capsys.readouterr().out
    assert "dqn" in out and "oracle" in out
    ev = pd.read_csv(tmp_path / "ev" / "eval.csv")
    assert set(ev["policy"]) >= {"dqn", "oracle", "first-fit", "random-pinned"}
    # the oracle is clairvoyant over pinned placements: never below first-fit on an episode
    piv = ev.pivot_table(index="episode", columns="policy", values="u_term")
    assert (piv["oracle"] >= piv["first-fit"] - 1e-9).all()


@pytest.mark.parametrize("argv", [
    ["mdrl", "eval", "--cluster", "nope"],
    ["mdrl", "eval", "--partitions", "H100"],
    ["mdrl", "eval", "--iat", "-1"],
    ["mdrl", "eval", "--policies", "magic"],
    ["mdrl", "eval", "--durations", "tjng"],
    ["mdrl", "eval", "--model-dir", "/nonexistent"],
])
def test_bad_input_one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpuscope: error:") and err.count("\n") == 1


def test_training_is_deterministic() -> None:
    torch = pytest.importorskip("torch")
    from gpuscope.cluster.config import default_cluster
    from gpuscope.mdrl.agent import DQNConfig
    from gpuscope.mdrl.simulate import EpisodeSampler, partition_from_cluster
    from gpuscope.mdrl.train import partition_env, train_agent

    part = partition_from_cluster(default_cluster(), "V100")
    cfg = DQNConfig(batch=8, val_every=5, val_episodes=5)
    runs = [train_agent(partition_env(part, EpisodeSampler(part), state="full"), 12, cfg,
                        seed=4, progress=False) for _ in range(2)]
    assert runs[0].u_term == runs[1].u_term and runs[0].val == runs[1].val
    for a, b in zip(runs[0].agent.q.parameters(), runs[1].agent.q.parameters()):
        assert torch.equal(a, b)


QUEUE = ("job_id,model,dataset,optimizer,batch_size,epochs,arrival_s\n"
         "x,lenet,cifar10,sgd,32,1,0\ny,lenet,cifar10,sgd,32,1,3600\n"
         "z,resnet20,cifar10,sgd,32,1,7200\nf,resnet50,imagenet,sgd,32,1,36000\n")


def test_queue_episodes_take_arrivals_and_own_run_times(tmp_path: Path) -> None:
    """A queue fixes the episode's arrivals (hours from the first) and its terminal job; with
    a t_jng table of the queue each job gets its own scaled run time and the smallest flavor
    whose limit holds it (A100 limits: s 72 h, m 168 h, l 336 h)."""
    import numpy as np

    from gpuscope.cluster.config import default_cluster
    from gpuscope.jobs.queue import read_queue
    from gpuscope.mdrl.extensions import QueueEpisodes, TjngDurations
    from gpuscope.mdrl.simulate import partition_from_cluster

    (tmp_path / "q.csv").write_text(QUEUE)
    jobs = tuple(read_queue(tmp_path / "q.csv"))
    part = partition_from_cluster(default_cluster(), "A100")
    ep = QueueEpisodes(part, jobs)(np.random.default_rng(0))
    assert [j.arrival_h for j in ep.jobs] == [0.0, 1.0, 2.0, 10.0]
    assert ep.jobs[-1].flavor == part.multi[-1] and all(j.flavor in part.single
                                                        for j in ep.jobs[:-1])
    # 8-GPU times (h) x .05, y .2, z .9, f 1.1 and three 1.0 fillers: median 1, so the
    # scale is the l limit, 336; on g GPUs a job takes t x 8 / g. x: s 0.2 x 336 = 67.2 <= 72;
    # y: s 268.8 > 72, m 134.4 <= 168; z: s, m too long, l 302.4 <= 336
    times = {"x": .05, "y": .2, "z": .9, "f": 1.1, "w1": 1.0, "w2": 1.0, "w3": 1.0}
    table = pd.DataFrame([{"job_id": j, "node_type": "a100", "n_gpus": g,
                           "exec_time_s": 3600.0 * t * 8 / g}
                          for j, t in times.items() for g in (2, 4, 8, 16)])
    ep = QueueEpisodes(part, jobs, TjngDurations(table))(np.random.default_rng(0))
    assert [j.flavor for j in ep.jobs[:-1]] == [0, 1, 2]
    assert [j.duration_h for j in ep.jobs[:-1]] == pytest.approx([67.2, 134.4, 302.4])


def test_train_on_a_queue_prints_the_held_out_figure(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    (tmp_path / "q.csv").write_text(QUEUE)
    assert main(["mdrl", "train", "--jobs", str(tmp_path / "q.csv"), "--partitions", "A100",
                 "--episodes", "6", "--batch", "8", "--quiet", "-o", str(tmp_path / "m")]) == 0
    out = capsys.readouterr().out
    assert "test U_term: DQN" in out and "first-fit" in out
    assert main(["mdrl", "train", "--jobs", str(tmp_path / "q.csv"), "--arrivals", "gavel",
                 "-o", str(tmp_path / "m2")]) == 2
    assert main(["mdrl", "train", "--jobs", str(tmp_path / "nope.csv"),
                 "-o", str(tmp_path / "m3")]) == 2
