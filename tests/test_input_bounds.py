"""Bounds proportionate to what parsing costs (``gpuscope.core.io``): text 64 MB, TOML 1 MB,
checkpoints 64 MB with a 1 MB pickle, values (CSV and parquet cells, JSON values) and
distinct text cells counted before or while parsing. Each refusal is exit 2 and one line
naming the file, the bound and the environment variable that changes it; small bounds set
through those variables keep the inputs small. The peaks these bounds hold at their defaults
are printed by ``benchmarks/hostile_memory.py``."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from gpuscope.cli import main
from gpuscope.core.data import REPO_DATASETS
from gpuscope.core.errors import InputError
from gpuscope.core.io import read_csv, read_json, value_limit
from gpuscope.core.io.readers import json_shape

HEADER = "job_id,model,dataset,optimizer,batch_size,epochs,steps_per_epoch,arrival_s\n"


def _one_line(argv: list[str], capfd: pytest.CaptureFixture[str], *words: str) -> str:
    capfd.readouterr()
    assert main(argv) == 2
    err = capfd.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, err
    return err


def _queue(path: Path, rows: int, distinct: bool = False) -> Path:
    """A valid queue of ``rows`` rows (``distinct``: every text cell differs)."""
    lines = [f"q{i},resnet20,cifar10,sgd,8,1,100,{i}" if not distinct else
             ",".join(f"{c}{i}" for c in "qmdobesa") for i in range(rows)]
    path.write_text(HEADER + "\n".join(lines) + "\n")
    return path


def test_value_count_before_parsing() -> None:
    """JSON values are read off the text (strings removed); an empty container counts two."""
    assert json_shape('{"a": 1}') == (3, 1)
    assert json_shape('{"a,b:[": [1, {"c": 2}]}') == (7, 3)
    assert json_shape('"x"') == (1, 0)
    assert json_shape("[{},{}]")[0] == 5


def test_cells_and_values_over_the_bound(tmp_path: Path, monkeypatch,
                                         capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("GPUSCOPE_MAX_VALUES", "400")
    q = _queue(tmp_path / "q.csv", 60)  # 61 lines x 8 fields
    _one_line(["jobs", "check", str(q)], capfd, str(q), "cells", "400", "$GPUSCOPE_MAX_VALUES")
    params = tmp_path / "p.json"
    params.write_text("[" + ",".join(["{}"] * 300) + "]")
    _one_line(["estimate", "--model", "lenet", "--dataset", "cifar10", "--batch-size", "8",
               "--devices", "v100", "--params", str(params), "--quiet"], capfd, str(params),
              "JSON values", "$GPUSCOPE_MAX_VALUES")
    import pandas as pd

    k = tmp_path / "k.parquet"
    pd.DataFrame({"op": ["add"] * 100, "B": 1, "H": 4, "device": "t4",
                  "latency_ms": 0.02}).to_parquet(k)  # 500 cells, from the footer
    _one_line(["emulator", "fit", "--kernels", str(k), "--device", "t4", "-o",
               str(tmp_path / "fit")], capfd, str(k), "500 cells")
    monkeypatch.setenv("GPUSCOPE_MAX_VALUES", "a lot")
    _one_line(["jobs", "check", str(q)], capfd, "$GPUSCOPE_MAX_VALUES must be a whole number")


def test_distinct_text_cells_counted_while_parsing(tmp_path: Path, monkeypatch,
                                                   capfd: pytest.CaptureFixture[str]) -> None:
    """Repeated text is one object a chunk and passes; as many distinct cells refuse."""
    monkeypatch.setenv("GPUSCOPE_MAX_VALUES", "4000")
    assert value_limit() == 4000
    ok = _queue(tmp_path / "ok.csv", 400)  # 3,208 cells; distinct: 400 ids, 400 arrivals
    capfd.readouterr()
    assert main(["jobs", "check", str(ok)]) == 0
    bad = _queue(tmp_path / "bad.csv", 400, distinct=True)
    _one_line(["jobs", "check", str(bad)], capfd, str(bad), "distinct text cells", "2,000")
    with pytest.raises(InputError, match="distinct text cells"):
        read_csv(bad, dtype=object)


def test_text_and_toml_bounds_by_format(tmp_path: Path, capfd: pytest.CaptureFixture[str]
                                        ) -> None:
    """At the defaults: text over 64 MB and TOML over 1 MB refused unread (sparse files)."""
    big = tmp_path / "q.csv"
    with open(big, "wb") as fh:
        fh.truncate(65 * 2**20)
    _one_line(["jobs", "check", str(big)], capfd, str(big), "64.0 MB",
              "$GPUSCOPE_MAX_INPUT_MB")
    camp = tmp_path / "c.toml"
    with open(camp, "wb") as fh:
        fh.truncate(2 * 2**20)
    _one_line(["emulate", str(camp), "--devices", "v100", "--out", str(tmp_path / "em"),
               "--quiet"], capfd, str(camp), "1.0 MB")
    with pytest.raises(InputError, match="64.0 MB"):
        read_json(big)


def test_checkpoint_pickles_bounded(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """A pickle over 1 MB (each one-byte opcode can make an object of 100 bytes) is refused
    before torch reads it, in a zip checkpoint and as a pre-zip file."""
    src = zipfile.ZipFile(REPO_DATASETS / "checkpoints" / "v100.pt")
    bomb = tmp_path / "bomb.pt"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("data.pkl"):
                data = b"\x80\x02](" + b"}" * (2**20 + 10) + b"e."
            z.writestr(info.filename, data)
    _one_line(["evaluate", "--dataset", str(REPO_DATASETS / "emulated" / "v100"), "--model",
               str(bomb)], capfd, str(bomb), "its pickle (data.pkl)", "1.0 MB")
    part = tmp_path / "mdrl"
    part.mkdir()
    (part / "A100.pt").write_bytes(b"\x80\x02](" + b"}" * (2**20 + 10) + b"e.")
    _one_line(["mdrl", "export", "--policy", "dqn", "--model-dir", str(part), "-o",
               str(tmp_path / "mx")], capfd, "A100.pt", "not a zip archive", "1.0 MB")


def test_loss_log_read_column_wise(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A loss log's unreadable rows (NaN, text, a partial last row) are skipped."""
    from gpuscope.specon.losscurve import read_loss_log

    log = tmp_path / "loss.csv"
    log.write_text("step,epoch,t_s,loss\n0,0,0,3.0\n1,0,1,nan\n2,0,2,x\n3,0,3,1.5\n4,0")
    progress, loss = read_loss_log(log)
    assert progress.tolist() == [0.0, 1.0] and loss.tolist() == [3.0, 1.5]
    buf = io.StringIO("step,loss\n" + "".join(f"{i},{3 / (i + 1)}\n" for i in range(40)))
    (tmp_path / "ok.csv").write_text(buf.getvalue())
    assert main(["specon", "fit", str(tmp_path / "ok.csv")]) == 0
