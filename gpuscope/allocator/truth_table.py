"""Measured truth from a table the user already has: CSV/parquet, or Gavel's throughputs.

``--truth`` takes, besides a gpuscope datasets folder (:mod:`gpuscope.allocator.truth`):

* a ``.csv`` or ``.parquet`` table, one row per (job or job type, GPU type):

  ============== ==========================================================================
  column         meaning
  ============== ==========================================================================
  ``job_id``     the queue's job id, **or** ``job_type``: a trace's job type (Gavel's
                 ``"ResNet-18 (batch size 32)"``) or a queue job's model name
  ``device``     GPU type, as the cluster names it
  ``exec_time_s``  seconds the whole job runs alone on one GPU of that type, **or**
  ``steps_per_s``  its throughput (time = the job's total steps / steps per second)
  ``status``     optional: ``ok`` (default) or anything else (did not fit: OOM)
  ``provenance`` optional: ``measured`` (default), ``emulated``, or a source named by the user
  ============== ==========================================================================

* Gavel's ``simulation_throughputs.json`` as published (GPU type -> ``"('job type', GPUs)"``
  -> ``{"null": steps/s alone, ...}``): the single-GPU, running-alone rows, as measured.

Every (job, GPU type) pair of the queue and cluster must be covered, else one line names the
first missing ones.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from gpuscope.core.errors import InputError
from gpuscope.core.limits import MAX_SECONDS, parse_number

#: Files :func:`read_truth_table` reads.
TABLE_SUFFIXES: tuple[str, ...] = (".csv", ".parquet", ".json")


def is_truth_table(path: str | Path) -> bool:
    return Path(path).suffix.lower() in TABLE_SUFFIXES


def gavel_throughputs(path: str | Path) -> pd.DataFrame:
    """``job_type, device, steps_per_s, status, provenance`` of Gavel's single-GPU, unshared runs."""
    import ast

    from gpuscope.core.io import read_json

    data = read_json(path, "--truth")
    rows = []
    if not isinstance(data, dict):
        raise InputError(f"--truth {path}: not Gavel's throughputs (GPU type -> job type -> "
                         "steps/s)")
    for dev, entries in data.items():
        if not isinstance(entries, dict) or dev.endswith("_unconsolidated"):
            continue
        for key, val in entries.items():
            try:
                job_type, gpus = ast.literal_eval(key[:256])
                steps = parse_number(val["null"], low=0, high=1e12)
            except (ValueError, SyntaxError, TypeError, KeyError, MemoryError, RecursionError):
                raise InputError(f"--truth {path}: entry {key!r} of {dev} is not Gavel's "
                                 "('job type', GPUs) -> {\"null\": steps/s}") from None
            if int(gpus) == 1 and steps > 0:
                rows.append((str(job_type), str(dev).lower(), steps, "ok", "measured"))
    if not rows:
        raise InputError(f"--truth {path}: no single-GPU throughput in it")
    return pd.DataFrame(rows, columns=["job_type", "device", "steps_per_s", "status",
                                       "provenance"])


def read_truth_table(path: str | Path) -> pd.DataFrame:
    """A truth table (module docstring), checked, with ``status`` and ``provenance`` filled."""
    from gpuscope.core.io import read_table

    p = Path(path)
    if not p.exists():
        raise InputError(f"--truth {path}: no such file")
    suffix = p.suffix.lower()
    if suffix == ".json":
        return gavel_throughputs(p)
    df = read_table(p, "--truth table")
    keys = [c for c in ("job_id", "job_type") if c in df.columns]
    vals = [c for c in ("exec_time_s", "steps_per_s") if c in df.columns]
    if len(keys) != 1 or len(vals) != 1 or "device" not in df.columns:
        raise InputError(f"--truth {path}: needs columns device, one of job_id/job_type and "
                         f"one of exec_time_s/steps_per_s (has {', '.join(map(str, df.columns))})")
    v = pd.to_numeric(df[vals[0]], errors="coerce")
    df = df.assign(**{vals[0]: v, "device": df["device"].astype(str).str.lower(),
                      keys[0]: df[keys[0]].astype(str)})
    if "status" not in df.columns:
        df["status"] = "ok"
    df["status"] = df["status"].fillna("ok").astype(str)
    bad = df["status"].eq("ok") & ~((v > 0) & (v <= MAX_SECONDS))  # NaN, inf refused too
    if bad.any():
        r = df[bad].iloc[0]
        raise InputError(f"--truth {path}: {vals[0]} of {r[keys[0]]} on {r['device']} must be a "
                         f"number in (0, {MAX_SECONDS:g}]")
    if df.duplicated([keys[0], "device"]).any():
        r = df[df.duplicated([keys[0], "device"])].iloc[0]
        raise InputError(f"--truth {path}: two rows for {r[keys[0]]} on {r['device']}")
    if "provenance" not in df.columns:
        df["provenance"] = "measured"
    return df


def truth_rows(table: pd.DataFrame, job_ids: list[str], job_types: list[str],
               total_steps: np.ndarray, devices: tuple[str, ...], path: str | Path
               ) -> pd.DataFrame:
    """Long ``job_id, device, exec_time_s, status, provenance`` rows of a queue (ids, types
    and total steps per job) from a truth table; every pair must be covered."""
    key = "job_id" if "job_id" in table.columns else "job_type"
    names = job_ids if key == "job_id" else job_types
    idx = table.set_index([key, "device"])
    n, m = len(names), len(devices)
    pairs = pd.MultiIndex.from_arrays([np.repeat(names, m), np.tile(devices, n)])
    have = pairs.isin(idx.index)
    if not have.all():
        miss = [f"{a}@{b}" for (a, b), h in zip(pairs, have) if not h][:3]
        raise InputError(f"--truth {path} lacks {int((~have).sum())} (job, GPU type) pair(s) "
                         f"of this queue and cluster, e.g. {', '.join(miss)}")
    rows = idx.loc[pairs]
    if "exec_time_s" in rows.columns:
        t = rows["exec_time_s"].to_numpy(dtype=float)
    else:
        t = np.repeat(np.asarray(total_steps, dtype=float), m) / rows["steps_per_s"].to_numpy(
            dtype=float)
    return pd.DataFrame({"job_id": np.repeat(job_ids, m), "device": np.tile(devices, n),
                         "exec_time_s": t, "status": rows["status"].to_numpy(),
                         "provenance": rows["provenance"].astype(str).to_numpy()})
