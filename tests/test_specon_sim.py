"""The co-location simulator, sharing models, loss curves and the CLI."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from gpuscope.cli import main
from gpuscope.core.errors import InputError
from gpuscope.specon.losscurve import LossCurve, fit, preset, preset_points, r_from_f20
from gpuscope.specon.sharing import SharingModel, pair_speed
from gpuscope.specon.simulate import SimConfig, run_policies, simulate
from gpuscope.specon.traces import JobSpecS, make_trace


def test_ds_calibration_fixed_vae20() -> None:
    jobs, workers = make_trace("fixed-vae20")
    ds = simulate(jobs, SimConfig(n_workers=workers, policy="ds"))
    assert ds.avg_jct_s == pytest.approx(275.0, abs=3.0)  # paper 275.2
    assert 1225.0 <= ds.makespan_s <= 1260.0  # paper 1260
    assert [j.worker_first for j in ds.jobs[:6]] == [0, 1, 2, 3, 0, 1]


def test_ps_by_hand_two_jobs() -> None:
    # A (100 s) at 0, B (100 s) at 50 on one worker: A has 50 s left, shares at 1/2 -> ends 150;
    # B got 50 s by 150, finishes its last 50 s alone at 200.
    jobs = [JobSpecS(1, "vae", "tf", 0.0, 100.0), JobSpecS(2, "vae", "tf", 50.0, 100.0)]
    r = simulate(jobs, SimConfig(n_workers=1, policy="ds"))
    assert [j.finish_s for j in r.jobs] == pytest.approx([150.0, 200.0])
    p = simulate(jobs, SimConfig(n_workers=1, policy="ds", sharing=SharingModel("power", beta=2.0)))
    # power beta 2: speed 1/4 while shared -> A ends 50 + 200 = 250; B did 50 s by then, 50 more
    assert [j.finish_s for j in p.jobs] == pytest.approx([250.0, 300.0])


def test_migration_pause_is_the_configured_cost() -> None:
    # one worker crowded with 3 growing jobs, a converging job asks to move to an idle worker
    jobs = [JobSpecS(1, "birnn", "tf", 0.0, 600.0)] + [
        JobSpecS(k, "vae", "tf", 200.0, 2000.0) for k in (2, 3)]
    cfg = SimConfig(n_workers=2, policy="specon", pause_mean_s=7.0, pause_sd_s=0.0,
                    request_min=1, interval_s=10.0, rebalance=False)
    r = simulate(jobs, cfg, placement={1: 0, 2: 0, 3: 0})
    moves = [d for d in r.decisions if d.kind == "M"]
    assert moves and moves[0].job == 1 and moves[0].to == 1
    j1 = r.jobs[0]
    # before the move job 1 progressed: 200 s alone, then 1/3 speed until the move at tm
    tm = moves[0].time
    done = 200.0 + (tm - 200.0) / 3.0
    assert j1.finish_s == pytest.approx(tm + 7.0 + (600.0 - done), abs=1e-6)


def test_specon_deterministic_and_replays_ds_placement() -> None:
    jobs, w = make_trace("random20", seed=3)
    a = run_policies(jobs, SimConfig(n_workers=w, alpha=0.05, seed=3))
    b = run_policies(jobs, SimConfig(n_workers=w, alpha=0.05, seed=3))
    assert a["specon"].avg_jct_s == b["specon"].avg_jct_s
    assert a["specon"].placement() == a["ds"].placement()
    moved = [d.job for d in a["specon"].decisions if d.kind in ("M", "stay")]
    assert len(moved) == len(set(moved))  # Algorithm 2 decides on a container once
    reb = [d.job for d in a["specon"].decisions if d.kind == "R"]
    assert len(reb) == len(set(reb))
    assert all(math.isfinite(j.finish_s) for j in a["specon-srpt"].jobs)


def test_sharing_models() -> None:
    assert SharingModel("ps").speeds(["vae"] * 4) == [0.25] * 4
    assert SharingModel("power", beta=1.5).speeds(["vae", "gru"]) == pytest.approx([2 ** -1.5] * 2)
    m = SharingModel("measured-pairs", gpu="v100")
    s = m.speeds(["vae", "rnn"])
    assert s == pytest.approx([pair_speed("vae", "rnn"), pair_speed("rnn", "vae")])
    # Gavel v100: Recommendation(4096) with itself runs at 0.767 of solo
    assert m.speeds(["vae", "vae"])[0] == pytest.approx(0.767, abs=0.001)
    assert sum(m.speeds(["vae", "vae", "vae"])) == pytest.approx(3 * 2 / 3 * 0.767, abs=0.01)
    with pytest.raises(InputError):
        SharingModel("fair")


@pytest.mark.parametrize(("model", "f20"), [("vae", 0.65), ("gru", 0.90), ("birnn", 0.98)])
def test_losscurve_presets_fig1(model: str, f20: float) -> None:
    p, loss = preset_points(model)
    assert fit(p, loss).f(0.2) == pytest.approx(f20, abs=0.01)
    assert preset(model).f(0.2) == pytest.approx(f20, abs=1e-9)


def test_losscurve_fit_noisy_and_mean() -> None:
    c = LossCurve.from_shape(2.3, 0.1, r_from_f20(0.87))
    rng = np.random.default_rng(0)
    p = np.linspace(0, 1, 3000)
    noisy = np.asarray(c(p)) * (1 + 0.05 * rng.standard_normal(p.size))
    assert fit(p, noisy).f(0.2) == pytest.approx(0.87, abs=0.03)
    xs = np.linspace(0.3, 0.5, 100001)
    assert c.mean(0.3, 0.5) == pytest.approx(float(np.mean(c(xs))), rel=1e-4)


def test_cli_simulate_writes_outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    rc = main(["specon", "simulate", "--workload", "random20", "--alpha", "0.05", "--seed", "1",
               "-o", str(out)])
    text = capsys.readouterr().out
    assert rc == 0 and "specon-srpt" in text and "sharing=ps" in text
    summary = json.loads((out / "summary.json").read_text())
    assert summary["provenance"] == "emulated"
    with (out / "decisions-specon.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["time", "job", "original_node", "to_node", "kind"]
    assert all(r["kind"] in ("M", "R", "stay") and (r["to_node"] == "") == (r["kind"] == "stay")
               for r in rows)
    assert (out / "timeline.png").stat().st_size > 1000
    assert main(["specon", "simulate", "--workers", "0"]) == 2
