"""Peak memory of every command that reads a file, fed the worst hostile file of each kind
just under gpuscope's default bounds: the target is under 1 GB for every case.

For each input format the benchmark writes, in a temporary folder, the file that costs most
to parse while still passing the size bounds as they stand (read from gpuscope itself, so
the cases follow the bounds when they change): CSV tables of unique cells, JSON of empty
objects and of unique strings, a gzip file that inflates to the bound, TOML of tables and of
unique strings, parquet files of many rows (label rows, a trace, unique strings, a column of
zeros that compresses to nothing), checkpoints holding one big tensor or a pickle of empty
dicts (plain and inside a zip), a loss log of tiny rows, and a queue of valid rows (CSV and
JSON). Each case runs ``python -m gpuscope ...`` as a child with the default environment
(no ``GPUSCOPE_MAX_*`` variables), its peak resident memory sampled by
``hostile_scale.run``; a child is killed after ``--timeout`` seconds or above ``--kill-mb``.
One row per case (case, exit code, last stderr line, peak MB, wall s), then the summary.
Usage:

    python benchmarks/hostile_memory.py [--quick] [--only SUBSTRING] [--timeout 120]
"""

from __future__ import annotations

import argparse
import gzip
import io
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from hostile_scale import MEMORY_TARGET_MB, run, write_queue  # noqa: E402

_MARGIN = 1 << 16  # how far under a byte bound a file stays
QUEUE_HEADER = "job_id,model,dataset,optimizer,batch_size,epochs,steps_per_epoch,arrival_s"


def bounds() -> dict[str, int | None]:
    """gpuscope's default bounds, as the code under test states them (a bound it does not
    have falls back to the one that applied before: the file bound; None for a count)."""
    from gpuscope.core.io import checkpoints, readers

    file = readers.input_limit()

    def mb(module: object, name: str) -> int:
        return readers.input_limit(getattr(module, name)) if hasattr(module, name) else file

    values = getattr(readers, "value_limit", None)
    pickle = getattr(checkpoints, "pickle_limit", None)
    checkpoint = mb(checkpoints, "MAX_CHECKPOINT_MB")
    return {"file": file, "text": mb(readers, "MAX_TEXT_MB"),
            "toml": readers.input_limit(readers.MAX_TOML_MB), "checkpoint": checkpoint,
            "pickle": min(pickle(), checkpoint) if pickle else checkpoint,
            "values": values() if values else None}


# -- writers of hostile files -----------------------------------------------------------
def _hex_cells(start: int, n: int, width: int, ncol: int) -> bytes:
    """``n`` unique lowercase-hex cells of ``width`` chars, ``ncol`` to a line."""
    import numpy as np

    ids = np.arange(start, start + n, dtype=np.int64)
    out = np.empty((n, width + 1), dtype=np.uint8)
    digits = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    for k in range(width):
        out[:, width - 1 - k] = digits[(ids >> (4 * k)) & 15]
    out[:, width] = ord(",")
    out[ncol - 1::ncol, width] = ord("\n")
    return out.tobytes()


def _count_and_width(room: int, values: int | None, per: int = 1) -> tuple[int, int]:
    """Most items of at least 6 hex chars (16.7 million distinct; +``per`` bytes of syntax
    each) in ``room`` bytes, at most ``values``; the width that fills ``room`` with that
    many."""
    n = min(room // (6 + per), 16**6)
    if values:
        n = min(n, values - 1024)
    return n, max(6, room // n - per)


def csv_cells(path: Path, size: int, values: int | None, header: str = QUEUE_HEADER) -> None:
    """A CSV of unique cells: as many as the value bound allows, each as long as the byte
    bound allows."""
    ncol = header.count(",") + 1
    head = (header + "\n").encode()
    n, width = _count_and_width(size - len(head) - _MARGIN, values)
    n -= n % ncol
    with path.open("wb") as fh:
        fh.write(head)
        for s in range(0, n, 1 << 20):
            fh.write(_hex_cells(s, min(1 << 20, n - s), width, ncol))


def csv_one_line(path: Path, size: int, _values: int | None) -> None:
    """A queue header and one row whose first cell fills the byte bound."""
    with path.open("wb") as fh:
        fh.write((QUEUE_HEADER + "\n").encode())
        left = size - 2 * _MARGIN
        while left > 0:
            fh.write(b"x" * min(left, 1 << 24))
            left -= 1 << 24
        fh.write(b",resnet20,cifar10,sgd,8,1,100,0\n")


def loss_log(path: Path, size: int, values: int | None) -> None:
    """``step,loss`` then the tiniest rows: ``1,1``."""
    n = (size - _MARGIN) // 4
    if values:
        n = min(n, values // 2 - 1024)
    with path.open("wb") as fh:
        fh.write(b"step,loss\n")
        for s in range(0, n, 1 << 22):
            fh.write(b"1,1\n" * min(1 << 22, n - s))


def json_dicts(path: Path, size: int, values: int | None) -> None:
    """A JSON list of empty objects (about 70 bytes of Python each for 3 of text)."""
    n = (size - _MARGIN) // 3
    if values:
        n = min(n, values // 2 - 1024)  # gpuscope counts an empty object as two values
    with path.open("wb") as fh:
        fh.write(b"[")
        for s in range(0, n, 1 << 22):
            fh.write(b"{}," * min(1 << 22, n - s))
        fh.write(b"{}]")


def json_strings(path: Path, size: int, values: int | None) -> None:
    """A JSON list of unique strings filling the byte bound."""
    import numpy as np

    n, width = _count_and_width(size - _MARGIN, values, per=3)
    with path.open("wb") as fh:
        fh.write(b"[")
        for s in range(0, n, 1 << 20):
            m = min(1 << 20, n - s)
            cells = np.frombuffer(_hex_cells(s, m, width, 1), dtype=np.uint8).reshape(m, -1)
            out = np.full((m, width + 3), ord('"'), dtype=np.uint8)
            out[:, 1:width + 1] = cells[:, :width]
            out[:, width + 2] = ord(",")
            fh.write(out.tobytes())
        fh.write(b'"end"]')


def gzip_bomb(path: Path, size: int, values: int | None) -> None:
    """A ``.json.gz`` of ``[0,0,...]`` that inflates to just under the byte bound."""
    n = (size - _MARGIN) // 2
    if values:
        n = min(n, values - 1024)
    with gzip.open(path, "wb", compresslevel=9) as fh:
        fh.write(b"[")
        for s in range(0, n, 1 << 22):
            fh.write(b"0," * min(1 << 22, n - s))
        fh.write(b"0]")


def toml_tables(path: Path, size: int, _values: int | None) -> None:
    """A campaign header then ``[[matrix]]`` tables up to the TOML bound."""
    head = b'[campaign]\nname = "t"\n'
    n = (size - _MARGIN) // len(b"[[matrix]]\n")
    path.write_bytes(head + b"[[matrix]]\n" * n)


def toml_strings(path: Path, size: int, _values: int | None) -> None:
    """A TOML array of unique strings up to the TOML bound."""
    n, width = _count_and_width(size - _MARGIN, None, per=3)
    cells = _hex_cells(0, n, width, 1).replace(b"\n", b'","')
    path.write_bytes(b'x = ["' + cells + b'end"]\n')


def _rows_for(size: int, values: int | None, ncol: int, row_bytes: int) -> int:
    n = (size - _MARGIN) // row_bytes
    return min(n, values // ncol - 1024) if values else n


def parquet_labels(path: Path, size: int, values: int | None) -> None:
    """A dataset folder whose labels.parquet repeats the bundled v100 rows up to the bounds
    (uncompressed size, cells)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    shutil.copytree(ROOT / "datasets" / "emulated" / "v100", path)
    t = pq.read_table(path / "labels.parquet")
    row_bytes = max(1, sum(c.nbytes for c in t.columns) // t.num_rows)
    n = _rows_for(size, values, t.num_columns, row_bytes)
    reps = [t] * (n // t.num_rows)
    pq.write_table(pa.concat_tables(reps), path / "labels.parquet", compression="zstd")


def parquet_trace(path: Path, size: int, values: int | None, src: Path | None = None) -> None:
    """A trace (a real one's metadata and columns) of constant rows up to the bounds: a few
    kB on disk."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    assert src is not None
    t = pq.read_table(src)
    n = _rows_for(size, values, t.num_columns, 8 * t.num_columns)
    cols = {c: pa.array([t.column(c)[0].as_py()] * 1).take(pa.array([0] * n))
            for c in t.column_names}
    out = pa.table(cols).replace_schema_metadata(t.schema.metadata)
    pq.write_table(out, path, compression="zstd")


def parquet_kernels(path: Path, size: int, values: int | None) -> None:
    """A kernel table (``op, B, H, device, latency_ms``) whose ``op`` cells are unique
    strings, up to the bounds."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = _rows_for(size, values, 5, 8 * 3 + 24 + 8)
    ops = np.char.add("op", np.arange(n).astype("U12")).astype(object)
    pq.write_table(pa.table({"op": ops, "B": np.ones(n), "H": np.ones(n),
                             "device": pa.array(["t4"] * 1).take(pa.array(np.zeros(n, int))),
                             "latency_ms": np.ones(n)}), path, compression="zstd")


def ck_tensor(path: Path, size: int, _values: int | None) -> None:
    """A zip checkpoint holding one float tensor just under the byte bound."""
    import torch

    torch.save({"w": torch.zeros((size - 4 * _MARGIN) // 4)}, path)


def _dict_pickle(n: int) -> bytes:
    """A protocol-2 pickle of a list of ``n`` empty dicts (one byte each)."""
    return b"\x80\x02](" + b"}" * n + b"e."


def ck_legacy_dicts(path: Path, size: int, values: int | None) -> None:
    """A pre-zip (legacy) checkpoint: one pickle of empty dicts filling the byte bound."""
    path.write_bytes(_dict_pickle(size - _MARGIN))


def ck_zip_dicts(path: Path, size: int, _values: int | None) -> None:
    """A zip checkpoint whose ``data.pkl`` is a pickle of empty dicts up to the byte bound."""
    import torch

    buf = io.BytesIO()
    torch.save({"a": 1}, buf)
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("data.pkl"):
                data = _dict_pickle(size - 4 * _MARGIN)
            z.writestr(info.filename, data)


# -- the cases --------------------------------------------------------------------------
Writer = Callable[[Path, int, "int | None"], None]
#: kind -> (file name, writer, which byte bound)
KINDS: dict[str, tuple[str, Writer, str]] = {
    "csv-cells": ("cells.csv", csv_cells, "text"),
    "csv-one-line": ("line.csv", csv_one_line, "text"),
    "csv-queue": ("queue.csv", lambda p, s, v: _valid_queue_csv(p, s, v), "text"),
    "json-queue": ("queue.json", lambda p, s, v: _valid_queue_json(p, s, v), "text"),
    "json-dicts": ("dicts.json", json_dicts, "text"),
    "json-strings": ("strings.json", json_strings, "text"),
    "gzip-bomb": ("bomb.json.gz", gzip_bomb, "text"),
    "toml-tables": ("tables.toml", toml_tables, "toml"),
    "toml-strings": ("strings.toml", toml_strings, "toml"),
    "loss-log": ("loss.csv", loss_log, "text"),
    "parquet-labels": ("ds", parquet_labels, "file"),
    "parquet-kernels": ("kernels.parquet", parquet_kernels, "file"),
    "ck-tensor": ("tensor.pt", ck_tensor, "checkpoint"),
    "ck-legacy-dicts": ("legacy.pt", ck_legacy_dicts, "pickle"),
    "ck-zip-dicts": ("zipdicts.pt", ck_zip_dicts, "pickle"),
}


def _valid_queue_csv(path: Path, size: int, values: int | None) -> None:
    rows = _rows_for(size, values, 8, 56)
    write_queue(path, rows)


def _valid_queue_json(path: Path, size: int, values: int | None) -> None:
    row = ('{"job_id":"q%d","model":"resnet20","dataset":"cifar10","optimizer":"sgd",'
           '"batch_size":128,"epochs":1,"steps_per_epoch":100,"arrival_s":%d}')
    rows = _rows_for(size, values, 17, len(row) + 16)
    with path.open("w") as fh:
        fh.write("[" + ",".join(row % (i, i) for i in range(rows)) + "]")


#: (case, kind, argv); ``{X}``: the hostile file, ``{d}``: the folder of valid inputs.
CASES: list[tuple[str, str, list[str]]] = [
    ("jobs check: CSV of unique cells", "csv-cells", ["jobs", "check", "{X}"]),
    ("jobs check: CSV of valid rows", "csv-queue", ["jobs", "check", "{X}"]),
    ("jobs check: CSV of one huge line", "csv-one-line", ["jobs", "check", "{X}"]),
    ("jobs check: JSON of valid rows", "json-queue", ["jobs", "check", "{X}"]),
    ("jobs check: JSON of empty objects", "json-dicts", ["jobs", "check", "{X}"]),
    ("estimate --jobs: CSV of unique cells", "csv-cells",
     ["estimate", "--jobs", "{X}", "--devices", "v100", "--quiet"]),
    ("allocate --jobs: CSV of unique cells", "csv-cells",
     ["allocate", "--jobs", "{X}", "--cluster", "v100:1", "-o", "{d}/out/al"]),
    ("tjng --jobs: CSV of unique cells", "csv-cells",
     ["tjng", "--jobs", "{X}", "--cluster", "v100:1", "-o", "{d}/out/tj"]),
    ("predict --jobs: CSV of unique cells", "csv-cells",
     ["predict", "--model", "{d}/ck.pt", "--jobs", "{X}", "-o", "{d}/out/p.csv"]),
    ("mdrl train --tjng: CSV of unique cells", "csv-cells",
     ["mdrl", "train", "--tjng", "{X}", "--durations", "tjng", "--episodes", "1", "--quiet",
      "-o", "{d}/out/mt"]),
    ("schedule --instance: times CSV of unique cells", "csv-cells",
     ["schedule", "--instance", "{d}/inst-hostile", "--method", "fifo", "-o", "{d}/out/sch"]),
    ("specon export-k8s --from: jobs CSV of unique cells", "csv-cells",
     ["specon", "export-k8s", "--from", "{d}/sp-hostile", "-o", "{d}/out/k8s"]),
    ("specon fit: loss log of tiny rows", "loss-log", ["specon", "fit", "{X}"]),
    ("graph show: JSON of empty objects", "json-dicts", ["graph", "show", "{X}"]),
    ("graph show: gzip inflating to the bound", "gzip-bomb", ["graph", "show", "{X}"]),
    ("emulate --params: JSON of unique strings", "json-strings",
     ["emulate", "{d}/c.toml", "--devices", "v100", "--params", "{X}", "--out", "{d}/out/em",
      "--quiet"]),
    ("estimate --params: JSON of empty objects", "json-dicts",
     ["estimate", "--model", "lenet", "--dataset", "cifar10", "--batch-size", "8", "--devices",
      "v100", "--params", "{X}", "--quiet"]),
    ("graph export --vocab: JSON of empty objects", "json-dicts",
     ["graph", "export", "--model", "lenet", "--dataset", "cifar10", "--batch-size", "8",
      "--vocab", "{X}", "--encode", "-o", "{d}/out/g.json"]),
    ("emulate: campaign TOML of tables", "toml-tables",
     ["emulate", "{X}", "--devices", "v100", "--out", "{d}/out/em", "--quiet"]),
    ("emulate: campaign TOML of unique strings", "toml-strings",
     ["emulate", "{X}", "--devices", "v100", "--out", "{d}/out/em", "--quiet"]),
    ("allocate --cluster: TOML of tables", "toml-tables",
     ["allocate", "--jobs", "{d}/q.csv", "--cluster", "{X}", "-o", "{d}/out/al"]),
    ("emulate --catalog: TOML of unique strings", "toml-strings",
     ["emulate", "{d}/c.toml", "--devices", "v100", "--catalog", "{X}", "--out",
      "{d}/out/em", "--quiet"]),
    ("train: labels parquet of many rows", "parquet-labels",
     ["train", "--dataset", "{X}", "-o", "{d}/out/m.pt", "--quiet"]),
    ("evaluate: labels parquet of many rows", "parquet-labels",
     ["evaluate", "--dataset", "{X}", "--model", "{d}/ck.pt"]),
    ("emulator fit: kernel parquet of unique strings", "parquet-kernels",
     ["emulator", "fit", "--kernels", "{X}", "--device", "t4", "-o", "{d}/out/fit"]),
    ("profile plot: trace of constant rows", "parquet-trace",
     ["profile", "plot", "{X}", "-o", "{d}/out/p.png"]),
    ("profile label: a runs folder with that trace", "parquet-trace",
     ["profile", "label", "{d}/runs-hostile/v100", "-o", "{d}/out/l.csv"]),
    ("predict --model: checkpoint of one big tensor", "ck-tensor",
     ["predict", "--model", "{X}", "--jobs", "{d}/q.csv", "-o", "{d}/out/p.csv"]),
    ("predict --model: legacy pickle of empty dicts", "ck-legacy-dicts",
     ["predict", "--model", "{X}", "--jobs", "{d}/q.csv", "-o", "{d}/out/p.csv"]),
    ("evaluate --model: zip whose data.pkl is empty dicts", "ck-zip-dicts",
     ["evaluate", "--dataset", "{d}/ds", "--model", "{X}"]),
    ("mdrl export --model-dir: checkpoint of one big tensor", "ck-tensor",
     ["mdrl", "export", "--policy", "dqn", "--model-dir", "{d}/mdrl-hostile", "-o",
      "{d}/out/mx"]),
]
#: The cases ``--quick`` runs: one per kind of file.
QUICK = {0, 1, 2, 4, 12, 14, 15, 18, 19, 22, 24, 25, 27, 28, 29}


def gpuscope(argv: list[str], d: Path) -> None:
    """Run a gpuscope command that builds a valid input (it must succeed)."""
    subprocess.run([sys.executable, "-m", "gpuscope", *argv], check=True, cwd=d,
                   env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def valid_inputs(d: Path, cases: list[tuple[str, str, list[str]]]) -> None:
    """The valid inputs the cases name besides the hostile file."""
    words = " ".join(" ".join([k, *a]) for _, k, a in cases)  # the kinds and the argvs
    (d / "q.csv").write_text("model,dataset,optimizer,batch_size,epochs\n"
                             "lenet,cifar10,sgd,8,1\nresnet20,cifar10,adam,32,2\n")
    (d / "c.toml").write_text(
        '[campaign]\nname = "t"\ntimeout_s = 60\noptimizers = ["sgd"]\nbatch_sizes = [8]\n'
        'epochs = [1]\n[[matrix]]\nmodels = ["lenet"]\ndatasets = ["cifar10"]\n'
        'steps_per_epoch = 5\n')
    shutil.copy(ROOT / "datasets" / "checkpoints" / "v100.pt", d / "ck.pt")
    shutil.copytree(ROOT / "datasets" / "emulated" / "v100", d / "ds")
    if "inst-hostile" in words:
        gpuscope(["tjng", "--jobs", str(d / "q.csv"), "--cluster", "v100:1", "-o",
                  str(d / "tj")], d)
        shutil.copytree(d / "tj" / "instance", d / "inst-hostile")
    if "sp-hostile" in words:
        gpuscope(["specon", "simulate", "-o", str(d / "sp-hostile")], d)
    if "parquet-trace" in words or "runs-hostile" in words:
        gpuscope(["emulate", str(d / "c.toml"), "--devices", "v100", "--out",
                  str(d / "runs-hostile"), "--quiet"], d)


def make_kind(kind: str, d: Path, b: dict[str, int | None]) -> Path:
    """The hostile file of ``kind`` under ``d`` (written once), placed where the cases of
    that kind expect it."""
    if kind == "parquet-trace":
        trace = next((d / "runs-hostile" / "v100" / "traces").glob("*.parquet"))
        path = d / "trace.parquet"
        if not path.exists():
            parquet_trace(path, b["file"] or 0, b["values"], src=trace)
            shutil.copy(path, trace)
        return path
    name, writer, which = KINDS[kind]
    path = d / name
    if not path.exists():
        writer(path, b[which] or 0, b["values"])
        if kind == "csv-cells":
            if (d / "inst-hostile").exists():
                shutil.copy(path, d / "inst-hostile" / "SelectJobs_times.csv")
            if (d / "sp-hostile").exists():
                shutil.copy(path, d / "sp-hostile" / "jobs-specon.csv")
        if kind == "ck-tensor":
            (d / "mdrl-hostile").mkdir()
            for part in ("A100", "V100", "P100", "K80", "T4"):
                os.link(path, d / "mdrl-hostile" / f"{part}.pt")
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one case per kind of file")
    ap.add_argument("--only", default="", help="run the cases whose name holds this text")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per case")
    ap.add_argument("--kill-mb", type=float, default=4096.0,
                    help="kill a case above this peak (the machine's safety net)")
    ap.add_argument("--max-input-mb", default=None,
                    help="run under this $GPUSCOPE_MAX_INPUT_MB (a smoke test; default unset)")
    a = ap.parse_args()
    for k in [k for k in os.environ if k.startswith("GPUSCOPE_MAX_")]:
        del os.environ[k]  # the default bounds
    if a.max_input_mb:
        os.environ["GPUSCOPE_MAX_INPUT_MB"] = a.max_input_mb
    cases = [c for i, c in enumerate(CASES) if (not a.quick or i in QUICK)
             and a.only.lower() in c[0].lower()]
    b = bounds()
    print("bounds: " + ", ".join(f"{k} {v / 2**20:g} MB" if k != "values" else f"{k} {v:,}"
                                 for k, v in b.items() if v), flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="gpuscope-hostile-") as tmp:
        d = Path(tmp)
        valid_inputs(d, cases)
        for name, kind, argv in cases:
            x = make_kind(kind, d, b)
            args = [s.replace("{X}", str(x)).replace("{d}", str(d)) for s in argv]
            shutil.rmtree(d / "out", ignore_errors=True)
            rc, wall, _cpu, peak, err = run(args, None, a.timeout, a.kill_mb)
            size = sum(f.stat().st_size for f in ([x] if x.is_file() else x.rglob("*")))
            rows.append((name, rc, err, peak, wall))
            print(f"{name} [{size / 2**20:.0f} MB]: exit {rc}, peak {peak:.0f} MB, "
                  f"{wall:.1f} s | {err[:150]}", flush=True)
    worst = max(rows, key=lambda r: r[3])
    over = sum(r[3] >= MEMORY_TARGET_MB for r in rows)
    slow = sum(r[4] >= a.timeout for r in rows)
    print(f"hostile memory: {len(rows)} cases, max peak {worst[3]:.0f} MB ({worst[0]}), "
          f"over 1 GB: {over} (target 0), killed after {a.timeout:g} s: {slow}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
