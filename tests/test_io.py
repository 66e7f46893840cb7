"""gpuscope.core.io and gpuscope.core.limits: one error path for readers and writers,
atomic writes, outputs never overwrite inputs, bounded numbers and memory."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pandas as pd
import pytest

from gpuscope.core.errors import InputError
from gpuscope.core.io import (
    atomic_write,
    check_output,
    read_csv,
    read_json,
    read_parquet,
    read_toml,
    write_table,
    write_text,
)
from gpuscope.core.limits import (
    check_finite,
    check_memory,
    memory_budget,
    nonneg_int,
    pos_float_or_inf,
    seed_int,
)


@pytest.mark.parametrize("reader,content,match", [
    (read_json, "{not json", "not valid JSON"),
    (read_toml, "[x\n= 1", "not valid TOML"),
    (read_csv, "", "is empty"),
    (read_csv, 'a,b\n1,"x\n2,3,4', "not a valid CSV"),
    (read_parquet, "PAR1 no footer", "not a valid parquet"),
    (read_json, b"\xff\xfe\x00", "not UTF-8"),
])
def test_readers_name_file_and_problem(tmp_path: Path, reader, content, match) -> None:
    p = tmp_path / "f.x"
    p.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(InputError, match=match) as e:
        reader(p)
    assert str(p) in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("reader", [read_json, read_toml, read_csv, read_parquet])
def test_readers_missing_and_directory(tmp_path: Path, reader) -> None:
    with pytest.raises(InputError, match="no such file"):
        reader(tmp_path / "nope")
    with pytest.raises(InputError, match="directory"):
        reader(tmp_path)


def test_read_json_kind(tmp_path: Path) -> None:
    p = tmp_path / "a.json"
    p.write_text("[1]")
    assert read_json(p, kind=list) == [1]
    with pytest.raises(InputError, match="must hold a JSON object, not array"):
        read_json(p, kind=dict)


def test_check_output_refusals(tmp_path: Path) -> None:
    inp = tmp_path / "q.csv"
    inp.write_text("x\n")
    (tmp_path / "d").mkdir()
    with pytest.raises(InputError, match="also an input"):
        check_output(tmp_path / "." / "q.csv", [inp])
    with pytest.raises(InputError, match="is a directory"):
        check_output(tmp_path / "d", [])
    with pytest.raises(InputError, match="is a file, not a folder"):
        check_output(inp / "sub" / "o.csv", [])
    with pytest.raises(InputError, match="is a file; give a folder"):
        check_output(inp, [], kind="dir")
    with pytest.raises(InputError, match="holds the input"):
        check_output(tmp_path, [inp], kind="dir")
    with pytest.raises(InputError, match="/proc"):
        check_output("/proc/gpuscope-test/o.csv", [])
    (tmp_path / "d" / "labels.parquet").write_text("x")
    with pytest.raises(InputError, match="input folder"):  # a file inside an input folder
        check_output(tmp_path / "d" / "labels.parquet", [tmp_path / "d"])
    assert check_output(tmp_path / "new" / "o.csv", [inp]) == tmp_path / "new" / "o.csv"
    assert not (tmp_path / "new").exists()  # nothing is created by the check


def test_atomic_write_leaves_nothing_on_failure(tmp_path: Path) -> None:
    out = tmp_path / "o.txt"
    out.write_text("old\n")
    with pytest.raises(RuntimeError):
        with atomic_write(out) as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed mid-write")
    assert out.read_text() == "old\n" and sorted(os.listdir(tmp_path)) == ["o.txt"]
    write_text(out, "new\n")
    assert out.read_text() == "new\n" and sorted(os.listdir(tmp_path)) == ["o.txt"]


def test_atomic_write_oserror_is_input_error(tmp_path: Path, monkeypatch) -> None:
    def full(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", full)
    with pytest.raises(InputError, match="No space left"):
        write_table(pd.DataFrame({"a": [1]}), tmp_path / "t.csv")
    assert os.listdir(tmp_path) == []


def test_number_types() -> None:
    assert nonneg_int("0") == 0 and nonneg_int("1e3") == 1000
    for bad in ("-1", "nan", "inf", "1.5", "1e30", "x"):
        with pytest.raises(argparse.ArgumentTypeError):
            nonneg_int(bad)
    with pytest.raises(argparse.ArgumentTypeError):
        seed_int(str(2**32))
    assert pos_float_or_inf("inf") == float("inf")
    with pytest.raises(argparse.ArgumentTypeError):
        pos_float_or_inf("nan")
    with pytest.raises(InputError, match="finite"):
        check_finite("timeout_s", float("inf"))


def test_memory_budget(monkeypatch) -> None:
    monkeypatch.setenv("GPUSCOPE_MAX_MEMORY_MB", "10")
    assert memory_budget() == 10 * 2**20
    check_memory("small", 2**20)
    with pytest.raises(InputError, match=r"needs about 1\.0 GB, over the limit of 10\.0 MB"):
        check_memory("big", 2**30)
    monkeypatch.delenv("GPUSCOPE_MAX_MEMORY_MB")
    assert memory_budget() > 0  # half of psutil's available memory
    monkeypatch.setenv("GPUSCOPE_MAX_MEMORY_MB", "nan")
    with pytest.raises(InputError):
        memory_budget()


def test_graph_export_keeps_the_user_graphs_metadata(tmp_path: Path) -> None:
    """``graph export --graph g.json`` once relabelled a user graph imagenet / batch 1."""
    import json

    from gpuscope.cli import main

    g = tmp_path / "g.json"
    assert main(["graph", "export", "--model", "lenet", "--dataset", "cifar10",
                 "--batch-size", "8", "-o", str(g)]) == 0
    before = g.read_bytes()
    assert main(["graph", "export", "--graph", str(g), "-o", str(tmp_path / "g2.json")]) == 0
    meta = json.loads((tmp_path / "g2.json").read_text())["meta"]
    assert (meta["model"], meta["dataset"], meta["batch_size"]) == ("lenet", "cifar10", 8)
    assert main(["graph", "export", "--graph", str(g), "-o", str(g)]) == 2
    assert g.read_bytes() == before
