"""Provenance and device are checked on every row where labels enter: dataset
folders (``train``, ``evaluate``), the physics loader (multi-device legit, mixed provenance
never), ``--truth`` folders, and ``build-dataset`` (keyed by device, written atomically)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpuscope.allocator.truth import load_truth, truth_steps
from gpuscope.cli import main as gpuscope_main
from gpuscope.core.errors import InputError
from gpuscope.core.provenance import check_labels
from gpuscope.jobs.spec import JobSpec, table_jobs
from gpuscope.predictor.gnn.data import load_dataset
from gpuscope.predictor.physics.dataset import load_physics
from gpuscope.predictor.physics.features import ANALYTIC_COLUMNS, FEATURES
from gpuscope.profiling import Ledger, TraceMeta, build_dataset, write_trace

ROOT = Path(__file__).resolve().parents[1]
EMULATED = ROOT / "datasets" / "emulated"


def _one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], needle: str) -> None:
    assert gpuscope_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0] and "Traceback" not in err[0], err


def _rows(device: str = "h100", prov: str = "emulated", n: int = 3) -> pd.DataFrame:
    return pd.DataFrame({"device": [device] * n, "provenance": [prov] * n})


def test_check_labels_every_row() -> None:
    assert check_labels(_rows(), "x") == ("h100", "emulated")
    mixed = pd.concat([_rows(prov="measured", n=1), _rows(n=79)])
    with pytest.raises(InputError, match="79 emulated, 1 measured"):
        check_labels(mixed, "x")
    two = pd.concat([_rows("h100"), _rows("a100")])
    with pytest.raises(InputError, match="2 devices"):
        check_labels(two, "x")
    assert check_labels(two, "x", multi_device=True) == ("multi", "emulated")
    with pytest.raises(InputError, match="mix provenances"):
        check_labels(pd.concat([two, _rows(prov="measured")]), "x", multi_device=True)
    with pytest.raises(InputError, match="no provenance"):
        check_labels(_rows().assign(provenance=[None, "emulated", "emulated"]), "x")
    with pytest.raises(InputError, match="not one of"):
        check_labels(_rows(prov="simulated"), "x")
    with pytest.raises(InputError, match="lack the provenance"):
        check_labels(_rows().drop(columns="provenance"), "x")
    assert check_labels(_rows().drop(columns="provenance"), "x", provenance="measured")[1] == \
        "measured"
    with pytest.raises(InputError, match="dataset says measured"):
        check_labels(_rows(), "x", provenance="measured")


def _copy_dataset(src: Path, dest: Path, rows: int | None = None,
                  edit: dict[str, object] | None = None) -> Path:
    """A copy of a bundled dataset folder (first ``rows`` label rows; ``edit`` sets row 0)."""
    dest.mkdir(parents=True)
    for name in ("graphs.parquet", "vocab.json", "manifest.json"):
        shutil.copy2(src / name, dest / name)
    lab = pd.read_parquet(src / "labels.parquet")
    lab = lab.iloc[:rows] if rows else lab
    for col, v in (edit or {}).items():
        lab.loc[lab.index[0], col] = v
    lab.to_parquet(dest / "labels.parquet", index=False)
    return dest


def test_train_and_evaluate_refuse_a_mixed_labels_file(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    mixed = _copy_dataset(EMULATED / "h100", tmp_path / "mixed", edit={"provenance": "measured"})
    with pytest.raises(InputError, match="1 measured"):
        load_dataset(mixed)
    out = tmp_path / "m.pt"
    _one_line_exit_2(capsys, ["train", "--arch", "gnn", "--dataset", str(mixed), "-o",
                              str(out), "--quiet"], "mix provenances")
    _one_line_exit_2(capsys, ["train", "--dataset", str(mixed), "-o", str(out), "--quiet"],
                     "mix provenances")
    _one_line_exit_2(capsys, ["evaluate", "--dataset", str(mixed), "--model",
                              str(ROOT / "datasets" / "checkpoints" / "h100.pt"), "--quiet"],
                     "mix provenances")
    other = _copy_dataset(EMULATED / "h100", tmp_path / "dev", edit={"device": "a100"})
    _one_line_exit_2(capsys, ["evaluate", "--dataset", str(other), "--model",
                              str(ROOT / "datasets" / "checkpoints" / "h100-driple.pt")],
                     "2 devices")
    assert not out.exists()
    assert load_dataset(_copy_dataset(EMULATED / "h100", tmp_path / "ok", rows=20)).device \
        == "h100"


class _NoFeatures:
    """A FeatureBuilder stand-in: the loader's checks, without exporting graphs."""

    def frame(self, jobs: list[JobSpec], devices: list[str], progress: bool = True
              ) -> pd.DataFrame:
        return pd.DataFrame(np.zeros((len(jobs), len(FEATURES) + len(ANALYTIC_COLUMNS))),
                            columns=[*FEATURES, *ANALYTIC_COLUMNS])


def test_physics_loader_multi_device_but_one_provenance(tmp_path: Path) -> None:
    h100 = _copy_dataset(EMULATED / "h100", tmp_path / "emulated" / "h100", rows=4)
    a100 = _copy_dataset(EMULATED / "a100", tmp_path / "emulated" / "a100", rows=4)
    data = load_physics([h100, a100], builder=_NoFeatures())  # type: ignore[arg-type]
    assert sorted(set(data.labels["device"])) == ["a100", "h100"]  # multi.pt's training data
    meas = _copy_dataset(ROOT / "datasets" / "measured" / "amd-epyc", tmp_path / "meas", rows=4)
    with pytest.raises(InputError, match="several provenances"):
        load_physics([h100, meas], builder=_NoFeatures())  # type: ignore[arg-type]
    mixed = _copy_dataset(EMULATED / "h100", tmp_path / "x" / "h100", rows=4,
                          edit={"device": "a100"})
    with pytest.raises(InputError, match="one device"):  # one folder is one device
        load_physics([mixed], builder=_NoFeatures())  # type: ignore[arg-type]
    corpus = pd.concat([pd.read_parquet(h100 / "labels.parquet"),
                        pd.read_parquet(a100 / "labels.parquet")])
    zeros = pd.DataFrame(0.0, index=corpus.index, columns=[*FEATURES, *ANALYTIC_COLUMNS])
    corpus = pd.concat([corpus.drop(columns=zeros.columns, errors="ignore"), zeros], axis=1)
    corpus.to_parquet(tmp_path / "corpus.parquet")
    assert len(load_physics([tmp_path / "corpus.parquet"])) == 8  # a corpus spans devices
    corpus.iloc[:1].assign(provenance="measured").pipe(
        lambda r: pd.concat([r, corpus.iloc[1:]])).to_parquet(tmp_path / "corpus.parquet")
    with pytest.raises(InputError, match="mix provenances"):
        load_physics([tmp_path / "corpus.parquet"])


def _truth(tmp_path: Path, edit: dict[str, object] | None = None) -> tuple[Path, list[JobSpec]]:
    jobs = table_jobs(4, steps_per_epoch=100)[:4]
    rows = pd.DataFrame([{"model": j.model, "dataset": j.dataset, "optimizer": j.optimizer,
                          "batch_size": j.batch_size, "epochs": j.epochs,
                          "steps_per_epoch": 100, "exec_time_s": 10.0 + i, "status": "ok",
                          "device": "t4", "provenance": "emulated"}
                         for i, j in enumerate(jobs)])
    for col, v in (edit or {}).items():
        rows.loc[0, col] = v
    (tmp_path / "t4").mkdir(exist_ok=True)
    rows.to_parquet(tmp_path / "t4" / "labels.parquet")
    return tmp_path, jobs


def test_truth_labels_checked_on_every_row(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    d, jobs = _truth(tmp_path)
    assert set(load_truth(jobs, ["t4"], d)["provenance"]) == {"emulated"}
    _truth(tmp_path, {"provenance": "measured"})
    with pytest.raises(InputError, match="mix provenances"):
        load_truth(jobs, ["t4"], d)
    with pytest.raises(InputError, match="mix provenances"):
        truth_steps(d, ["t4"])
    _truth(tmp_path, {"device": "v100"})
    with pytest.raises(InputError, match="2 devices"):
        load_truth(jobs, ["t4"], d)
    (tmp_path / "v100").mkdir()
    pd.read_parquet(d / "t4" / "labels.parquet").assign(device="t4").to_parquet(
        tmp_path / "v100" / "labels.parquet")
    with pytest.raises(InputError, match="not 'v100'"):
        load_truth(jobs, ["v100"], d)
    missing = str(tmp_path / "nosuch")
    for cmd in ("tjng", "allocate"):
        _one_line_exit_2(capsys, [cmd, "--jobs", "table4", "--cluster", "t4:1", "--truth",
                                  missing, "-o", str(tmp_path / "o")], "no such folder")
    assert not (tmp_path / "o").exists()


def _runs(d: Path, device: str, provenance: str = "emulated", n: int = 2) -> Path:
    for i in range(n):
        job = JobSpec("lenet", "cifar10", "sgd", 8, i + 1, steps_per_epoch=3)
        meta = TraceMeta(run_id=job.key, job=job.to_dict(), device=device, status="ok",
                         exec_time_s=2.0, provenance=provenance, mem_total_mb=8192.0)
        df = pd.DataFrame({"t_s": np.arange(12) / 6, "gpu_util": np.full(12, 90.0),
                           "gpu_mem_util": np.full(12, 40.0), "gpu_mem": np.full(12, 500.0),
                           "cpu_util": np.full(12, 30.0)})
        p = write_trace(d / "traces" / f"{job.key}.parquet", df, meta)
        with Ledger(d / "ledger.sqlite") as led:
            led.record(meta, p)
    return d


def test_build_dataset_keyed_by_device_and_atomic(tmp_path: Path) -> None:
    a, b = _runs(tmp_path / "a", "t4"), _runs(tmp_path / "b", "v100")
    out = tmp_path / "ds"
    with pytest.raises(InputError, match="2 t4, 2 v100"):  # same run ids, other device
        build_dataset([a, b], out, progress=False, graphs=False)
    assert not out.exists()
    m = build_dataset([a, a], out, progress=False, graphs=False)
    assert m["rows"] == 2 and m["duplicate_runs"] == 2 and m["host_busy_runs"] == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    meas = _runs(tmp_path / "m", "t4", "measured")
    with pytest.raises(InputError, match="refusing to overwrite"):
        build_dataset([meas], out, progress=False, graphs=False)
    with pytest.raises(InputError, match="refusing to overwrite"):
        build_dataset([b], out, progress=False, graphs=False)
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="gpuscope did not write"):
        build_dataset([a], stray, progress=False, graphs=False)
    assert (stray / "notes.txt").read_text() == "mine"
    m2 = build_dataset([a], out, progress=False, graphs=False, notes=["rebuilt"])
    assert m2["notes"] == ["rebuilt"] and json.loads((out / "manifest.json").read_text()) == m2
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_labels_a_model_cannot_learn_from_are_refused(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    allerr = _copy_dataset(EMULATED / "h100", tmp_path / "allerr", rows=10)
    pd.read_parquet(allerr / "labels.parquet").assign(status="error").to_parquet(
        allerr / "labels.parquet")
    renamed = _copy_dataset(EMULATED / "h100", tmp_path / "renamed", rows=10)
    pd.read_parquet(renamed / "labels.parquet").rename(
        columns={"exec_time_s": "exec_s"}).to_parquet(renamed / "labels.parquet")
    vocab = _copy_dataset(EMULATED / "h100", tmp_path / "vocab", rows=10)
    (vocab / "vocab.json").write_text('{"format": "nope"}')
    out = tmp_path / "m.pt"
    for ds, needle in ((allerr, "no ok run among 10 rows (10 error)"),
                       (renamed, "lack target column(s) exec_time_s"),
                       (vocab, "vocabulary")):
        _one_line_exit_2(capsys, ["train", "--arch", "gnn", "--dataset", str(ds), "-o",
                                  str(out), "--quiet"], needle)
    for ds, needle in ((allerr, "no ok run"), (renamed, "exec_time_s")):
        with pytest.raises(InputError, match=needle):
            load_physics([ds], builder=_NoFeatures())  # type: ignore[arg-type]
    assert not out.exists()


def test_label_refuses_a_traces_folder_of_two_devices(tmp_path: Path) -> None:
    from gpuscope.profiling import label_runs

    a = _runs(tmp_path / "a", "t4")
    assert set(label_runs(a, progress=False)["device"]) == {"t4"}
    b = _runs(tmp_path / "b", "v100", n=1)
    mixed = tmp_path / "mixed" / "traces"
    mixed.mkdir(parents=True)
    for i, tp in enumerate([*sorted((a / "traces").glob("*.parquet")),
                            *sorted((b / "traces").glob("*.parquet"))]):
        shutil.copy2(tp, mixed / f"r{i}.parquet")
    with pytest.raises(InputError, match="2 devices"):
        label_runs(mixed.parent, progress=False)


def test_one_device_gnn_refuses_another_device(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    q = tmp_path / "q.csv"
    q.write_text("model,dataset,optimizer,batch_size,epochs\nlenet,cifar10,sgd,8,1\n")
    model = str(ROOT / "datasets" / "checkpoints" / "h100-driple.pt")
    _one_line_exit_2(capsys, ["predict", "--model", model, "--jobs", str(q), "-o",
                              str(tmp_path / "p.csv"), "--device", "nosuch"], "'h100' only")
    assert not (tmp_path / "p.csv").exists()
