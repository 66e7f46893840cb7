"""Repacking: RG/PR split a part-filled node into exactly-filled smaller VMs.

Hand-worked instances. Catalog: one GPU type K with VMs K1 (1 GPU), K2 (2 GPUs), K4 (4 GPUs);
every job takes 3600 s on 1, 2 or 4 GPUs (no speed-up) and is due at 20,000 s; 3 jobs
submitted at 0.

* Prices 1, 2, 4 $/h (1 $ per GPU-hour), 2 nodes. Greedy (the reference's ``largest`` rule)
  opens K4 for the first job and best-fits the other two into it; 3 busy GPUs: no K VM
  smaller than K4 holds them, so the node stays K4, 4 $ for the hour (the idle GPU speeds no
  job up). Split into K2 (2 jobs) + K1 (1 job) on the 2 nodes: 2 + 1 = 3 $ for the hour.
  So RG and PR with repacking cost 3 $, without it 4 $.
* One node: nowhere to put a second VM, so no split: 4 $.
* K4 at 2.5 $/h: K2 + K1 = 3 $/h is dearer than K4, so no split: 2.5 $.
"""

from __future__ import annotations

import pandas as pd
import pytest

from gpuscope.cli import main
from gpuscope.core.tjng import tjng_to_instance
from gpuscope.schedulers import Params, compile_instance, make_method, save_problem, simulate
from gpuscope.schedulers.repack import _parts


def instance(n_nodes: int, k4_price: float = 4.0, n_jobs: int = 3):
    catalog = pd.DataFrame({"VMtype": ["K1", "K2", "K4"], "GPUtype": ["K", "K", "K"],
                            "nGPUs": [1, 2, 4], "cost": [1.0, 2.0, k4_price]})
    ids = [f"j{i}" for i in range(n_jobs)]
    t = pd.DataFrame([(j, "K", g, 3600.0) for j in ids for g in (1, 2, 4)],
                     columns=["job_id", "node_type", "n_gpus", "exec_time_s"])
    t["cost_per_h"], t["source"] = 1.0, "hand"
    meta = pd.DataFrame({"job_id": ids, "submission_s": 0.0, "due_s": 20000.0, "weight": 0.01})
    return compile_instance(tjng_to_instance(t, meta, vm_catalog=catalog, n_nodes=n_nodes),
                            Params(max_it_rg=20))


@pytest.mark.parametrize("method", ["rg", "pr"])
def test_part_filled_node_is_split(method) -> None:
    p = instance(2)
    res = simulate(p, make_method(method, seed=1))
    assert res.summary["total_cost"] == pytest.approx(3.0)
    assert res.summary["late_jobs"] == 0 and (res.jobs.completion_s == 3600).all()
    assert sorted(res.timeline.groupby("node").vm_type.first()) == ["K1", "K2"]
    # without repacking (the earlier behaviour), and Greedy (never repacked): one K4
    for m, kw in ((method, {"repack": False, "candidates": 3}), ("greedy", {})):
        r = simulate(p, make_method(m, seed=1, **kw))
        assert r.summary["total_cost"] == pytest.approx(4.0)
        assert set(r.timeline.vm_type) == {"K4"}


@pytest.mark.parametrize(("n_nodes", "k4_price", "cost"), [(1, 4.0, 4.0), (2, 2.5, 2.5)])
def test_no_split_without_a_free_node_or_when_dearer(n_nodes, k4_price, cost) -> None:
    res = simulate(instance(n_nodes, k4_price), make_method("rg", seed=1))
    assert res.summary["total_cost"] == pytest.approx(cost)
    assert set(res.timeline.vm_type) == {"K4"}


def test_parts_decomposition() -> None:
    sizes = [8, 4, 2, 1]
    assert _parts(5, sizes, 3) == [4, 1]
    assert _parts(7, sizes, 3) == [4, 2, 1]
    assert _parts(7, sizes, 2) == [4, 4]  # the last part rounded up
    assert _parts(3, [4, 2], 2) == [2, 2]
    assert _parts(9, [8], 1) == []


def test_cli_switches(tmp_path, capsys) -> None:
    inst = save_problem(instance(2), tmp_path / "inst")
    assert main(["schedule", "--instance", str(inst), "--method", "rg", "-o", str(tmp_path / "a")]) == 0
    assert "total cost 3.0000" in capsys.readouterr().out
    assert main(["schedule", "--instance", str(inst), "--method", "rg", "--no-repack",
                 "--candidates", "3", "-o", str(tmp_path / "b")]) == 0
    assert "total cost 4.0000" in capsys.readouterr().out
    rc = main(["schedule", "--instance", str(inst), "--method", "rg", "--candidates", "0",
               "-o", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--candidates" in err
