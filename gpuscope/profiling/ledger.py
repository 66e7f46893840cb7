"""The campaign ledger: one SQLite row per finished run (design.md, Runs).

A run is recorded only after its trace has been renamed into place (``write_trace`` is
atomic), in one transaction, so a campaign killed at any moment — even with SIGKILL — loses
at most the run in flight, and re-running it skips every recorded run (``run_id`` is
``JobSpec.key``, deterministic). Non-``ok`` runs (oom, error, timeout) are results, as in
seed 001 Fig. 5–7, and count as done (``error`` runs are re-run on request:
``done_ids(retry_errors=True)``, ``profile run --retry-errors``).

A run's key is ``(device, provenance, run_id)``. A runs folder is bound to the
device and provenance of the runs it holds (its traces are named ``<run_id>.parquet``), so
opening it for another device or provenance (``Ledger(path, device=, provenance=)``)
refuses with one line instead of treating the other device's runs as done. A campaign holds
:func:`campaign_lock` (``fcntl.flock`` on ``<runs>/.campaign.lock``) for its whole length:
a second campaign in the same folder refuses with one line.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sqlite3
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from gpuscope.core.errors import InputError
from gpuscope.jobs.spec import JobSpec
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


LOCK_NAME = ".campaign.lock"


@contextlib.contextmanager
def campaign_lock(runs_dir: str | Path) -> Iterator[Path]:
    """Hold an exclusive ``flock`` on ``<runs_dir>/.campaign.lock``: a second campaign in the
    same folder gets one :class:`InputError` line naming the holder. The kernel drops the
    lock when its holder dies, even by SIGKILL: no stale lock to clean. A runs folder this
    call created is removed again when the campaign fails before recording a run (a full
    disk, Ctrl-C at the start): no empty partial output is left."""
    d = Path(runs_dir)
    top = d
    while not top.parent.exists() and top.parent != top:
        top = top.parent
    created: Path | None = None if top.exists() else top
    try:
        try:
            d.mkdir(parents=True, exist_ok=True)
            fd = os.open(d / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            from gpuscope.core.io import write_error

            raise write_error(e, "runs folder", d, d if d.exists() else None) from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
                raise InputError(f"runs folder {d} is in use by another campaign (pid "
                                 f"{holder}); wait for it or use another --out") from None
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            except OSError as e:
                from gpuscope.core.io import write_error

                raise write_error(e, "runs folder lock", d / LOCK_NAME, d) from None
            yield d / LOCK_NAME
        finally:
            os.close(fd)  # closing the descriptor releases the lock
    except BaseException:
        if created is not None and not any((d / "traces").glob("*.parquet")):
            import shutil

            shutil.rmtree(created, ignore_errors=True)
        raise


class Ledger:
    """SQLite ledger of a runs folder. ``trace_path`` is stored relative to the ledger's
    folder when it lies inside it, so a runs folder can be moved or committed.

    ``device`` / ``provenance``: the campaign about to write here. The folder's
    recorded runs must be of that device and provenance, else :class:`InputError`;
    ``done_ids`` and ``record`` then work on that key only.

    ``readonly``: the ledger of an input (``build-dataset``, ``profile label``): opened with
    SQLite's ``mode=ro`` when a write-ahead log holds runs not yet merged (a killed
    campaign), else ``immutable=1``, so reading it never writes into the folder (works on a
    read-only mount), and a database without gpuscope's ``runs`` table is refused."""

    def __init__(self, path: str | Path, device: str | None = None,
                 provenance: str | None = None, readonly: bool = False) -> None:
        self.path = Path(path)
        self.device, self.provenance = device, provenance
        try:
            if readonly:
                self._conn = _open_readonly(self.path)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                # isolation_level=None: explicit BEGIN/COMMIT, so each record is one transaction.
                self._conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=FULL")
                self._conn.execute(_SCHEMA)
            cols = [r[1] for r in self._conn.execute("PRAGMA table_info(runs)")]
        except sqlite3.DatabaseError as e:
            raise InputError(f"cannot open ledger {self.path}: {e}") from None
        except OSError as e:
            raise InputError(f"cannot open ledger {self.path}: {e.strerror or e}") from None
        if not set(RUN_COLUMNS) <= set(cols):
            self._conn.close()
            raise InputError(f"{self.path} is not a gpuscope ledger (no runs table with "
                             f"{', '.join(RUN_COLUMNS[:3])}, ...)")
        if device is not None or provenance is not None:
            self._check_binding()

    def _check_binding(self) -> None:
        held = self._conn.execute(
            "SELECT device, provenance, COUNT(*) FROM runs GROUP BY device, provenance").fetchall()
        other = [(d, p, n) for d, p, n in held
                 if (self.device is not None and d != self.device)
                 or (self.provenance is not None and p != self.provenance)]
        if other:
            d, p, n = other[0]
            raise InputError(
                f"runs folder {self.path.parent} holds {n} {p} run(s) of device {d!r}, not "
                f"{self.provenance or p} runs of {self.device or d!r}; a runs folder holds one "
                "device and provenance: use another --out")

    def _where(self) -> tuple[str, tuple[str, ...]]:
        conds, args = [], []
        for col, v in (("device", self.device), ("provenance", self.provenance)):
            if v is not None:
                conds.append(f"{col} = ?")
                args.append(v)
        return (" AND " + " AND ".join(conds) if conds else ""), tuple(args)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _done_where(self, retry_errors: bool) -> tuple[str, tuple[str, ...]]:
        where, args = self._where()
        return where + (" AND status != 'error'" if retry_errors else ""), args

    def is_done(self, run_id: str, retry_errors: bool = False) -> bool:
        where, args = self._done_where(retry_errors)
        return self._conn.execute(f"SELECT 1 FROM runs WHERE run_id = ?{where}",
                                  (run_id, *args)).fetchone() is not None

    def done_ids(self, retry_errors: bool = False) -> set[str]:
        """Run ids recorded for this ledger's device and provenance; ``retry_errors``: not
        those whose status is ``error`` (they are run again and replaced)."""
        where, args = self._done_where(retry_errors)
        return {r[0] for r in self._conn.execute(f"SELECT run_id FROM runs WHERE 1=1{where}",
                                                 args)}

    def record(self, meta: TraceMeta, trace_path: str | Path) -> None:
        """Record a finished run (insert or replace) in one transaction."""
        if (self.device is not None and meta.device != self.device) or \
                (self.provenance is not None and meta.provenance != self.provenance):
            raise InputError(f"run {meta.run_id} is a {meta.provenance} run of {meta.device!r}; "
                             f"ledger {self.path} holds {self.provenance} runs of "
                             f"{self.device!r}")
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
        try:
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
        except sqlite3.DatabaseError as e:  # "database or disk is full", a read-only folder
            full = "full" in str(e)
            raise InputError(f"cannot record run {meta.run_id} in {self.path}: "
                             + ("the disk is full (No space left on device)" if full
                                else str(e))) from None

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


def _open_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection to an input ledger that writes nothing beside it (see
    :class:`Ledger`)."""
    from urllib.parse import quote

    from gpuscope.core.io import check_input_file

    check_input_file(path, "ledger")
    uri = f"file:{quote(str(path.resolve()))}"
    wal = path.with_name(path.name + "-wal")
    if wal.is_file() and wal.stat().st_size > 0:
        try:
            conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=30.0)
            conn.execute("SELECT 1 FROM sqlite_master").fetchall()
            return conn
        except sqlite3.OperationalError:  # a read-only mount: read what was merged
            pass
    return sqlite3.connect(f"{uri}?immutable=1", uri=True)


def job_graph_key(job: dict) -> str:
    """``JobSpec.graph_key`` of a job dict (a trace's metadata); a dict that ``JobSpec``
    refuses gets the historic ``model-dataset-optimizer-bN`` form."""
    try:  # the one definition of the key (precision, accumulation, module digest, slugs)
        return JobSpec.from_dict(job).graph_key
    except (InputError, TypeError, ValueError):
        pass
    # a job dict JobSpec refuses (hand-written or foreign metadata): the historic fp32 form
    graph = job.get("graph")
    base = Path(graph).stem if graph else str(job.get("model", ""))
    return f"{base}-{job.get('dataset')}-{job.get('optimizer')}-b{job.get('batch_size')}"


def trace_paths(runs_dir: str | Path) -> list[Path]:
    """Traces of a runs folder: those its ledger records, in record order; a folder with only
    ``traces/*.parquet`` (e.g. a dataset's committed raw traces) gives them sorted by name."""
    d = Path(runs_dir)
    ledger_path = d / "ledger.sqlite"
    if ledger_path.is_file():
        with Ledger(ledger_path, readonly=True) as ledger:
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
