"""`gpuscope allocate` / `gpuscope tjng`, truth matching and the t_jng export round trip."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from gpuscope.allocator import ClusterSpec
from gpuscope.allocator.reproduce import gavel_tables
from gpuscope.allocator.tjng_export import build_tjng, export_tjng, jobs_meta, one_gpu_times
from gpuscope.allocator.truth import load_truth, truth_steps
from gpuscope.allocator.truth_table import gavel_throughputs
from gpuscope.cli import main
from gpuscope.core.errors import InputError
from gpuscope.core.tjng import read_instance, read_tjng
from gpuscope.jobs.queue import write_queue
from gpuscope.jobs.spec import table_jobs
from gpuscope.testing import synthetic_tables

DEVS = ("gtx1080", "rtx2070", "titanx")


@pytest.fixture()
def fake_predictor(tmp_path, monkeypatch):
    """Checkpoint files that exist, and a predictor replaced by synthetic predictions."""
    mdir = tmp_path / "ckpt"
    mdir.mkdir()
    for d in (*DEVS, "v100", "a100"):
        (mdir / f"{d}.pt").write_bytes(b"x")

    def fake(jobs, devices, model_dir, driple=False, datasets=None):
        return synthetic_tables(jobs, devices, seed=1)[0]

    monkeypatch.setattr("gpuscope.allocator.inputs.predict_queue", fake)
    monkeypatch.setattr("gpuscope.allocator.predict.predict_queue", fake)
    return mdir


def _write_truth(root, jobs, devices) -> None:
    truth = synthetic_tables(jobs, devices, seed=1)[1]
    for d in devices:
        t = truth[truth["device"] == d]
        rows = pd.DataFrame([{"model": j.model, "dataset": j.dataset, "optimizer": j.optimizer,
                              "batch_size": j.batch_size, "epochs": j.epochs} for j in jobs])
        rows["steps_per_epoch"] = np.nan
        rows["exec_time_s"] = t["exec_time_s"].to_numpy()
        rows["status"] = t["status"].to_numpy()
        rows["provenance"] = "emulated"
        (root / d).mkdir(parents=True)
        rows.iloc[::-1].to_parquet(root / d / "labels.parquet")  # order must not matter


def test_allocate_cli_writes_plan_metrics_plots(tmp_path, fake_predictor, capsys) -> None:
    jobs = table_jobs(4)[:30]
    q = write_queue(jobs, tmp_path / "q.csv")
    _write_truth(tmp_path / "emulated", jobs, DEVS)
    out = tmp_path / "out"
    rc = main(["allocate", "--jobs", str(q), "--cluster", "gtx1080:1,rtx2070:1,titanx:1",
               "--policy", "comp-eff,ect,oracle", "--order", "fifo,sjf",
               "--model-dir", str(fake_predictor), "--truth", str(tmp_path / "emulated"),
               "-o", str(out)])
    assert rc == 0
    m = pd.read_csv(out / "metrics.csv")
    assert len(m) == 6 and set(m["durations"]) == {"emulated"}
    plan = pd.read_csv(out / "plan_ect_sjf.csv")
    assert len(plan) == 30 and (plan["finish_s"] >= plan["start_s"]).all()
    assert (out / "gantt_comp-eff_fifo.png").stat().st_size > 1000
    assert (out / "policies.png").is_file()
    assert "Average JCT" in capsys.readouterr().out
    # the plan's JCTs are the metrics' average
    ran = plan[plan["status"] != "rejected"]
    assert m.loc[(m.policy == "ect") & (m.order == "sjf"), "avg_jct_s"].item() == \
        pytest.approx(ran["jct_s"].mean())


@pytest.mark.parametrize("argv, msg", [
    (["--cluster", "gtx1080:one"], "malformed cluster"),
    (["--cluster", "gtx1080:1", "--policy", "fastest"], "unknown policy"),
    (["--cluster", "gtx1080:1", "--resources", "disk"], "unknown resource"),
    (["--cluster", "nosuchgpu:1"], "unknown device"),
    (["--cluster", "gtx1080:1", "--model-dir", "/nonexistent"], "missing checkpoint"),
    (["--cluster", "gtx1080:1", "--steps-per-epoch", "0"], "steps-per-epoch"),
    (["--cluster", "gtx1080:1", "--order", "lifo"], "unknown order"),
])
def test_allocate_bad_input_is_one_line_exit_2(argv, msg, tmp_path, capsys) -> None:
    rc = main(["allocate", "--jobs", "table8", "-o", str(tmp_path / "o"), *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and msg in err[0]


def test_truth_matches_jobspec_fields_and_reports_missing(tmp_path) -> None:
    jobs = table_jobs(4)[:6]
    _write_truth(tmp_path, jobs, ("gtx1080",))
    t = load_truth(jobs, ["gtx1080"], tmp_path)
    want = synthetic_tables(jobs, ("gtx1080",), seed=1)[1].set_index("job_id")["exec_time_s"]
    assert np.allclose(t.set_index("job_id").loc[want.index, "exec_time_s"], want)
    with pytest.raises(InputError, match="lacks"):
        load_truth(table_jobs(4)[:8], ["gtx1080"], tmp_path)
    with pytest.raises(InputError, match="no ground truth"):
        load_truth(jobs, ["titanx"], tmp_path)


def test_shortened_runs_match_only_shortened_jobs(tmp_path) -> None:
    jobs = table_jobs(4)[:4]
    short = table_jobs(4, steps_per_epoch=100)[:4]
    rows = pd.DataFrame([{"model": j.model, "dataset": j.dataset, "optimizer": j.optimizer,
                          "batch_size": j.batch_size, "epochs": j.epochs, "steps_per_epoch": 100,
                          "exec_time_s": 10.0 + i, "status": "ok", "split": "unseen"}
                         for i, j in enumerate(short)])
    (tmp_path / "t4").mkdir()
    rows.to_parquet(tmp_path / "t4" / "labels.parquet")
    assert truth_steps(tmp_path, ["t4"]) == 100
    t = load_truth(short, ["t4"], tmp_path)
    assert t["exec_time_s"].tolist() == [10.0, 11.0, 12.0, 13.0]
    with pytest.raises(InputError, match="lacks 4"):  # full-length jobs never borrow them
        load_truth(jobs, ["t4"], tmp_path)


def test_tjng_export_reads_back_identically(tmp_path) -> None:
    jobs = table_jobs(4)[:10]
    jobs[0] = jobs[0].with_(due_s=5000.0, weight=0.01)
    c = ClusterSpec.parse("v100:2,a100:3")
    pred = synthetic_tables(jobs, c.devices, seed=2)[0]
    one = one_gpu_times(jobs, c, pred)
    price = {"v100": 3.0, "a100": 4.0}

    def scaler(job, dev, g, t1):
        return t1 / (0.9 * g + 0.1)

    tj, inst, dropped = export_tjng(jobs, c, one, tmp_path, price_per_h=price, scaler=scaler,
                                    seed=3)
    assert dropped == []
    assert len(tj) == 10 * (2 + 3)
    row = tj[(tj.job_id == jobs[1].job_id) & (tj.node_type == "a100") & (tj.n_gpus == 3)]
    t1 = one[(one.job_id == jobs[1].job_id) & (one.device == "a100")]["exec_time_s"].item()
    assert row["exec_time_s"].item() == pytest.approx(t1 / 2.8)
    assert row["cost_per_h"].item() == pytest.approx(12.0)
    pd.testing.assert_frame_equal(read_tjng(tmp_path / "tjng.csv"), tj)
    back = read_instance(tmp_path / "instance")
    pd.testing.assert_frame_equal(back.jobs, inst.jobs)
    pd.testing.assert_frame_equal(back.times, inst.times)
    assert back.nodes == inst.nodes == ["n1", "n2"]
    meta = jobs_meta(jobs, tj, seed=3)
    assert meta.loc[0, "due_s"] == 5000.0 and meta.loc[0, "weight"] == 0.01
    mint = tj.groupby("job_id")["exec_time_s"].min()
    rest = meta.iloc[1:]
    lo = rest["submission_s"] + mint[rest["job_id"]].to_numpy()
    assert ((rest["due_s"] >= lo) & (rest["due_s"] <= rest["submission_s"] + 3 * (lo - rest["submission_s"]))).all()
    assert rest["weight"].between(0.003, 0.015).all()
    pd.testing.assert_frame_equal(meta, jobs_meta(jobs, tj, seed=3))


def test_tjng_drops_jobs_that_fit_nowhere() -> None:
    jobs = table_jobs(4)[:3]
    c = ClusterSpec.parse("v100:1")
    one = pd.DataFrame({"job_id": [j.job_id for j in jobs], "device": "v100",
                        "exec_time_s": [10.0, 20.0, 30.0], "fits": [True, False, True],
                        "source": "predicted"})
    tj, dropped = build_tjng(jobs, c, one, {"v100": 3.0}, lambda j, d, g, t: t)
    assert dropped == [jobs[1].job_id] and len(tj) == 2


def test_tjng_cli(tmp_path, fake_predictor) -> None:
    rc = main(["tjng", "--jobs", "table8", "--cluster", "v100:1,a100:1", "--model-dir",
               str(fake_predictor), "-o", str(tmp_path / "t")])
    assert rc == 0
    meta = json.loads((tmp_path / "t" / "tjng_meta.json").read_text())
    assert meta["jobs"] == 6
    assert read_instance(tmp_path / "t" / "instance").n_nodes == 2
    assert main(["tjng", "--jobs", "table8", "--cluster", "v100:1", "--nodes", "0",
                 "-o", str(tmp_path / "u")]) == 2


def test_gavel_truth_is_steps_over_throughput(tmp_path) -> None:
    thr = {d: {"('ResNet-18 (batch size 32)', 1)": {"null": s},
               "('ResNet-18 (batch size 32)', 2)": {"null": 2 * s}}
           for d, s in (("k80", 2.0), ("p100", 4.0), ("v100", 8.0))}
    (tmp_path / "t.json").write_text(json.dumps(thr))
    th = gavel_throughputs(tmp_path / "t.json")
    assert len(th) == 3
    trace = pd.DataFrame({"job_id": ["g0"], "job_type": ["ResNet-18 (batch size 32)"],
                          "total_steps": [800.0], "arrival_s": [0.0]})
    pred, truth = gavel_tables(trace, th, pred_noise=0.0)
    assert truth["exec_time_s"].tolist() == [400.0, 200.0, 100.0]
    assert np.allclose(pred["exec_time_s"], truth["exec_time_s"])


def test_domain_warning_counts_and_names_the_first() -> None:
    from gpuscope.allocator.predict import domain_warning

    pred = pd.DataFrame({"job_id": ["a", "b", "a", "b"], "device": ["v100", "v100", "a100", "a100"],
                         "in_domain": [True, False, True, False],
                         "domain_reason": ["", "r_log_epochs=3 outside [0, 1.3]", "", "x"]})
    assert domain_warning(pred) == (
        "warning: 2 of 4 (job, device) predictions lie outside the checkpoint's training "
        "domain (column in_domain; e.g. b on v100: r_log_epochs=3 outside [0, 1.3])")
    assert domain_warning(pred.assign(in_domain=True)) is None
    # a checkpoint that records no domain (an old GNN's without its dataset): one line
    unchecked = pred.assign(in_domain=True, domain_reason="no domain recorded")
    assert domain_warning(unchecked) == (
        "warning: the checkpoints of a100, v100 record no training domain: 4 of 4 (job, "
        "device) predictions are not checked against it (column domain_reason)")


def test_allocate_warns_when_predictions_extrapolate(tmp_path, monkeypatch, fake_predictor,
                                                     capsys) -> None:
    def fake(jobs, devices, model_dir, driple=False, datasets=None):
        df = synthetic_tables(jobs, devices, seed=1)[0]
        first = df["job_id"] == jobs[0].job_id
        return df.assign(in_domain=~first, domain_reason=np.where(first, "r_log_epochs=2", ""))

    monkeypatch.setattr("gpuscope.allocator.inputs.predict_queue", fake)
    jobs = table_jobs(4)[:5]
    q = write_queue(jobs, tmp_path / "q.csv")
    rc = main(["allocate", "--jobs", str(q), "--cluster", "gtx1080:1,titanx:1", "--policy", "ect",
               "--model-dir", str(fake_predictor), "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 0
    assert "warning: 2 of 10 (job, device) predictions lie outside" in err
    assert f"e.g. {jobs[0].job_id} on gtx1080: r_log_epochs=2" in err
