"""Policies as a registry, makespan and its LP bound, online re-planning, traces and truth
tables, against answers worked out by hand or by brute force."""

from __future__ import annotations

import heapq
import itertools
import json

import numpy as np
import pandas as pd
import pytest

from gpuscope.allocator import ClusterSpec, JobDeviceTable
from gpuscope.allocator.allocate import allocate
from gpuscope.allocator.metrics import comparison_table
from gpuscope.allocator.online import simulate_online
from gpuscope.allocator.policies import POLICIES, list_schedule, makespan_lower_bound
from gpuscope.allocator.policies.makespan import lp_relaxation
from gpuscope.allocator.trace import generate_jobs, read_trace, write_trace
from gpuscope.allocator.truth_table import gavel_throughputs, read_truth_table
from gpuscope.cli import main
from gpuscope.core.errors import InputError

# Three jobs on one GPU of type a and one of type b (seconds).
T3 = np.array([[2.0, 4.0], [3.0, 1.0], [6.0, 3.0]])
C2 = ClusterSpec.parse("a:1,b:1")


def _tab(t: np.ndarray, devices: tuple[str, ...] = ("a", "b")) -> JobDeviceTable:
    ids = np.array([f"j{i}" for i in range(len(t))], dtype=object)
    return JobDeviceTable(ids, devices, {"exec_time_s": t}, np.ones(t.shape, bool), "measured")


def test_every_policy_is_one_registry_entry() -> None:
    assert {"ect", "exec-time", "comp-eff", "makespan", "mix", "ect-online"} <= set(POLICIES)
    assert all(p.name == n for n, p in POLICIES.items())


def test_three_jobs_two_types_by_hand() -> None:
    # By hand: the least sum of completion times puts j0 on a (2) and j1, j2 on b shortest
    # first (1, then 1 + 3 = 4): JCTs 2, 1, 4 -> 7/3 s, makespan 4 s. Every other split of
    # the 8 is worse (e.g. j2 on a: 2 + 8 + 1 = 11).
    r = allocate("ect", "sjf", C2, np.zeros(3), pred=_tab(T3), truth=_tab(T3))
    assert r.metrics.avg_jct_s == pytest.approx(7 / 3)
    assert list(r.placement.device) == [0, 1, 1]
    # Makespan: the 8 splits end at 8, 4, 7, 6, 5, 8, 9, 11: the best is 4 (same split).
    m = allocate("makespan", "plan", C2, np.zeros(3), pred=_tab(T3), truth=_tab(T3))
    assert m.metrics.makespan_s == pytest.approx(4.0)
    lb = makespan_lower_bound(T3, C2.counts)
    assert 3.0 <= lb <= 4.0 + 1e-9  # no schedule beats it; the longest shortest job is 3


def test_lp_bound_never_exceeds_a_feasible_makespan() -> None:
    rng = np.random.default_rng(3)
    c = ClusterSpec.parse("a:2,b:1")
    inst = c.instance_device
    for _ in range(6):
        t = rng.uniform(1, 20, (6, 2))
        best = np.inf
        for on in itertools.product(range(3), repeat=6):  # brute force over GPU instances
            load = np.zeros(3)
            for j, g in enumerate(on):
                load[g] += t[j, inst[g]]
            best = min(best, load.max())
        lb, x = lp_relaxation(t, c.counts)
        assert lb <= best + 1e-6
        assert np.allclose(x.sum(axis=1), 1.0)
        for p in ("makespan", "mix", "ect"):
            r = allocate(p, "plan", c, np.zeros(6), pred=_tab(t), truth=_tab(t))
            assert r.metrics.makespan_s >= lb - 1e-6
        mk = allocate("makespan", "plan", c, np.zeros(6), pred=_tab(t), truth=_tab(t))
        assert mk.metrics.makespan_s <= 1.05 * best  # the local search lands near the optimum


def test_list_schedule_equals_the_per_instance_reference() -> None:
    rng = np.random.default_rng(5)
    c = ClusterSpec.parse("a:2,b:3,c:1")
    t = rng.uniform(1, 9, (40, 3))
    t[rng.random(t.shape) < 0.1] = np.inf
    arr = np.sort(rng.uniform(0, 20, 40))
    order = np.argsort(rng.random(40))
    dev, start = list_schedule(t, arr, c, order)
    inst = c.instance_device  # reference: every GPU instance a candidate
    free = np.zeros(len(inst))
    for j in order:
        fin = np.maximum(free, arr[j]) + t[j, inst]
        g = int(np.argmin(fin))
        if np.isinf(fin[g]):
            assert dev[j] == -1
            continue
        assert dev[j] == inst[g] and start[j] == pytest.approx(fin[g] - t[j, inst[g]])
        free[g] = fin[g]


def test_online_replans_and_never_moves_a_running_job_without_preempt() -> None:
    # One GPU; j0 (10 s) at t=0, j1 (5 s) at 1, j2 (1 s) at 2. Re-planning at j0's end
    # takes the shortest first: j2 10-11, j1 11-16 -> JCTs 10, 15, 9.
    c = ClusterSpec.parse("a:1")
    t = np.array([[10.0], [5.0], [1.0]])
    arr = np.array([0.0, 1.0, 2.0])
    on = simulate_online(c, arr, t, t)
    assert list(on.finish) == [10.0, 16.0, 11.0]
    assert (on.preemptions == 0).all() and np.array_equal(on.start, on.first_start)
    # With preemption at no cost: j1 stops j0 at 1, j2 stops j1 at 2, then j1 (4 s left)
    # 3-7 and j0 (9 s left) 7-16 -> JCTs 16, 6, 1.
    on = simulate_online(c, arr, t, t, preempt=True, restart_s=np.zeros((3, 1)))
    assert list(on.finish) == [16.0, 7.0, 3.0]
    # A restart costs 2 s: j1 still stops j0 (9 > 5 + 2) and j2 stops j1 (4 > 1 + 2); j1
    # resumes at 3 (+2 s, 4 s left: 9), j0 at 9 (+2 s, 9 s left: 20).
    on = simulate_online(c, arr, t, t, preempt=True, restart_s=np.full((3, 1), 2.0))
    assert list(on.finish) == [20.0, 9.0, 3.0]
    assert list(on.preemptions) == [1, 1, 0]


def test_online_on_many_types_keeps_every_running_job_in_place() -> None:
    rng = np.random.default_rng(1)
    c = ClusterSpec.parse("a:2,b:2,c:1")
    est = rng.uniform(1, 50, (300, 3))
    actual = est * rng.lognormal(0, 0.3, est.shape)
    arr = np.sort(rng.uniform(0, 500, 300))
    on = simulate_online(c, arr, est, actual)
    assert (on.preemptions == 0).all()
    rows = np.arange(300)
    assert np.allclose(on.finish - on.start, actual[rows, on.device])  # ran where it started
    assert (on.start >= arr).all()
    for d, k in enumerate(c.counts):  # never two jobs on one GPU at once
        for g in range(k):
            js = np.flatnonzero((on.device == d) & (on.gpu == g))
            s, f = on.start[js], on.finish[js]
            o = np.argsort(s)
            assert (s[o][1:] >= f[o][:-1] - 1e-9).all()


class _PlainPlanner:
    """The planning rule written plainly: every waiting job in turn (at most 8 x GPUs) to the
    type where ``earliest predicted free time + time`` is least (ties: lowest type index);
    jobs planned on a free GPU start."""

    def __init__(self, plan_time: np.ndarray) -> None:
        self.plan_time = plan_time

    def update(self, j: int) -> None:
        pass

    def plan(self, t: float, waiting: list, avail: list) -> list[tuple[int, int]]:
        n_free = sum(1 for h in avail for a in h if a[1] == 0)
        starts: list[tuple[int, int]] = []
        for _, _, j in waiting[: 8 * sum(len(h) for h in avail)]:
            if n_free == 0:
                break
            best, bf = -1, np.inf
            for d, h in enumerate(avail):
                f = max(h[0][0], t) + self.plan_time[j, d]
                if f < bf:
                    best, bf = d, f
            if best < 0:
                continue
            _, busy, g = heapq.heapreplace(avail[best], (bf, 1, avail[best][0][2]))
            if busy == 0:
                starts.append((j, g))
                n_free -= 1
        return starts


@pytest.mark.parametrize("preempt", [False, True])
def test_online_planner_decides_as_the_plain_rule(monkeypatch, preempt: bool) -> None:
    """The replaying, block-scoring planner against the plain rule, schedule for schedule,
    on queues with ties (whole seconds), jobs that fit only some types and early/late jobs."""
    rng = np.random.default_rng(11)
    runs = []
    for it in range(60):
        k = int(rng.integers(1, 5))
        c = ClusterSpec(tuple(f"t{i}" for i in range(k)), tuple(rng.integers(1, 4, k).tolist()))
        n = int(rng.integers(1, 70))
        digits = 0 if it % 2 else 6
        est = np.round(rng.uniform(1, 20, (n, k)), digits)
        est[rng.random(est.shape) < 0.1] = np.inf
        noise = 1.0 if it % 4 == 0 else rng.lognormal(0, 0.3, est.shape)
        actual = np.where(np.isfinite(est), est * noise, np.inf)
        arr = np.round(np.sort(rng.uniform(0, 60, n)), digits)
        runs.append((c, arr, est, actual, rng.uniform(0, 3, (n, k))))
    out = []
    for planner in (None, _PlainPlanner):
        if planner is not None:
            monkeypatch.setattr("gpuscope.allocator.online.Planner", planner)
        out.append([simulate_online(c, a, e, x, preempt=preempt, restart_s=r)
                    for c, a, e, x, r in runs])
    for fast, plain in zip(*out):
        for f in ("device", "gpu", "first_start", "start", "finish", "preemptions"):
            assert np.array_equal(getattr(fast, f), getattr(plain, f), equal_nan=True), f


def test_trace_round_trips_in_both_layouts(tmp_path) -> None:
    tr = generate_jobs(20, {"A3C": 3.0, "ResNet-18 (batch size 32)": 30.0}, seed=2,
                       mean_gap_s=60.0)
    assert tr["total_steps"].gt(0).all() and tr["arrival_s"].is_monotonic_increasing
    for fields in (7, 10):
        back = read_trace(write_trace(tr, tmp_path / f"t{fields}.trace", fields=fields))
        assert back["job_type"].tolist() == tr["job_type"].tolist()
        assert np.allclose(back["total_steps"], tr["total_steps"])
        assert np.allclose(back["arrival_s"], tr["arrival_s"], atol=1e-6)
        assert back["job_id"].tolist() == [f"g{i}" for i in range(20)]


def test_gavel_throughputs_as_published(tmp_path) -> None:
    thr = {"v100": {"('LM (batch size 5)', 1)": {"null": 4.0, "('A3C', 1)": [1.0, 2.0]},
                    "('LM (batch size 5)', 2)": {"null": 7.0}},
           "k80": {"('LM (batch size 5)', 1)": {"null": 1.0}},
           "v100_unconsolidated": {"('LM (batch size 5)', 1)": {"null": 3.5}}}
    (tmp_path / "t.json").write_text(json.dumps(thr))
    th = gavel_throughputs(tmp_path / "t.json")
    assert sorted(zip(th["device"], th["steps_per_s"])) == [("k80", 1.0), ("v100", 4.0)]
    assert read_truth_table(tmp_path / "t.json").equals(th)


def test_idle_gpu_reads_idle_not_zero() -> None:
    c = ClusterSpec.parse("a:1,b:1")
    t = np.array([[1.0, 100.0], [1.0, 100.0]])
    r = allocate("exec-time", "fifo", c, np.zeros(2), pred=_tab(t), truth=_tab(t))
    row = comparison_table([("x", r.metrics)]).iloc[0]
    assert row["a"] == 1.5 and row["b"] == "idle"


def _gavel_files(tmp_path):
    thr = {d: {f"('{jt}', 1)": {"null": s * f} for jt, s in (("A3C", 2.0), ("LM (batch size 5)", 20.0))}
           for d, f in (("k80", 1.0), ("p100", 3.0), ("v100", 4.0))}
    (tmp_path / "thr.json").write_text(json.dumps(thr))
    tr = generate_jobs(30, {"A3C": 8.0, "LM (batch size 5)": 80.0}, seed=0, mean_gap_s=600.0)
    write_trace(tr, tmp_path / "jobs.trace")
    return tmp_path / "thr.json", tmp_path / "jobs.trace"


def test_cli_allocates_a_trace_on_gavel_truth(tmp_path, capsys) -> None:
    thr, trace = _gavel_files(tmp_path)
    out = tmp_path / "out"
    rc = main(["allocate", "--jobs", str(trace), "--truth", str(thr), "--cluster",
               "k80:2,p100:1,v100:1", "--policy", "ect,makespan,ect-online", "--order", "sjf",
               "--preempt", "--restart-s", "60", "-o", str(out)])
    assert rc == 0
    meta = json.loads((out / "metrics.json").read_text())
    assert "ground truth: measured" in meta["note"] and meta["jobs"] == 30
    runs = {r["policy"]: r for r in meta["runs"]}
    assert runs["ect-online"]["order"] == "online+preempt"
    plan = pd.read_csv(out / "plan_ect-online_online+preempt.csv")
    assert {"first_start_s", "preemptions"} <= set(plan.columns)
    # a table with the same numbers as CSV gives the same figures
    rows = [{"job_type": jt, "device": d, "steps_per_s": s}
            for d, e in json.loads(thr.read_text()).items() for k, v in e.items()
            for jt, s in [(k.split("'")[1], v["null"])]]
    pd.DataFrame(rows).to_csv(tmp_path / "thr.csv", index=False)
    rc = main(["allocate", "--jobs", str(trace), "--truth", str(tmp_path / "thr.csv"),
               "--cluster", "k80:2,p100:1,v100:1", "--policy", "ect", "--order", "sjf",
               "-o", str(tmp_path / "csv")])
    assert rc == 0
    again = json.loads((tmp_path / "csv" / "metrics.json").read_text())["runs"][0]
    assert again["avg_jct_s"] == pytest.approx(runs["ect"]["avg_jct_s"])


@pytest.mark.parametrize("case", ["fields", "truth-columns", "truth-missing", "no-truth"])
def test_bad_trace_or_truth_is_one_line_exit_2(tmp_path, capsys, case) -> None:
    thr, trace = _gavel_files(tmp_path)
    if case == "fields":
        trace.write_text("A3C\tx\t-\t0\t100\n")
    if case == "truth-columns":
        (tmp_path / "bad.csv").write_text("model,device,time\nA3C,k80,1\n")
        thr = tmp_path / "bad.csv"
    if case == "truth-missing":
        (tmp_path / "few.csv").write_text("job_type,device,steps_per_s\nA3C,k80,1\n")
        thr = tmp_path / "few.csv"
    argv = ["allocate", "--jobs", str(trace), "--cluster", "k80:1,v100:1", "-o",
            str(tmp_path / "o")] + ([] if case == "no-truth" else ["--truth", str(thr)])
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_truth_table_rejects_duplicates(tmp_path) -> None:
    (tmp_path / "d.csv").write_text("job_id,device,exec_time_s\na,k80,1\na,k80,2\n")
    with pytest.raises(InputError, match="two rows"):
        read_truth_table(tmp_path / "d.csv")
