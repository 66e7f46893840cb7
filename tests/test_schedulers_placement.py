"""Node placement rules and rescheduling parameters, on hand-worked instances.

Catalog: one GPU type K with VMs K1 (1 GPU, 1 $/h), K2 (2 GPUs, 2 $/h), K4 (4 GPUs, 4 $/h);
one node; every job takes 3600 s on 1, 2 or 4 GPUs (no speed-up) and is due at 20,000 s.

* ``largest`` (the reference's rule): the first job's best configuration is (K1, 1 GPU); the
  node opens as the largest K VM offering 1 GPU, K4; the other jobs best-fit into its free
  GPUs. Post-processing rightsizes the node to the cheapest K VM that still holds the busy
  GPUs: 2 jobs → K2 (2 $ for the hour), 3 jobs → none smaller than 4 GPUs, K4 (4 $).
  Everything runs 0–3600 s.
* ``per-job``: each job gets a node of its own VM type (K1); one node, so the jobs run one
  after the other, 0–3600, 3600–7200, 7200–10800 s, 1 $ each.
"""

from __future__ import annotations

import pandas as pd
import pytest

from gpuscope.cli import main
from gpuscope.core.errors import InputError
from gpuscope.core.tjng import tjng_to_instance
from gpuscope.schedulers import Params, compile_instance, make_method, save_problem, simulate

CATALOG = pd.DataFrame({"VMtype": ["K1", "K2", "K4"], "GPUtype": ["K", "K", "K"],
                        "nGPUs": [1, 2, 4], "cost": [1.0, 2.0, 4.0]})


def instance(n_jobs: int, params: Params):
    ids = [f"j{i}" for i in range(n_jobs)]
    t = pd.DataFrame([(j, "K", g, 3600.0) for j in ids for g in (1, 2, 4)],
                     columns=["job_id", "node_type", "n_gpus", "exec_time_s"])
    t["cost_per_h"], t["source"] = 1.0, "hand"
    meta = pd.DataFrame({"job_id": ids, "submission_s": 0.0, "due_s": 20000.0, "weight": 0.01})
    return compile_instance(tjng_to_instance(t, meta, vm_catalog=CATALOG, n_nodes=1), params)


@pytest.mark.parametrize("method", ["greedy"])
@pytest.mark.parametrize(("n_jobs", "cost", "vm"), [(2, 2.0, "K2"), (3, 4.0, "K4")])
def test_largest_vm_shared_then_rightsized(method, n_jobs, cost, vm) -> None:
    p = instance(n_jobs, Params(max_it_rg=20))
    res = simulate(p, make_method(method, seed=1))
    assert res.summary["total_cost"] == pytest.approx(cost)
    assert (res.jobs.start_s == 0).all() and (res.jobs.completion_s == 3600).all()
    assert set(res.timeline.vm_type) == {vm} and res.summary["rescheduling_points"] == 1


def test_per_job_rule_runs_one_job_per_node() -> None:
    p = instance(3, Params(placement="per-job"))
    res = simulate(p, make_method("greedy"))
    assert res.summary["total_cost"] == pytest.approx(3.0)
    assert sorted(res.jobs.completion_s) == [3600.0, 7200.0, 10800.0]
    assert set(res.timeline.vm_type) == {"K1"}


def test_interval_adds_periodic_points_horizon_does_not() -> None:
    """Event-driven (default): one point for 2 jobs running 0–3600 s. Every 1000 s: points
    at 0, 1000, 2000, 3000 (the completions end the run), same cost. H only enters the proxy."""
    assert simulate(instance(2, Params()), make_method("greedy")).summary["rescheduling_points"] == 1
    s = simulate(instance(2, Params(interval=1000.0)), make_method("greedy")).summary
    assert s["rescheduling_points"] == 4 and s["total_cost"] == pytest.approx(2.0)
    s = simulate(instance(2, Params(H=50_000.0)), make_method("greedy")).summary
    assert s["rescheduling_points"] == 1


def test_bad_parameters_are_input_errors() -> None:
    with pytest.raises(InputError, match="placement"):
        Params(placement="smallest")
    with pytest.raises(InputError, match="interval"):
        Params(interval=0.0)


def test_cli_switches(tmp_path, capsys) -> None:
    d = save_problem(instance(3, Params()), tmp_path / "inst")
    assert main(["schedule", "--instance", str(d), "--method", "greedy", "-o", str(tmp_path / "a")]) == 0
    assert "total cost 4.0000" in capsys.readouterr().out
    assert main(["schedule", "--instance", str(d), "--method", "greedy", "--placement", "per-job",
                 "--interval", "1000", "--horizon", "0", "-o", str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "total cost 3.0000" in out and "12 rescheduling points" in out
