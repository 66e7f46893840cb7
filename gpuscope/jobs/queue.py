"""Job-queue I/O: ``read_queue`` and ``write_queue`` (``.csv`` or ``.json``; the format is
documented field by field in ``gpuscope.jobs.schema``), and job-id assignment.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from gpuscope.core.errors import InputError
from gpuscope.jobs.spec import FieldError, JobSpec, module_file, module_problem

QUEUE_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(JobSpec))


def assign_ids(jobs: Sequence[JobSpec]) -> list[JobSpec]:
    """The jobs, those without ``job_id`` numbered ``j000``...; duplicate ids raise ``InputError``."""
    width = max(3, len(str(len(jobs))))
    out = [j if j.job_id else j.with_(job_id=f"j{i:0{width}d}") for i, j in enumerate(jobs)]
    counts = Counter(str(j.job_id) for j in out)  # O(n): a 100k-job queue in ms
    dup = sorted(i for i, c in counts.items() if c > 1)
    if dup:
        raise InputError(f"duplicate job_id(s) in queue: {', '.join(map(str, dup[:5]))}")
    return out


def read_queue(path: str | Path) -> list[JobSpec]:
    """Read a job queue from ``.csv`` (one job a row, header = JobSpec fields) or ``.json``
    (a list of job objects, or ``{"jobs": [...]}``). Jobs without ``job_id`` get ``j000``…"""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".json"):
        raise InputError(f"job queue {path}: unsupported extension {suffix!r} (use .csv or .json)")
    from gpuscope.core.io import read_text
    from gpuscope.core.limits import check_memory

    text = read_text(path, "job queue")
    # memory budget: parsed rows and JobSpecs take ~10x the file's bytes (a 100k-job CSV: ~100 MB)
    check_memory(f"job queue {path} ({len(text) // 2**20} MB)", 10 * len(text))
    rows: list[dict[str, Any]]
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"job queue {path} is not valid JSON: {e.msg} (line {e.lineno})") from None
        if isinstance(data, dict) and "jobs" in data:
            data = data["jobs"]
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise InputError(f"job queue {path} must be a JSON list of job objects")
        rows = data
    else:
        reader = csv.DictReader(text.splitlines())
        if not reader.fieldnames:
            raise InputError(f"job queue {path} is empty")
        rows = [dict(r) for r in reader]
    jobs = []
    for i, r in enumerate(rows):
        try:
            jobs.append(JobSpec.from_dict(_relative_to(r, path.parent)))
        except InputError as e:
            # name the row (1-based; for CSV also the line), its job_id and the field
            where = f"row {i + 1}" + (f" (line {i + 2})" if suffix == ".csv" else "")
            jid = str(r.get("job_id") or "").strip()
            field = f", field {e.field!r}" if isinstance(e, FieldError) else ""
            raise InputError(f"job queue {path}, {where}{f' job_id {jid}' if jid else ''}"
                             f"{field}: {e}") from None
    if not jobs:
        raise InputError(f"job queue {path} holds no jobs")
    return assign_ids(jobs)


def _relative_to(row: dict[str, Any], base: Path) -> dict[str, Any]:
    """A row whose relative ``module``/``graph``/``hf`` (config.json) paths that exist next to
    the queue file point there; other spellings (relative to the working directory, package
    modules, architectures) are kept."""
    out = dict(row)
    for key in ("module", "graph", "hf"):
        v = out.get(key)
        if not isinstance(v, str) or not v.strip():
            continue
        v = v.strip()
        path, sep, rest = (v.rpartition(":") if key == "module" else (v, "", ""))
        if key == "hf" and not path.endswith(".json"):
            continue
        if key == "module" and module_file(v) is None:
            continue
        if not Path(path).is_absolute() and (base / path).is_file() and not Path(path).is_file():
            out[key] = str(base / path) + sep + rest
    return out


def missing_files(jobs: Iterable[JobSpec]) -> list[str]:
    """One line per job whose ``module`` file (or its factory: :func:`module_problem`),
    ``graph`` file or ``hf`` config.json does not exist (as read: relative paths from the
    working directory, after ``read_queue`` pointed those found next to the queue file there);
    package modules and architecture names are not checked here (importing them runs user
    code)."""
    out: list[str] = []
    for j in jobs:
        problem = module_problem(j.module) if j.module else None
        if problem is not None:
            out.append(f"job {j.job_id}: {problem}")
        if j.graph and not Path(j.graph).is_file():
            out.append(f"job {j.job_id}: graph file {j.graph} does not exist")
        if j.hf and j.hf.endswith(".json") and not Path(j.hf).is_file():
            out.append(f"job {j.job_id}: hf config {j.hf} does not exist")
    return out


def check_sources(jobs: Iterable[JobSpec], where: str | Path) -> None:
    """Refuse (one ``InputError`` line: the first problem and how many more) jobs whose model
    files :func:`missing_files` finds missing; commands call it before they import torch."""
    missing = missing_files(jobs)
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise InputError(f"{where}: {missing[0]}{more}")


def write_queue(jobs: Iterable[JobSpec], path: str | Path) -> Path:
    """Write a queue as ``.csv`` or ``.json`` (chosen by the extension)."""
    from gpuscope.core.io import atomic_write

    path = Path(path)
    jobs = assign_ids(list(jobs))
    if path.suffix.lower() not in (".csv", ".json"):
        raise InputError(f"{path}: unsupported extension {path.suffix!r} (use .csv or .json)")
    with atomic_write(path, what="job queue") as tmp:
        if path.suffix.lower() == ".json":
            tmp.write_text(json.dumps([j.to_dict() for j in jobs], indent=1) + "\n")
        else:
            with tmp.open("w", newline="") as fh:
                w = csv.DictWriter(fh, fieldnames=list(QUEUE_COLUMNS))
                w.writeheader()
                for j in jobs:
                    w.writerow({k: ("" if v is None else v) for k, v in j.to_dict().items()})
    return path
