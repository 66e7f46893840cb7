"""Path Relinking objective: the improved PR (P1a selection) is never worse than RG on the
proxy at a rescheduling point; the paper-literal Eq. 1 switch keeps seed 002's behaviour."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_schedulers import small_problem

from gpuscope.cli import main
from gpuscope.core.errors import InputError
from gpuscope.schedulers import (
    Params,
    PathRelinking,
    RandomizedGreedy,
    load_problem,
    make_method,
    simulate,
)
from gpuscope.schedulers.instances import generate
from gpuscope.schedulers.proxies import decision_proxy
from gpuscope.schedulers.step import StepState, check_decision

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "reference-instance"


def random_state(p, seed: int) -> StepState:
    """All jobs in the system at t = 0 with random completed fractions (nothing running)."""
    rng = np.random.default_rng(seed)
    k = p.n_jobs
    done = rng.uniform(0.0, 0.8, k)
    return StepState(t=float(rng.uniform(0, 2000)), jobs=np.arange(k), R=(1 - done)[:, None] * p.T,
                     cur_node=np.full(k, -1), cur_conf=np.full(k, -1))


def pr_vs_rg(p, stt: StepState, seed: int) -> tuple[float, float]:
    """The selection proxy (``cost``) of PR's and RG's decisions; the same seed gives both the
    same constructions, and PR keeps RG's solution unless a relinked one is cheaper."""
    d_pr = PathRelinking(seed=seed).step(p, stt)
    d_rg = RandomizedGreedy(seed=seed).step(p, stt)
    check_decision(p, stt, d_pr)
    return decision_proxy(p, stt, d_pr, "cost"), decision_proxy(p, stt, d_rg, "cost")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n_jobs=st.integers(1, 9), n_nodes=st.integers(1, 3),
       fixed=st.booleans())
def test_pr_never_worse_than_rg_on_the_proxy_small(seed, n_jobs, n_nodes, fixed) -> None:
    p = small_problem(seed, n_jobs, n_nodes, fixed)
    pr, rg = pr_vs_rg(p, random_state(p, seed), seed)
    assert pr <= rg + 1e-9 * max(1.0, abs(rg))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pr_never_worse_than_rg_on_the_proxy_generated(seed) -> None:
    """A loaded step: 60 AlexNet jobs on 10 nodes (more jobs than nodes, so some wait)."""
    p = generate("alexnet", 10, seed=seed, arrivals="high", n_jobs=60, params=Params(max_it_rg=100))
    stt = random_state(p, seed)
    pr, rg = pr_vs_rg(p, stt, seed)
    assert pr <= rg + 1e-9 * rg
    # Eq. 1 as written may return a solution RG beats on the proxy; never a smaller Eq. 1 value
    d_eq1 = PathRelinking(seed=seed, objective="eq1").step(p, stt)
    check_decision(p, stt, d_eq1)


def test_example_instance_improved_pr_matches_rg_and_eq1_postpones() -> None:
    """3 jobs, 2 nodes: Eq. 1 drops postponed jobs from its sum, so paper-literal PR postpones
    a job until it is late (total 226.18 against RG's 46.70, worked out in docs/schedulers.md);
    the P1a selection keeps the RG-quality schedule. (Worked out under gpuscope's earlier
    per-job placement and hourly rescheduling, kept as switches.)"""
    p = load_problem(EXAMPLE, Params(placement="per-job", interval=3600.0))
    rg = simulate(p, make_method("rg", seed=1)).summary
    pr = simulate(p, make_method("pr", seed=1)).summary
    lit = simulate(p, make_method("pr", seed=1, pr_objective="eq1")).summary
    assert pr["total_cost"] <= rg["total_cost"] + 1e-9
    assert pr["late_jobs"] == 0
    assert lit["late_jobs"] >= 1 and lit["total_cost"] > 4 * rg["total_cost"]


def test_cli_pr_objective_switch(tmp_path: Path, capsys) -> None:
    assert main(["schedule", "--instance", str(EXAMPLE), "--method", "pr", "--pr-objective", "eq1",
                 "--placement", "per-job", "--interval", "3600", "-o", str(tmp_path / "o")]) == 0
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["pr_objective"] == "eq1" and summary["late_jobs"] >= 1


def test_bad_pr_objective_is_an_input_error() -> None:
    with pytest.raises(InputError, match="objective"):
        make_method("pr", pr_objective="eq2")
