"""gpuscope.core.io and gpuscope.core.limits: one path for every reader and writer (special
and huge files, nesting, parquet and checkpoint checks, spreadsheet-safe CSV, links and
output folders), atomic writes, outputs never overwrite inputs, bounded numbers and memory."""

from __future__ import annotations

import argparse
import json
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
    (read_json, b"\xff\xfe\x00", "binary, not text"),
    (read_json, b"\xff\xfe", "not UTF-8"),
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


def test_special_and_huge_files_are_refused_unopened(tmp_path: Path, monkeypatch) -> None:
    """A FIFO (which would block), a device and a file over the size bound are refused before
    they are read; text with a NUL byte is binary; a byte-order mark is dropped."""
    from gpuscope.core.io import read_text

    fifo = tmp_path / "q.csv"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="FIFO"):
        read_csv(fifo)
    with pytest.raises(InputError, match="character device"):
        read_json("/dev/zero")
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(2**40)
    with pytest.raises(InputError, match="over the limit"):
        read_json(big)
    monkeypatch.setenv("GPUSCOPE_MAX_INPUT_MB", "1")
    sparse = tmp_path / "sparse.toml"
    with open(sparse, "wb") as fh:
        fh.truncate(2**19)
    with pytest.raises(InputError, match="binary, not text"):
        read_toml(sparse)
    bom = tmp_path / "bom.txt"
    bom.write_bytes("\ufeffa,b\n".encode())
    assert read_text(bom) == "a,b\n"


def test_nesting_bound(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100 + "]" * 100)
    with pytest.raises(InputError, match="nested deeper than 64"):
        read_json(deep)
    (tmp_path / "deep.toml").write_text("a = " + "[" * 3000 + "]" * 3000)
    with pytest.raises(InputError, match="nested deeper"):
        read_toml(tmp_path / "deep.toml")
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps({"a": [[{"b": 1}]]}))
    assert read_json(ok) == {"a": [[{"b": 1}]]}


def test_parquet_extension_types_are_never_deserialised(tmp_path: Path) -> None:
    """A column of a registered extension type (pandas' periods) is refused from the file's
    footer, before pyarrow would build the type."""
    df = pd.DataFrame({"t_s": pd.period_range("2020", periods=3, freq="D")})
    df.to_parquet(tmp_path / "p.parquet")
    with pytest.raises(InputError, match="extension type"):
        read_parquet(tmp_path / "p.parquet")
    pd.DataFrame({"a": [1.0, float("inf")]}).to_parquet(tmp_path / "inf.parquet")
    from gpuscope.core.io import Column

    with pytest.raises(InputError, match="column 'a': row 2 is infinite"):
        read_parquet(tmp_path / "inf.parquet", schema=[Column("a")])


def test_checkpoints_bounded_and_checked_key_by_key(tmp_path: Path, monkeypatch) -> None:
    import io
    import zipfile

    import torch

    from gpuscope.core.errors import CheckpointError
    from gpuscope.core.io import check_keys, load_torch

    monkeypatch.setenv("GPUSCOPE_MAX_INPUT_MB", "1")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("x/data.pkl", b"\0" * (4 * 2**20))  # 4 MB inflated, a few kB stored
    (tmp_path / "bomb.pt").write_bytes(buf.getvalue())
    with pytest.raises(CheckpointError, match="decompresses to 4.0 MB"):
        load_torch(tmp_path / "bomb.pt")
    torch.save({"a": 1, "b": {"c": "x"}}, tmp_path / "ok.pt")
    obj = load_torch(tmp_path / "ok.pt")
    assert check_keys(obj, {"a": int, "b": {"c": str}}, "ck") == obj
    with pytest.raises(CheckpointError, match="key 'b.d' is missing"):
        check_keys(obj, {"b": {"d": str}}, "ck")
    with pytest.raises(CheckpointError, match="key 'a' must be text, not int"):
        check_keys(obj, {"a": str}, "ck")
    with pytest.raises(CheckpointError, match="must be a number, not bool"):
        check_keys({"x": True}, {"x": float}, "ck")


def test_spreadsheet_cells_round_trip(tmp_path: Path) -> None:
    from gpuscope.core.io import escape_cell, unescape_cell

    cells = ["=1+2", "+x", "-3", "@a", "\tt", "\rr", "'quoted", "plain", "", "-"]
    for c in cells:
        e = escape_cell(c)
        assert unescape_cell(e) == c
        assert not e.startswith(("=", "+", "-", "@", "\t", "\r")) or e == ""
    df = pd.DataFrame({"id": cells, "n": range(len(cells))})
    write_table(df, tmp_path / "t.csv")
    back = read_csv(tmp_path / "t.csv", keep_default_na=False, dtype={"id": str})
    assert back["id"].tolist() == cells and back["n"].tolist() == list(range(len(cells)))


def test_outputs_never_write_through_links(tmp_path: Path) -> None:
    (tmp_path / "target").write_text("keep\n")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    os.mkfifo(tmp_path / "fifo")
    for name, match in (("link", "symbolic link"), ("loop", "symbolic link"), ("fifo", "FIFO")):
        with pytest.raises(InputError, match=match):
            write_text(tmp_path / name, "x")
    with pytest.raises(InputError, match="character device"):
        write_text("/dev/null", "x")
    assert (tmp_path / "target").read_text() == "keep\n"


def test_output_folder_record_replace_and_sweep(tmp_path: Path) -> None:
    """Written as a whole with a record; replaced whole by the same command; refused when it
    holds another file or another command's output; a dead run's temporaries are swept (the
    old folder put back when the new one never arrived)."""
    from gpuscope.core.io import RECORD_NAME, output_folder, read_record, sweep_stale

    out = tmp_path / "out"
    with output_folder(out, "cmd a") as tmp:
        (tmp / "one.csv").write_text("1\n")
        (tmp / "sub").mkdir()
        (tmp / "sub" / "two.csv").write_text("2\n")
    rec = read_record(out)
    assert rec is not None and rec["command"] == "cmd a"
    assert rec["files"] == ["one.csv", "sub/two.csv"]
    with output_folder(out, "cmd a") as tmp:
        (tmp / "three.csv").write_text("3\n")
    assert sorted(p.name for p in out.iterdir()) == [RECORD_NAME, "three.csv"]
    with pytest.raises(InputError, match="output of `gpuscope cmd a`"):
        with output_folder(out, "cmd b"):
            pass
    (out / "notes.txt").write_text("mine\n")
    with pytest.raises(InputError, match="did not write .notes.txt"):
        with output_folder(out, "cmd a"):
            pass
    with pytest.raises(RuntimeError):
        with output_folder(tmp_path / "new", "cmd a") as tmp:
            (tmp / "x").write_text("half")
            raise RuntimeError("killed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    dead = 2**22 + 12345  # above the kernel's default pid_max: no such process
    os.rename(out, tmp_path / f".out.old-{dead}")
    (tmp_path / f".out.building-{dead}").mkdir()
    sweep_stale(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert (out / "notes.txt").read_text() == "mine\n"


def test_bounded_numbers_are_one_parser() -> None:
    from gpuscope.core.limits import check_number, parse_number

    assert parse_number("1e3", integer=True) == 1000 and parse_number(" 2.5 ") == 2.5
    for bad, kw in ((True, {}), ("true", {}), (float("nan"), {}), ("1e300", {"high": 1e12}),
                    (2**40, {"integer": True}), ("1.5", {"integer": True})):
        with pytest.raises(ValueError):
            parse_number(bad, **kw)
    with pytest.raises(InputError, match="q.csv: batch_size must be an integer, got True"):
        check_number("batch_size", True, integer=True, origin="q.csv")
    assert nonneg_int.__name__ == "nonneg_int"
