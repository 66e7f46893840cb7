"""gpuscope schedule CLI, instance generation and reference-format files."""

from __future__ import annotations

import filecmp
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpuscope.cli import main
from gpuscope.core.tjng import JOBS_FILE, NODES_FILE, TIMES_FILE
from gpuscope.schedulers import load_problem, save_problem
from gpuscope.schedulers.instances import arrival_times, generate
from gpuscope.schedulers.results import SCHEDULE_COLUMNS

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "reference-instance"


def test_example_instance_runs_and_writes_back_unchanged(tmp_path: Path, capsys) -> None:
    p = load_problem(EXAMPLE)
    save_problem(p, tmp_path / "inst")
    for f in (JOBS_FILE, TIMES_FILE, NODES_FILE):
        assert filecmp.cmp(EXAMPLE / f, tmp_path / "inst" / f, shallow=False)
    q = load_problem(tmp_path / "inst")
    assert np.array_equal(p.T, q.T) and np.array_equal(p.node_rate, q.node_rate)
    assert main(["schedule", "--instance", str(EXAMPLE), "--method", "edf", "--full-log",
                 "-o", str(tmp_path / "out")]) == 0
    sched = pd.read_csv(tmp_path / "out" / "schedule.csv")
    assert tuple(sched.columns) == SCHEDULE_COLUMNS
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["total_cost"] == pytest.approx(sched.TotalCost.sum(), rel=1e-5)
    assert summary["result"] == "simulated" and summary["tjng_source"] == "unknown"


@pytest.mark.parametrize("breakage", ["missing", "header", "nonnumeric", "unknown_job"])
def test_bad_instance_exit_2_one_line(tmp_path: Path, capsys, breakage: str) -> None:
    d = tmp_path / "bad"
    d.mkdir()
    for f in EXAMPLE.iterdir():
        shutil.copyfile(f, d / f.name)
    if breakage == "missing":
        (d / TIMES_FILE).unlink()
    elif breakage == "header":
        (d / NODES_FILE).write_text("nodes\nn1\n")
    elif breakage == "nonnumeric":
        txt = (d / TIMES_FILE).read_text().replace("84777.9", "fast", 1)
        (d / TIMES_FILE).write_text(txt)
    else:
        (d / TIMES_FILE).write_text((d / TIMES_FILE).read_text() + "ZZ,Standard_NC6,K80,1,1,0.56,10\n")
    rc = main(["schedule", "--instance", str(d), "--method", "pr", "-o", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("gpuscope: error: ") and err.count("\n") == 1


@pytest.mark.parametrize("source", ["alexnet", "andreas", "gavel"])
def test_generate_then_schedule(tmp_path: Path, source: str) -> None:
    inst = tmp_path / "inst"
    assert main(["schedule", "generate", "--source", source, "--nodes", "2", "--jobs", "6",
                 "--seed", "4", "--arrivals", "high", "-o", str(inst)]) == 0
    p = load_problem(inst)
    assert p.n_jobs == 6 and p.n_nodes == 2
    fastest = p.T.min(axis=1)
    rel = p.due - p.submit
    assert np.all(rel >= fastest - 0.01) and np.all(rel <= 3 * fastest + 0.01)  # d_j ~ U(min t, 3 min t)
    assert np.all((p.weight >= 0.003) & (p.weight <= 0.015))
    assert p.fixed == (source == "andreas")
    assert main(["schedule", "--instance", str(inst), "--method", "rg", "--max-it", "20",
                 "-o", str(tmp_path / "out")]) == 0
    jobs = pd.read_csv(tmp_path / "out" / "jobs.csv")
    assert jobs.completion_s.notna().all()


def test_generator_same_seed_same_instance(tmp_path: Path) -> None:
    a = generate("alexnet", 3, seed=5)
    b = generate("alexnet", 3, seed=5)
    pd.testing.assert_frame_equal(a.instance.jobs, b.instance.jobs)
    pd.testing.assert_frame_equal(a.instance.times, b.instance.times)
    assert a.n_jobs == 30  # J = 10 N


def test_exponential_arrivals_mean() -> None:
    t = arrival_times("exponential", 20_000, 50, np.array([1000.0]), 8, np.random.default_rng(0))
    assert t[0] == 0 and np.all(np.diff(t) >= 0)
    assert np.diff(t).mean() == pytest.approx(75000 / 50, rel=0.03)  # mean 75000/N s
    hi = arrival_times("high", 5000, 50, np.array([1000.0]), 8, np.random.default_rng(0))
    lo = arrival_times("low", 5000, 50, np.array([1000.0]), 8, np.random.default_rng(0))
    assert np.diff(lo).mean() == pytest.approx(4 * np.diff(hi).mean(), rel=0.1)  # low = high / 4


def test_generate_from_any_tjng_dataframe() -> None:
    t = pd.DataFrame({"job_id": ["a", "a", "b"], "node_type": ["T4", "T4", "T4"], "n_gpus": [1, 2, 1],
                      "exec_time_s": [4000.0, 2500.0, 9000.0], "cost_per_h": [0.35, 0.7, 0.35],
                      "source": "predicted:test"})
    p = generate(t, 2, seed=0, n_jobs=5)
    assert p.n_jobs == 5 and set(p.vm_names) == {"T4x1", "T4x2"}
    assert set(np.unique(np.round(p.T[np.isfinite(p.T)]))) <= {4000.0, 2500.0, 9000.0}
