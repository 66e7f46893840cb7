"""The campaign ledger: one SQLite row per finished run (design.md, Runs).

A run is recorded only after its trace has been renamed into place (``write_trace`` is
atomic), in one transaction, so a campaign killed at any moment — even with SIGKILL — loses
at most the run in flight, and re-running it skips every recorded run (``run_id`` is
``JobSpec.key``, deterministic). Non-``ok`` runs (oom, error, timeout) are results, as in
seed 001 Fig. 5–7, and count as done.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from gpuscope.errors import InputError
from gpuscope.jobs import JobSpec
from gpuscope.profiling.trace import TraceMeta

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id      TEXT PRIMARY KEY,
    device      TEXT NOT NULL,
    provenance  TEXT NOT NULL,
    status      TEXT NOT NULL,
    exec_time_s REAL NOT NULL,
    trace_path  TEXT NOT NULL,
    graph_key   TEXT NOT NULL,
    meta_json   TEXT NOT NULL,
    recorded_at TEXT NOT NULL
)
"""
RUN_COLUMNS: tuple[str, ...] = (
    "run_id", "device", "provenance", "status", "exec_time_s", "trace_path", "graph_key",
    "meta_json", "recorded_at",
)


class Ledger:
    """SQLite ledger of a runs folder. ``trace_path`` is stored relative to the ledger's
    folder when it lies inside it, so a runs folder can be moved or committed."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # isolation_level=None: explicit BEGIN/COMMIT, so each record is one transaction.
            self._conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.execute(_SCHEMA)
        except sqlite3.DatabaseError as e:
            raise InputError(f"cannot open ledger {self.path}: {e}") from None

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def is_done(self, run_id: str) -> bool:
        row = self._conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return row is not None

    def done_ids(self) -> set[str]:
        return {r[0] for r in self._conn.execute("SELECT run_id FROM runs")}

    def record(self, meta: TraceMeta, trace_path: str | Path) -> None:
        """Record a finished run (insert or replace) in one transaction."""
        tp = Path(trace_path)
        try:
            tp = tp.resolve().relative_to(self.path.parent.resolve())
        except ValueError:
            pass
        graph_key = job_graph_key(meta.job)
        row = (
            meta.run_id, meta.device, meta.provenance, meta.status, float(meta.exec_time_s),
            str(tp), graph_key, meta.to_json(),
            datetime.now(timezone.utc).isoformat(timespec="seconds"),
        )
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            self._conn.execute(
                f"INSERT OR REPLACE INTO runs ({', '.join(RUN_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(RUN_COLUMNS))})",
                row,
            )
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise

    def runs(self) -> pd.DataFrame:
        """All recorded runs, one row each, ordered by record time; ``trace_path`` absolute."""
        rows = self._conn.execute(
            f"SELECT {', '.join(RUN_COLUMNS)} FROM runs ORDER BY recorded_at, rowid"
        ).fetchall()
        df = pd.DataFrame(rows, columns=list(RUN_COLUMNS))
        base = self.path.parent
        df["trace_path"] = [str(p if Path(p).is_absolute() else base / p) for p in df["trace_path"]]
        return df

    def meta(self, run_id: str) -> TraceMeta | None:
        row = self._conn.execute("SELECT meta_json FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return None if row is None else TraceMeta.from_json(row[0])

    def __len__(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])


def job_graph_key(job: dict) -> str:
    """``JobSpec.graph_key`` of a job dict, without re-validating it (the graph of a
    user-supplied job may live anywhere)."""
    try:  # the one definition of the key (precision, accumulation, module digest, slugs)
        return JobSpec.from_dict(job).graph_key
    except (InputError, TypeError, ValueError):
        pass
    graph = job.get("graph")
    base = Path(graph).stem if graph else str(job.get("model", ""))
    key = f"{base}-{job.get('dataset')}-{job.get('optimizer')}-b{job.get('batch_size')}"
    if job.get("precision", "fp32") != "fp32":
        key += f"-{job['precision']}"
    if int(job.get("grad_accum", 1) or 1) != 1:
        key += f"-ga{job['grad_accum']}"
    return key


def trace_paths(runs_dir: str | Path) -> list[Path]:
    """Traces of a runs folder: those its ledger records, in record order; a folder with only
    ``traces/*.parquet`` (e.g. a dataset's committed raw traces) gives them sorted by name."""
    d = Path(runs_dir)
    ledger_path = d / "ledger.sqlite"
    if ledger_path.is_file():
        with Ledger(ledger_path) as ledger:
            paths = [Path(p) for p in ledger.runs()["trace_path"]]
        for p in paths:
            if not p.is_file():
                raise InputError(f"trace {p} recorded in {ledger_path} is missing")
        return paths
    paths = sorted((d / "traces").glob("[!.]*.parquet"))
    if not paths:
        raise InputError(f"{d} is not a runs folder (no ledger.sqlite, no traces/*.parquet)")
    return paths


def summary_json(ledger: Ledger) -> str:
    """Counts by status as one JSON line (for the CLI)."""
    df = ledger.runs()
    return json.dumps({s: int(n) for s, n in df["status"].value_counts().sort_index().items()})
