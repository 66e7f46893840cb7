"""A queue read as columns (distinct jobs + per-row arrays) holds the same jobs as one JobSpec
per row, names a bad cell's row and field, and allocates as the per-row path does."""

from __future__ import annotations

import csv

import numpy as np
import pandas as pd
import pytest

from gpuscope.cli import main
from gpuscope.core.errors import InputError
from gpuscope.jobs.columns import JobColumns
from gpuscope.jobs.queue import read_queue, read_queue_columns
from gpuscope.jobs.spec import JobSpec

HEADER = "job_id,model,dataset,optimizer,batch_size,epochs,arrival_s,due_s,weight\n"
ROWS = [  # spellings the reader normalises: spaces, capitals, empty optional cells
    " a1 ,ResNet20,cifar10,ADAM,8,10,0.5,,1\n",
    "a2,resnet20, cifar10 ,adam,8,10,1e1,100,2.5\n",
    ",vgg11,imagenet,sgd,16,20,3,,\n",
    "a4,resnet20,cifar10,adam,8,20,4,-5,1\n",
]


def _write(path, rows, header=HEADER):
    path.write_text(header + "".join(rows))
    return path


def _per_row(path):
    """The queue built one JobSpec per CSV row through JobSpec.from_dict (ids as the reader
    numbers them), independently of the columnar reader."""
    with path.open() as fh:
        rows = list(csv.DictReader(fh))
    width = max(3, len(str(len(rows))))
    return [JobSpec.from_dict({**r, "job_id": r["job_id"] or f"j{i:0{width}d}"})
            for i, r in enumerate(rows)]


def test_columns_hold_the_per_row_jobs(tmp_path) -> None:
    q = _write(tmp_path / "q.csv", ROWS * 30)  # repeated ids are made unique below
    text = q.read_text().splitlines(keepends=True)
    q.write_text(text[0] + "".join(line.replace("a", f"r{i}a", 1) if not line.startswith(",")
                                   else line for i, line in enumerate(text[1:])))
    expected = _per_row(q)
    cols = read_queue_columns(q)
    assert cols.rows() == expected
    assert read_queue(q) == expected
    assert len(cols.distinct) == 3  # resnet20 e10 (two spellings), vgg11, resnet20 e20
    assert [cols.distinct[k].model for k in cols.code[:4]] == ["resnet20", "resnet20", "vgg11",
                                                               "resnet20"]
    assert cols.counts.tolist() == [60, 30, 30]
    assert cols.arrival_s[:4].tolist() == [0.5, 10.0, 3.0, 4.0]
    assert np.isnan(cols.due_s[0]) and cols.due_s[3] == -5.0 and cols.weight[2] == 1.0


def test_many_ids_screened_at_once_keep_every_rule(tmp_path) -> None:
    rows = [f"id{i}\xa0,resnet20,cifar10,adam,8,10,{i},,1\n" for i in range(100)]
    q = _write(tmp_path / "q.csv", rows)  # non-ASCII: stripped as Python strips
    assert read_queue_columns(q).rows() == _per_row(q)
    long = rows.copy()
    long[69] = "x" * 300 + ",resnet20,cifar10,adam,8,10,1,,1\n"
    with pytest.raises(InputError, match=r"row 70 \(line 71\).*field 'job_id'.*300 char"):
        read_queue_columns(_write(tmp_path / "l.csv", [r.replace("\xa0", "") for r in long]))
    for bad, field in (("1e300", "arrival_s"), ("nan", "arrival_s"), ("true", "arrival_s")):
        r = [f"id{i},resnet20,cifar10,adam,8,10,{i}.5,,1\n" for i in range(100)]
        r[79] = f"id79,resnet20,cifar10,adam,8,10,{bad},,1\n"
        with pytest.raises(InputError, match=rf"row 80 .*job_id id79, field '{field}'"):
            read_queue_columns(_write(tmp_path / "b.csv", r))


def test_duplicate_ids_and_empty_queue(tmp_path) -> None:
    rows = [f"id{i % 90},resnet20,cifar10,adam,8,10,{i},,1\n" for i in range(100)]
    with pytest.raises(InputError, match="duplicate job_id.*id0, id1, id2"):
        read_queue_columns(_write(tmp_path / "q.csv", rows))
    with pytest.raises(InputError, match="holds no jobs"):
        read_queue_columns(_write(tmp_path / "e.csv", []))


def test_jobs_check_prints_each_row_and_counts_sources_per_row(tmp_path, capsys) -> None:
    q = _write(tmp_path / "q.csv", [f"k{i}" + r[r.index(","):] for i, r in enumerate(ROWS * 3)])
    assert main(["jobs", "check", str(q)]) == 0
    out = capsys.readouterr().out.splitlines()
    jobs = read_queue(q)
    assert out[:-1] == [f"{j.job_id}: {j.model} ({j.source}) {j.dataset} {j.optimizer} "
                        f"b{j.batch_size} x{j.grad_accum} {j.precision} {j.epochs} epoch(s), "
                        f"{j.total_steps:,} steps" for j in jobs]
    assert out[-1] == "12 jobs OK"
    m = _write(tmp_path / "m.csv", [f"m{i},mine,cifar10,adam,8,10,{i},,1,gone.py:build\n"
                                    for i in range(3)], HEADER.strip() + ",module\n")
    assert main(["jobs", "check", str(m)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "job m0: module file gone.py does not exist (and 2 more)" in err[0]


def _pure_predictions(jobs, devices, model_dir, driple=False, datasets=None):
    """Predictions that depend on the job only (as a predictor's do): any path that predicts
    distinct jobs and repeats them must give the per-row tables."""
    rows = []
    for j in jobs:
        for k, d in enumerate(devices):
            t = float(j.total_steps * j.batch_size * (k + 1) + len(j.model))
            rows.append({"job_id": j.job_id, "device": d, "exec_time_s": t,
                         "gpu_util_burst_s": t / 7.0, "oom_prob": 0.9 * (j.batch_size > 8),
                         "in_domain": j.epochs == 10, "domain_reason": f"e{j.epochs}"})
    return pd.DataFrame(rows)


def test_allocation_inputs_of_columns_equal_the_per_row_path(tmp_path, monkeypatch) -> None:
    from gpuscope.allocator.inputs import build_inputs, prepare
    from gpuscope.allocator.predict import domain_warning
    from gpuscope.cluster.counts import ClusterSpec

    mdir = tmp_path / "ckpt"
    mdir.mkdir()
    for d in ("v100", "a100"):
        (mdir / f"{d}.pt").write_bytes(b"x")
    monkeypatch.setattr("gpuscope.allocator.inputs.predict_queue", _pure_predictions)
    q = _write(tmp_path / "q.csv", [f"k{i}" + r[r.index(","):] for i, r in enumerate(ROWS * 5)])
    cluster = ClusterSpec.from_arg("v100:2,a100:1")
    rows = read_queue(q)
    pred = _pure_predictions(rows, cluster.devices, mdir)
    want = build_inputs(rows, cluster, pred, None, None)  # one prediction per row, pivoted
    for given in (read_queue_columns(q), rows):
        got = prepare(given, cluster, mdir, None, ["ect"])
        assert got.pred is not None and want.pred is not None
        assert got.pred.job_ids.tolist() == want.pred.job_ids.tolist()
        assert got.pred.values.keys() == want.pred.values.keys()
        for k, v in want.pred.values.items():
            np.testing.assert_array_equal(got.pred.values[k], v)
        np.testing.assert_array_equal(got.pred.fits, want.pred.fits)
        np.testing.assert_array_equal(got.arrivals, want.arrivals)
        assert got.job_kinds == want.job_kinds
        assert domain_warning(pred) in got.notes  # counted per row, the same first example
    assert "20 of 40" in (domain_warning(pred) or "")
    assert isinstance(read_queue_columns(q), JobColumns)
