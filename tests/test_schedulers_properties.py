"""Simulation invariants on many random instances, checked on the compact schedule (segments):
no node over its GPUs or running two VM types at once, every job finishes exactly once with
exactly its work done, nothing runs before its arrival, costs add up; the scalar Greedy and
the vectorised construction make the same decisions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_schedulers import small_problem
from test_schedulers_pr import random_state

from gpuscope.schedulers import Params, make_method, simulate
from gpuscope.schedulers.fastgreedy import greedy_decision, postprocess_fast
from gpuscope.schedulers.greedy import construct
from gpuscope.schedulers.relinking import postprocess


def check_segments(p, res) -> None:
    seg, jobs = res.segments, res.jobs
    vpos = {v: i for i, v in enumerate(p.vm_names)}
    jpos = {j: i for i, j in enumerate(p.job_ids)}
    j = seg.job_id.map(jpos).to_numpy()
    v = seg.vm_type.map(vpos).to_numpy()
    c = p.conf_index[v, seg.n_gpus.to_numpy()]
    s0, s1 = seg.start_s.to_numpy(), seg.end_s.to_numpy()
    assert (c >= 0).all() and (s1 > s0 - 1e-9).all()
    assert (s0 >= p.submit[j] - 1e-9).all(), "a job ran before its arrival"
    # every job's work sums to one whole job, and it completes exactly once
    work = np.bincount(j, weights=(s1 - s0) / p.T[j, c], minlength=p.n_jobs)
    assert np.allclose(work, 1.0, rtol=1e-6)
    assert jobs.completion_s.notna().all()
    assert np.allclose(jobs.completion_s.to_numpy(), [s1[j == i].max() for i in range(p.n_jobs)])
    # at every segment start, the segments running on its node fit the node and share a VM type
    node = seg.node.to_numpy()
    for i in range(len(seg)):
        on = (node == node[i]) & (s0 <= s0[i] + 1e-9) & (s1 > s0[i] + 1e-9)
        assert len(set(v[on])) <= 1, "two VM types on one node"
        if on.any():
            assert seg.n_gpus.to_numpy()[on].sum() <= p.vm_G[v[on][0]], "node over-committed"
    assert res.summary["exec_cost"] == pytest.approx(seg.exec_cost.sum(), rel=1e-9, abs=1e-12)
    assert res.summary["exec_cost"] == pytest.approx(res.slots.exec_cost.sum(), rel=1e-9, abs=1e-12)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n_jobs=st.integers(1, 7), n_nodes=st.integers(1, 3),
       fixed=st.booleans(), per_job=st.booleans(), interval=st.sampled_from([np.inf, 700.0]))
def test_greedy_invariants_random_instances(seed, n_jobs, n_nodes, fixed, per_job, interval) -> None:
    p = small_problem(seed, n_jobs, n_nodes, fixed, placement="per-job" if per_job else "largest",
                      interval=interval)
    check_segments(p, simulate(p, make_method("greedy")))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n_jobs=st.integers(1, 6), n_nodes=st.integers(1, 3),
       fixed=st.booleans(), method=st.sampled_from(["rg", "pr", "fifo", "edf", "ps"]),
       proxy=st.sampled_from(["cost", "reference", "p1a"]))
def test_all_methods_invariants(seed, n_jobs, n_nodes, fixed, method, proxy) -> None:
    p = small_problem(seed, n_jobs, n_nodes, fixed, max_it_rg=8)
    check_segments(p, simulate(p, make_method(method, seed=seed, proxy=proxy)))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n_jobs=st.integers(1, 12), n_nodes=st.integers(1, 4),
       fixed=st.booleans(), per_job=st.booleans())
def test_scalar_greedy_equals_vectorised_construction(seed, n_jobs, n_nodes, fixed, per_job) -> None:
    p = small_problem(seed, n_jobs, n_nodes, fixed, placement="per-job" if per_job else "largest")
    stt = random_state(p, seed)
    a = construct(p, stt, 1, None).decision(0)
    b = greedy_decision(p, stt)
    assert np.array_equal(a.node, b.node) and np.array_equal(a.conf, b.conf)
    x, y = postprocess(p, stt, a), postprocess_fast(p, stt, a)
    assert np.array_equal(x.node, y.node) and np.array_equal(x.conf, y.conf)


def test_params_roundtrip_keeps_new_fields(tmp_path) -> None:
    from gpuscope.schedulers import load_problem, save_problem
    p = small_problem(1, 3, 2, False, placement="per-job", interval=900.0, H=10.0)
    q = load_problem(save_problem(p, tmp_path / "i"))
    assert q.params == Params(**{**q.params.__dict__}) and q.params.placement == "per-job"
    assert q.params.interval == 900.0 and q.params.H == 10.0
