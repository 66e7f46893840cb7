"""gpuscope.schedulers: simulation invariants (property-based), EDF by hand, determinism."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuscope.core.tjng import Instance, tjng_to_instance
from gpuscope.schedulers import METHODS, Params, compile_instance, make_method, simulate
from gpuscope.schedulers.greedy import construct
from gpuscope.schedulers.step import Decision, StepState, f_obj


def small_problem(seed: int, n_jobs: int, n_nodes: int, fixed: bool, **params):
    """A random instance: node types A (2 GPUs) and B (1 GPU), times 100–5000 s; ``params``
    replace fields of the default :class:`Params`."""
    rng = np.random.default_rng(seed)
    rows, meta = [], []
    for j in range(n_jobs):
        a1, b1 = rng.uniform(100, 5000, 2)
        rows += [(f"j{j}", "A", 1, a1), (f"j{j}", "A", 2, a1 * rng.uniform(0.5, 1.0)), (f"j{j}", "B", 1, b1)]
        sub = float(rng.uniform(0, 3000))
        tmin = min(a1, b1)
        meta.append((f"j{j}", round(sub, 2), round(sub + rng.uniform(tmin * 0.3, 3 * tmin), 2),
                     rng.uniform(0.003, 0.015)))
    t = pd.DataFrame(rows, columns=["job_id", "node_type", "n_gpus", "exec_time_s"])
    t["exec_time_s"] = t["exec_time_s"].round(2)
    t["source"] = "test"
    t["cost_per_h"] = t["node_type"].map({"A": 1.2, "B": 0.5}) * np.where(fixed, t["n_gpus"], 1)
    meta = pd.DataFrame(meta, columns=["job_id", "submission_s", "due_s", "weight"])
    if fixed:  # ANDREAS-style: fixed node types, cost per busy-GPU count
        times = pd.DataFrame({"UniqueJobsID": t.job_id, "VMtype": t.node_type + "n",
                              "GPUtype": t.node_type, "nGPUs": t.n_gpus,
                              "max_nGPUs": t.node_type.map({"A": 2, "B": 1}), "cost": t.cost_per_h,
                              "ExecutionTime": t.exec_time_s})
        base = tjng_to_instance(t, meta, n_nodes=n_nodes)
        inst = Instance(jobs=base.jobs, times=times, nodes=base.nodes)
        types = ["An" if i % 2 == 0 else "Bn" for i in range(n_nodes)]
        params = {"max_it_rg": 15, **params, "cost_model": "per_gpu_count"}
        return compile_instance(inst, Params(**params), types)
    cat = pd.DataFrame({"VMtype": ["A1", "A2", "B1"], "GPUtype": ["A", "A", "B"],
                        "nGPUs": [1, 2, 1], "cost": [1.2, 2.4, 0.5]})
    inst = tjng_to_instance(t, meta, vm_catalog=cat, n_nodes=n_nodes)
    return compile_instance(inst, Params(**{"max_it_rg": 15, **params}))


def check_invariants(p, res) -> None:
    log, jobs = res.log, res.jobs
    # every job finishes exactly once, after its submission
    assert jobs["completion_s"].notna().all()
    assert (jobs["completion_s"] > jobs["submit_s"]).all()
    fin = log[(log.CompletionPercent >= 100.0 - 1e-9) & (log.n_assigned_GPUs > 0)]
    assert sorted(fin.UniqueJobsID) == sorted(p.job_ids)
    # no node ever runs more GPUs than its VM type has, nor two VM types
    run = log[log.n_assigned_GPUs > 0]
    per = run.groupby(["n_iterate", "node_ID"]).agg(g=("n_assigned_GPUs", "sum"), vms=("VMtype", "nunique"),
                                                   vm=("VMtype", "first"))
    cap = dict(zip(p.vm_names, p.vm_G))
    assert (per.vms == 1).all()
    assert (per.g <= per.vm.map(cap)).all()
    # costs non-negative and equal to the sums over the timeline
    assert (log.GPUcost >= 0).all() and (jobs.tardiness_cost >= 0).all()
    s = res.summary
    assert s["exec_cost"] == pytest.approx(log.GPUcost.sum(), rel=1e-9, abs=1e-12)
    assert s["exec_cost"] == pytest.approx(res.slots.exec_cost.sum(), rel=1e-9, abs=1e-12)
    assert s["exec_cost"] == pytest.approx(res.timeline.exec_cost.sum(), rel=1e-9, abs=1e-12)
    assert s["tardiness_cost"] == pytest.approx(log.TardinessCost.sum(), rel=1e-9, abs=1e-12)
    assert s["total_cost"] == pytest.approx(s["exec_cost"] + s["tardiness_cost"])
    # work done: Σ over its slots of run time / t_jc is exactly one whole job
    vpos = {v: i for i, v in enumerate(p.vm_names)}
    jpos = {j: i for i, j in enumerate(p.job_ids)}
    c = p.conf_index[run.VMtype.map(vpos).to_numpy(), run.n_assigned_GPUs.to_numpy()]
    frac = run.ExecutionTime.to_numpy() / p.T[run.UniqueJobsID.map(jpos).to_numpy(), c]
    work = pd.Series(frac).groupby(run.UniqueJobsID.to_numpy()).sum()
    assert np.allclose(work.to_numpy(), 1.0, rtol=1e-6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n_jobs=st.integers(1, 6), n_nodes=st.integers(1, 3),
       fixed=st.booleans())
def test_simulation_invariants_all_methods(seed, n_jobs, n_nodes, fixed) -> None:
    p = small_problem(seed, n_jobs, n_nodes, fixed)
    for m in METHODS:
        res = simulate(p, make_method(m, seed=seed), full_log=True)
        check_invariants(p, res)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), n_jobs=st.integers(2, 7))
def test_same_seed_same_schedule(seed, n_jobs) -> None:
    p = small_problem(seed, n_jobs, 2, False)
    for m in ("rg", "pr"):
        a = simulate(p, make_method(m, seed=3), full_log=True).log
        b = simulate(p, make_method(m, seed=3), full_log=True).log
        pd.testing.assert_frame_equal(a, b)


def test_edf_hand_built_instance() -> None:
    """One node, one 1-GPU VM at 3.6 $/h (0.001 $/s); H = 1 h never fires.

    A: submit 0,  due 100, t = 50, ω 0.005    B: submit 10, due 200, t = 30, ω 0.02
    C: submit 20, due 70,  t = 40, ω 0.01
    EDF, non-preemptive: A runs 0–50 alone. B (10) and C (20) wait. At 50 the queue is
    {B due 200, C due 70}: C first, 50–90 (tardy 90 − 70 = 20 s → 20 × 0.01 = 0.2 $); then B
    90–120 (on time). Execution 120 s × 0.001 = 0.12 $; total 0.32 $.
    FIFO instead runs B 50–80 then C 80–120 (tardy 50 s → 0.5 $; total 0.62 $); PS (ω: B
    first) does the same as FIFO here.
    """
    t = pd.DataFrame({"job_id": ["A", "B", "C"], "node_type": "X", "n_gpus": 1,
                      "exec_time_s": [50.0, 30.0, 40.0], "cost_per_h": 3.6, "source": "hand"})
    meta = pd.DataFrame({"job_id": ["A", "B", "C"], "submission_s": [0.0, 10.0, 20.0],
                         "due_s": [100.0, 200.0, 70.0], "weight": [0.005, 0.02, 0.01]})
    p = compile_instance(tjng_to_instance(t, meta, n_nodes=1))
    res = simulate(p, make_method("edf"))
    j = res.jobs.set_index("job_id")
    assert j.loc["A", "start_s"] == 0 and j.loc["A", "completion_s"] == 50
    assert j.loc["C", "start_s"] == 50 and j.loc["C", "completion_s"] == 90
    assert j.loc["B", "start_s"] == 90 and j.loc["B", "completion_s"] == 120
    assert res.summary["exec_cost"] == pytest.approx(0.12)
    assert res.summary["tardiness_cost"] == pytest.approx(0.2)
    assert res.summary["total_cost"] == pytest.approx(0.32)
    assert list(res.timeline.sort_values("start_s").job_id) == ["A", "C", "B"]
    for m in ("fifo", "ps"):
        assert simulate(p, make_method(m)).summary["total_cost"] == pytest.approx(0.62)


def test_construct_proxy_matches_f_obj_and_rg_not_worse_than_greedy() -> None:
    p = small_problem(7, 12, 3, False)
    stt = StepState(t=500.0, jobs=np.arange(12), R=p.T.copy(), cur_node=np.full(12, -1),
                    cur_conf=np.full(12, -1))
    b = construct(p, stt, 40, np.random.default_rng(0))
    for i in (0, 5, 39):
        d = Decision(node=b.node[i], conf=b.conf[i])
        assert b.obj[i] == pytest.approx(f_obj(p, stt, d))
    g = construct(p, stt, 1, None)
    assert g.obj[0] == pytest.approx(b.obj[0]) and b.obj.min() <= g.obj[0]


def test_preempted_job_resumes_from_completed_fraction() -> None:
    """RG preempts a loose job for an urgent one on a single 1-GPU node and resumes it."""
    t = pd.DataFrame({"job_id": ["L", "U"], "node_type": "X", "n_gpus": 1,
                      "exec_time_s": [1000.0, 100.0], "cost_per_h": 3.6, "source": "hand"})
    meta = pd.DataFrame({"job_id": ["L", "U"], "submission_s": [0.0, 200.0],
                         "due_s": [100000.0, 310.0], "weight": [0.003, 0.015]})
    p = compile_instance(tjng_to_instance(t, meta, n_nodes=1), Params(max_it_rg=10))
    res = simulate(p, make_method("rg", seed=0))
    j = res.jobs.set_index("job_id")
    assert j.loc["U", "completion_s"] == pytest.approx(300.0)  # U runs 200–300
    assert j.loc["L", "preemptions"] == 1
    assert j.loc["L", "completion_s"] == pytest.approx(1100.0)  # 200 s done, 800 s left after 300
    assert res.summary["tardiness_cost"] == 0.0


def test_every_iteration_considers_every_job() -> None:
    """With room for everyone, all MaxIt constructions place every job once (the perturbed
    pressure orders are permutations; a broken swap once dropped jobs from some orders)."""
    p = small_problem(11, 10, 10, False)
    stt = StepState(t=0.0, jobs=np.arange(10), R=p.T.copy(), cur_node=np.full(10, -1),
                    cur_conf=np.full(10, -1))
    b = construct(p, stt, 200, np.random.default_rng(1))
    assert (b.conf >= 0).all() and (b.node >= 0).all()
