"""Hostile cases of the bad-input sweep: special files, huge files, deep nesting, tampered
checkpoints, labels and traces, stale and symlinked outputs, user code that exits. Each is
``(family, id, argv)`` like the others; :func:`build_hostile_inputs` writes what they read
next to the sweep's other inputs (``{d}``)."""

from __future__ import annotations

import io
import json
import os
import socket
import zipfile
from pathlib import Path

from badinput_cases import BASE, OUTPUTS, Case, _with

#: Extensions of the file inputs the hostile files are made for.
EXTS = (".csv", ".json", ".toml", ".parquet", ".pt", ".pbtxt", ".pb", ".json.gz")
#: Size of the sparse "huge" files (no disk is used): far over the sweep's input limit.
HUGE = 2**34


def build_hostile_inputs(d: Path) -> None:
    """Special files, huge sparse files, deeply nested documents, tampered files, stale and
    linked output folders under ``d``."""
    socks = []
    for ext in EXTS:
        os.mkfifo(d / f"fifo{ext}")
        (d / f"zero{ext}").symlink_to("/dev/zero")
        with open(d / f"huge{ext}", "wb") as fh:
            fh.truncate(HUGE)
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(d / f"sock{ext}"))
        socks.append(s)
    for s in socks:
        s.close()  # the socket file stays
    deep = 2000
    (d / "deep.json").write_text("[" * deep + "]" * deep)
    (d / "deep.toml").write_text("a = " + "[" * deep + "]" * deep + "\n")
    (d / "deep_tables.toml").write_text("".join(f"[{'.'.join(['t'] * i)}]\n"
                                                 for i in range(1, 80)))
    _tampered_checkpoints(d)
    _tampered_datasets(d)
    _tampered_traces(d)
    _outputs(d)
    (d / "factory.py").write_text(
        "import os, sys\nimport torch.nn as nn\n"
        "def exits():\n    sys.exit(0)\n"
        "def aborts():\n    os.abort()\n"
        "def quits():\n    os._exit(0)\n"
        "def raises():\n    raise RuntimeError('boom')\n"
        "sys_exit_at_import = None\n")
    (d / "exits_on_import.py").write_text("import sys\nsys.exit(5)\n")


def _tampered_checkpoints(d: Path) -> None:
    import torch

    ck = torch.load(d / "ck.pt", weights_only=True)
    missing = dict(ck)
    del missing["model"]
    torch.save(missing, d / "ck_missing_key.pt")
    torch.save({**ck, "targets": "exec_time_s"}, d / "ck_wrong_type.pt")
    torch.save({**ck, "model": {**ck["model"], "domain_min": "zero"}}, d / "ck_wrong_inner.pt")
    buf = io.BytesIO()  # a zip whose member inflates past the limit: a 65 MB bomb in ~64 kB
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("ck/data.pkl", b"\0" * (65 * 2**20))
    (d / "ck_bomb.pt").write_bytes(buf.getvalue())
    from gpuscope.mdrl.agent import DQNAgent, DQNConfig

    a = DQNAgent(7, 3, DQNConfig(hidden=8, layers=1))
    os.makedirs(d / "mdrl_bad", exist_ok=True)
    for part in ("A100", "V100"):
        a.save(d / "mdrl_bad" / f"{part}.pt")
    bad = torch.load(d / "mdrl_bad" / "A100.pt", weights_only=True)
    bad["config"]["hidden"] = 16  # the weights no longer fit the network
    torch.save(bad, d / "mdrl_bad" / "A100.pt")


def _tampered_datasets(d: Path) -> None:
    import shutil

    import numpy as np
    import pandas as pd

    lab = pd.read_parquet(d / "ds" / "labels.parquet")
    for name, change in (("nan", np.nan), ("inf", np.inf), ("neg", -5.0)):
        shutil.copytree(d / "ds", d / f"ds_exec_{name}")
        bad = lab.copy()
        bad.loc[bad.index[3], "exec_time_s"] = change
        bad.to_parquet(d / f"ds_exec_{name}" / "labels.parquet", index=False)
    shutil.copytree(d / "ds", d / "ds_text_target")
    lab.assign(gpu_util_peak=lab["gpu_util_peak"].astype(str)).to_parquet(
        d / "ds_text_target" / "labels.parquet", index=False)
    shutil.copytree(d / "ds", d / "ds_fifo")
    (d / "ds_fifo" / "labels.parquet").unlink()
    os.mkfifo(d / "ds_fifo" / "labels.parquet")
    import pyarrow as pa
    import pyarrow.parquet as pq

    shutil.copytree(d / "ds", d / "ds_edges")
    t = pq.read_table(d / "ds" / "graphs.parquet")
    ei = t.column("edge_index").to_pylist()
    ei[0] = [10**6] + ei[0][1:]
    t = t.set_column(t.schema.get_field_index("edge_index"), "edge_index",
                     pa.array(ei, type=pa.list_(pa.int64())))
    pq.write_table(t, d / "ds_edges" / "graphs.parquet")


def _tampered_traces(d: Path) -> None:
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pq.read_table(d / "trace.parquet")
    meta = json.loads(t.schema.metadata[b"gpuscope"])
    for name, change in (("meta_type", {"exec_time_s": "fast"}), ("meta_job", {"job": [1]}),
                         ("meta_missing", None)):
        m = dict(meta)
        if change is None:
            del m["device"]
        else:
            m.update(change)
        pq.write_table(t.replace_schema_metadata({**t.schema.metadata,
                                                  b"gpuscope": json.dumps(m).encode()}),
                       d / f"trace_{name}.parquet")
    df = pd.DataFrame({"t_s": pd.period_range("2020", periods=3, freq="D")})
    table = pa.Table.from_pandas(df, preserve_index=False)
    pq.write_table(table.replace_schema_metadata({**(table.schema.metadata or {}),
                                                  b"gpuscope": json.dumps(meta).encode()}),
                   d / "trace_ext.parquet")
    inf = t.to_pandas()
    inf.loc[1, "t_s"] = float("inf")
    pq.write_table(pa.Table.from_pandas(inf, preserve_index=False).replace_schema_metadata(
        t.schema.metadata), d / "trace_inf.parquet")


def _outputs(d: Path) -> None:
    """A folder of the user's, one written by another command, links and a FIFO as outputs."""
    for name in ("mine", "mine_sub"):
        (d / name).mkdir()
        (d / name / "notes.txt").write_text("my notes\n")
    (d / "mine_sub" / "sub").mkdir()
    (d / "mine_sub" / "sub" / "keep.md").write_text("keep me\n")
    (d / "other_cmd").mkdir()
    (d / "other_cmd" / "x.csv").write_text("a\n1\n")
    (d / "other_cmd" / ".gpuscope-output.json").write_text(json.dumps(
        {"format": "gpuscope.output/1", "command": "nosuch command", "files": ["x.csv"]}))
    (d / "link_file").symlink_to(d / "afile")
    (d / "link_dir").symlink_to(d / "adir")
    (d / "loop_a").symlink_to(d / "loop_b")
    (d / "loop_b").symlink_to(d / "loop_a")
    os.mkfifo(d / "fifo_out")


def hostile_cases(inputs: list[tuple[str, list[str]]]) -> list[Case]:
    """The hostile families; ``inputs`` are the sweep's file inputs (``{X}`` standing for
    the file, its extension after it)."""
    d = "{d}"
    c: list[Case] = []
    files = [(cid, argv) for cid, argv in inputs if any(a.startswith("{X}.") for a in argv)]
    for kind in ("fifo", "zero", "sock"):
        for cid, argv in files:
            c.append(("special-file", f"{cid}-{kind}", [a.replace("{X}", f"{d}/{kind}")
                                                         for a in argv]))
    for cid, argv in files:
        c.append(("huge-file", f"{cid}-huge", [a.replace("{X}", f"{d}/huge") for a in argv]))
    for cid, argv in files:
        ext = next(a for a in argv if a.startswith("{X}."))[3:]
        if ext in (".json", ".toml"):
            c.append(("nesting", f"{cid}-deep", [a.replace("{X}", f"{d}/deep") for a in argv]))
    for cid, argv in [
        ("profile-run-deep-tables", BASE["profile run"][:2] + [f"{d}/deep_tables.toml",
                                                               *BASE["profile run"][3:]]),
        ("allocate-cluster-deep-tables", _with("allocate", "--cluster", f"{d}/deep_tables.toml")),
    ]:
        c.append(("nesting", cid, argv))
    for cid, argv in [
        ("train-labels-fifo", _with("train", "--dataset", f"{d}/ds_fifo")),
        ("predict-ck-missing-key", _with("predict", "--model", f"{d}/ck_missing_key.pt")),
        ("predict-ck-wrong-type", _with("predict", "--model", f"{d}/ck_wrong_type.pt")),
        ("predict-ck-wrong-inner", _with("predict", "--model", f"{d}/ck_wrong_inner.pt")),
        ("predict-ck-bomb", _with("predict", "--model", f"{d}/ck_bomb.pt")),
        ("evaluate-ck-missing-key", _with("evaluate", "--model", f"{d}/ck_missing_key.pt")),
        ("mdrl-eval-wrong-shape", _with("mdrl eval", "--model-dir", f"{d}/mdrl_bad")
         + ["--partitions", "A100"]),
        ("train-exec-nan", _with("train", "--dataset", f"{d}/ds_exec_nan")),
        ("train-exec-inf", _with("train", "--dataset", f"{d}/ds_exec_inf")),
        ("train-exec-neg", _with("train", "--dataset", f"{d}/ds_exec_neg")),
        ("train-text-target", _with("train", "--dataset", f"{d}/ds_text_target")),
        ("evaluate-exec-inf", _with("evaluate", "--dataset", f"{d}/ds_exec_inf")),
        ("allocate-truth-exec-neg", _with("allocate", "--truth", f"{d}/ds_exec_neg")),
        ("train-gnn-edges", _with("train", "--dataset", f"{d}/ds_edges") + ["--arch", "gnn"]),
        ("profile-plot-ext-type", ["profile", "plot", f"{d}/trace_ext.parquet", "-o",
                                   f"{d}/out/p.png"]),
        ("profile-plot-meta-type", ["profile", "plot", f"{d}/trace_meta_type.parquet", "-o",
                                    f"{d}/out/p.png"]),
        ("profile-plot-meta-job", ["profile", "plot", f"{d}/trace_meta_job.parquet", "-o",
                                   f"{d}/out/p.png"]),
        ("profile-plot-meta-missing", ["profile", "plot", f"{d}/trace_meta_missing.parquet",
                                       "-o", f"{d}/out/p.png"]),
        ("profile-plot-inf-time", ["profile", "plot", f"{d}/trace_inf.parquet", "-o",
                                   f"{d}/out/p.png"]),
    ]:
        c.append(("tampered", cid, argv))
    for cmd, (opt, kind) in OUTPUTS.items():
        key = cmd.replace(" ", "-")
        if kind == "dir" and cmd not in ("profile run", "emulate", "predictor corpus"):
            c.append(("stale-output", f"{key}-foreign", _with(cmd, opt, f"{d}/mine")))
            c.append(("stale-output", f"{key}-foreign-sub", _with(cmd, opt, f"{d}/mine_sub")))
            c.append(("stale-output", f"{key}-other-cmd", _with(cmd, opt, f"{d}/other_cmd")))
        target = "link_file" if kind == "file" else "link_dir"
        c.append(("linked-output", f"{key}-link", _with(cmd, opt, f"{d}/{target}")))
        c.append(("linked-output", f"{key}-loop", _with(cmd, opt, f"{d}/loop_a")))
        if kind == "file":
            c.append(("linked-output", f"{key}-fifo", _with(cmd, opt, f"{d}/fifo_out")))
            c.append(("linked-output", f"{key}-devnull", _with(cmd, opt, "/dev/null")))
    for fn in ("exits", "aborts", "quits", "raises"):
        argv = ["estimate", "--module", f"{d}/factory.py:{fn}", "--dataset",
                "tabular:features=4", "--batch-size", "2", "--devices", "v100", "--quiet"]
        c.append(("user-code", f"estimate-module-{fn}", argv))
        c.append(("user-code", f"graph-export-module-{fn}",
                  ["graph", "export", "--module", f"{d}/factory.py:{fn}", "--dataset",
                   "tabular:features=4", "--batch-size", "2", "-o", f"{d}/out/g.json"]))
    c.append(("user-code", "estimate-module-exits-on-import",
              ["estimate", "--module", f"{d}/exits_on_import.py:build", "--dataset",
               "tabular:features=4", "--batch-size", "2", "--devices", "v100", "--quiet"]))
    return c


#: What the one line must say, per hostile family.
HOSTILE_WORDS: dict[str, str] = {
    "special-file": r"FIFO|character device|socket|not a regular file",
    "huge-file": r"over the limit",
    "nesting": r"nested deeper|too deep",
    "stale-output": r"did not write|output of `gpuscope",
    "linked-output": r"symbolic link|FIFO|character device|looping",
    "user-code": r"factory|module",
}
