"""Job-queue I/O: ``read_queue`` and ``write_queue`` (``.csv`` or ``.json``; the format is
documented field by field in ``gpuscope.jobs.schema``), and job-id assignment.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from gpuscope.core.errors import InputError
from gpuscope.jobs.columns import (
    FIELD_DEFAULTS,
    JOB_FIELDS,
    ROW_FIELDS,
    JobColumns,
    combine_codes,
    first_rows,
)
from gpuscope.jobs.fields import LOWER_FIELDS, REQUIRED_TEXT, TEXT_FIELDS
from gpuscope.jobs.spec import (
    NUMBER_FIELDS,
    REQUIRED,
    SKIP,
    FieldError,
    JobSpec,
    canonical_names,
    check_field,
    convert_field,
    module_file,
    module_problem,
    source_model_name,
)

QUEUE_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(JobSpec))


def _id_width(n: int) -> int:
    return max(3, len(str(n)))


def assign_ids(jobs: Sequence[JobSpec]) -> list[JobSpec]:
    """The jobs, those without ``job_id`` numbered ``j000``...; duplicate ids raise ``InputError``."""
    width = _id_width(len(jobs))
    out = [j if j.job_id else j.with_(job_id=f"j{i:0{width}d}") for i, j in enumerate(jobs)]
    _check_unique(str(j.job_id) for j in out)
    return out


def _check_unique(ids: Iterable[str]) -> None:
    import pandas as pd

    index = pd.Index(list(ids), dtype=object)  # hashed in C: 10**6 ids in a tenth of a second
    if index.is_unique:
        return
    dup = sorted(i for i, c in Counter(index[index.duplicated()]).items())
    raise InputError(f"duplicate job_id(s) in queue: {', '.join(map(str, dup[:5]))}")


def _row_error(path: Path, i: int, e: InputError, job_id: Any = None, csv: bool = True
               ) -> InputError:
    """The error of row ``i`` (0-based), naming the row (for CSV also its line), its job id
    and the field."""
    where = f"row {i + 1}" + (f" (line {i + 2})" if csv else "")
    jid = str(job_id or "")[:40].strip()
    field = f", field {e.field!r}" if isinstance(e, FieldError) else ""
    return InputError(f"job queue {path}, {where}{f' job_id {jid}' if jid else ''}{field}: {e}")


def _column_values(c: str, uniques: Sequence[str], base: Path) -> list[Any]:
    """The converted and checked value of each distinct cell of column ``c`` (SKIP for an
    empty one); numbers and plain text (ids, names) are screened in one vectorised pass and
    only the few cells it flags go through :func:`convert_field`/:func:`check_field` one by
    one (to convert what the fast pass cannot, or to raise the field's error)."""
    import numpy as np
    import pandas as pd

    def one(u: str) -> Any:
        if c in ("module", "graph", "hf"):
            u = _relative_value(c, u.strip(), base)
        v = convert_field(c, u)
        return v if v is SKIP else check_field(c, v)

    if c in ("module", "graph", "hf") or (c not in NUMBER_FIELDS and len(uniques) < 64):
        return [one(u) for u in uniques]
    text = _stripped(uniques)
    if c not in NUMBER_FIELDS:  # convert_field: stripped, lower-cased names; check_text: length
        if c in LOWER_FIELDS:
            text = [t.lower() for t in text]
        most, keep = TEXT_FIELDS[c], c in REQUIRED_TEXT
        return [t if len(t) <= most and (t or keep) else (SKIP if len(t) <= most else one(u))
                for u, t in zip(uniques, text)]
    integer, low, high = NUMBER_FIELDS[c]
    num = pd.to_numeric(pd.Series(text, dtype=object), errors="coerce").to_numpy("float64")
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(num) & (num >= low) & (num <= high)
        if integer:
            ok &= num == np.round(num)
    fine = np.flatnonzero(ok)
    got = np.full(len(text), np.nan)
    if integer:
        parsed: list[Any] = np.where(ok, num, 0).astype(np.int64).tolist()
    else:  # Python's float() of each cell (what convert_field takes), at C speed
        try:
            got[fine] = np.asarray(text, dtype=object)[fine].astype(np.float64)
        except ValueError:  # a spelling pandas reads and float() does not: one by one
            got[fine] = [float(text[i]) for i in fine.tolist()]
        parsed = got.tolist()
    return [SKIP if not t else (x if f else one(u))
            for u, t, f, x in zip(uniques, text, ok.tolist(), parsed)]


#: The characters ``str.strip()`` removes from an ASCII string.
_ASCII_SPACE = "".join(ch for ch in map(chr, range(128)) if ch.isspace())


def _stripped(cells: Sequence[str]) -> list[str]:
    """``[c.strip() for c in cells]``, in pyarrow when every cell is ASCII (10**6 ids in
    milliseconds; the same characters removed)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        arr = pa.array(cells, type=pa.large_string()) if len(cells) >= 64 else None
    except (pa.ArrowException, UnicodeError):  # a lone surrogate is no UTF-8
        arr = None
    if arr is None or not pc.all(pc.string_is_ascii(arr)).as_py():
        return [u.strip() for u in cells]
    trimmed = pc.utf8_trim(arr, characters=_ASCII_SPACE)
    if pc.all(pc.equal(trimmed, arr)).as_py():  # nothing to strip: keep the cells' strings
        return list(cells)
    return list(trimmed.to_pylist())


def _csv_columns(path: Path) -> JobColumns:
    """The jobs of a CSV queue as columns, checked column by column: every distinct value of
    a column once (:func:`_column_values`), every distinct combination of names once
    (:func:`~gpuscope.jobs.fields.canonical_names`), one trusted :class:`JobSpec` per
    distinct job and arrays for the rows; 10**6 rows of a few hundred jobs take seconds."""
    import numpy as np
    import pandas as pd

    from gpuscope.core.io import read_csv

    df = read_csv(path, "job queue", dtype=object, keep_default_na=False)
    n = len(df)
    names = [str(c) for c in df.columns]
    if not names or all(c.startswith("Unnamed:") or not c.strip() for c in names):
        raise InputError(f"job queue {path} has no header row")
    unknown = sorted(c for c in names if c not in QUEUE_COLUMNS)
    if unknown:
        raise _row_error(path, 0, FieldError(unknown[0], "unknown job field(s): "
                                             + ", ".join(unknown)))
    codes: dict[str, np.ndarray] = {}
    values: dict[str, list[Any]] = {}
    ids = df["job_id"].tolist() if "job_id" in df.columns else [None] * n
    for c in names:
        k, uniques = pd.factorize(df[c].fillna(""))
        try:
            values[c] = _column_values(c, list(map(str, uniques)), path.parent)
        except InputError as e:  # name the first row holding the bad value
            bad = next(j for j, u in enumerate(map(str, uniques)) if _fails(c, u, path.parent))
            i = int(np.argmax(k == bad))
            raise _row_error(path, i, e, ids[i]) from None
        codes[c] = k
    del df
    for c in ("model", *REQUIRED[1:]):
        if c not in codes and not (c == "model" and ("module" in codes or "hf" in codes)):
            raise _row_error(path, 0, FieldError(c, f"job is missing field(s): {c}"), ids[0])
    for c in REQUIRED[3:]:  # an empty batch size or epochs
        if SKIP in values[c]:
            i = int(np.argmax(codes[c] == values[c].index(SKIP)))
            raise _row_error(path, i, FieldError(c, f"job is missing field(s): {c}"), ids[i])
    if n == 0:
        return JobColumns.from_jobs([])
    # the names of each distinct combination, checked once
    present = [c for c in ("model", "dataset", "optimizer", "precision", "framework", "graph",
                           "module", "hf") if c in codes]
    key = combine_codes([codes[c] for c in present])
    combos = first_rows(key)
    names_of: list[tuple[str, str]] = []
    for j, r in enumerate(combos.tolist()):
        try:
            names_of.append(_combo_names({c: values[c][int(codes[c][r])] for c in present}))
        except InputError as e:
            i = int(np.argmax(key == j))
            raise _row_error(path, i, e, ids[i]) from None
    # the distinct jobs (canonical names x the other job fields' values: ``ADAM`` and
    # ``adam``, ``8`` and ``8.0`` are one job), each built from its first row
    canon: dict[tuple[Any, ...], int] = {}
    same = [canon.setdefault((names_of[j], *(values[c][int(codes[c][r])] for c in present
                                             if c not in ("model", "dataset"))), len(canon))
            for j, r in enumerate(combos.tolist())]
    parts = [np.asarray(same, dtype=np.int64)[key]]
    for c in JOB_FIELDS:
        if c in codes and c not in present:
            parts.append(pd.factorize(pd.Series(values[c], dtype=object))[0][codes[c]])
    code = combine_codes(parts)
    first = first_rows(code)
    width = _id_width(n)  # numbered here, so that assign_ids need not copy the job
    id_vals = values.get("job_id", [SKIP])
    id_codes = codes["job_id"].tolist() if "job_id" in codes else [0] * n
    row_ids = [f"j{i:0{width}d}" if v is SKIP else v
               for i, v in enumerate(id_vals[x] for x in id_codes)]

    def per_row(c: str) -> np.ndarray:
        default = FIELD_DEFAULTS[c]
        v = [np.nan if x is None else x for x in
             (default if x is SKIP else x for x in values.get(c, [SKIP]))]
        return np.asarray(v, dtype=np.float64)[codes[c] if c in codes else np.zeros(n, int)]

    rows = {"arrival_s": per_row("arrival_s"), "due_s": per_row("due_s"),
            "weight": per_row("weight")}
    fl = first.tolist()
    columns: dict[str, list[Any]] = {
        c: [values[c][x] for x in codes[c][first].tolist()] for c in names
        if c not in ("model", "dataset", *ROW_FIELDS)}
    fk = key[first].tolist()
    columns["model"] = [names_of[j][0] for j in fk]
    columns["dataset"] = [names_of[j][1] for j in fk]
    columns["job_id"] = [row_ids[i] for i in fl]
    columns["arrival_s"] = rows["arrival_s"][first].tolist()
    columns["due_s"] = [None if v != v else v for v in rows["due_s"][first].tolist()]
    columns["weight"] = rows["weight"][first].tolist()
    return JobColumns(JobSpec.trusted_rows(columns, len(fl)), code, row_ids, **rows)


def _fails(c: str, u: str, base: Path) -> bool:
    try:
        _column_values(c, [u], base)
    except InputError:
        return True
    return False


def _combo_names(row: dict[str, Any]) -> tuple[str, str]:
    """Canonical (model, dataset) of one combination of name fields (the model derived from
    a module or hf source when empty), as ``JobSpec`` makes them."""
    v = {c: (None if x is SKIP else x) for c, x in row.items()}
    model = v.get("model") or ""
    if not model and (v.get("module") or v.get("hf")):
        model = source_model_name(v.get("module"), v.get("hf")).lower()
    return canonical_names(model, v["dataset"], v["optimizer"], v.get("precision") or "fp32",
                           v.get("framework") or "pytorch", v.get("graph") is not None,
                           v.get("module"), v.get("hf") is not None)


def read_queue(path: str | Path) -> list[JobSpec]:
    """Read a job queue from ``.csv`` (one job a row, header = JobSpec fields; a leading
    byte-order mark is ignored) or ``.json`` (a list of job objects, or ``{"jobs": [...]}``).
    Jobs without ``job_id`` get ``j000``…"""
    path = _queue_file(path)
    if path.suffix.lower() == ".json":
        return _json_jobs(path)
    return read_queue_columns(path).rows()


def read_queue_columns(path: str | Path) -> JobColumns:
    """:func:`read_queue` as :class:`~gpuscope.jobs.columns.JobColumns` (distinct jobs and
    per-row arrays): a CSV queue is never expanded to one object per row."""
    path = _queue_file(path)
    if path.suffix.lower() == ".json":
        return JobColumns.from_jobs(_json_jobs(path))
    cols = _csv_columns(path)
    if not len(cols):
        raise InputError(f"job queue {path} holds no jobs")
    _check_unique(cols.job_id)
    return cols


def _queue_file(path: str | Path) -> Path:
    """The queue's path, its extension known, its file regular and small enough to parse."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".json"):
        raise InputError(f"job queue {path}: unsupported extension {suffix!r} (use .csv or .json)")
    from gpuscope.core.io import check_input_file
    from gpuscope.core.limits import check_memory

    size = check_input_file(path, "job queue").stat().st_size
    # parsed rows and JobSpecs take ~6x the file's bytes (a 10**6-job CSV: ~80 MB -> ~500 MB)
    check_memory(f"job queue {path} ({size // 2**20} MB)", 6 * size)
    return path


def _json_jobs(path: Path) -> list[JobSpec]:
    from gpuscope.core.io import read_json

    data = read_json(path, "job queue")
    if isinstance(data, dict) and "jobs" in data:
        data = data["jobs"]
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise InputError(f"job queue {path} must be a JSON list of job objects")
    width = _id_width(len(data))
    jobs = []
    for i, r in enumerate(data):
        data[i] = None  # each parsed row freed once its job is built: one of the two held
        try:  # numbered here, so that assign_ids need not copy the job
            row = r if r.get("job_id") else {**r, "job_id": f"j{i:0{width}d}"}
            jobs.append(JobSpec.from_dict(_relative_to(row, path.parent)))
        except InputError as e:
            raise _row_error(path, i, e, r.get("job_id"), csv=False) from None
    if not jobs:
        raise InputError(f"job queue {path} holds no jobs")
    return assign_ids(jobs)


def _relative_to(row: dict[str, Any], base: Path) -> dict[str, Any]:
    """A row whose relative ``module``/``graph``/``hf`` (config.json) paths that exist next to
    the queue file point there (:func:`_relative_value`)."""
    if not (row.get("module") or row.get("graph") or row.get("hf")):
        return row
    out = dict(row)
    for key in ("module", "graph", "hf"):
        v = out.get(key)
        if isinstance(v, str) and v.strip():
            out[key] = _relative_value(key, v.strip(), base)
    return out


def _relative_value(key: str, v: str, base: Path) -> str:
    """A relative ``module``/``graph``/``hf`` (config.json) path that exists next to the
    queue file, pointed there; other spellings (relative to the working directory, package
    modules, architectures) are kept."""
    if not v:
        return v
    path, sep, rest = (v.rpartition(":") if key == "module" else (v, "", ""))
    if key == "hf" and not path.endswith(".json"):
        return v
    if key == "module" and module_file(v) is None:
        return v
    if not Path(path).is_absolute() and (base / path).is_file() and not Path(path).is_file():
        return str(base / path) + sep + rest
    return v


def source_problems(job: JobSpec) -> list[str]:
    """What is wrong with the job's ``module`` file (or its factory: :func:`module_problem`),
    ``graph`` file or ``hf`` config.json: each one missing (as read: relative paths from the
    working directory, after ``read_queue`` pointed those found next to the queue file
    there); package modules and architecture names are not checked here (importing them
    runs user code)."""
    out: list[str] = []
    problem = module_problem(job.module) if job.module else None
    if problem is not None:
        out.append(problem)
    if job.graph and not Path(job.graph).is_file():
        out.append(f"graph file {job.graph} does not exist")
    if job.hf and job.hf.endswith(".json") and not Path(job.hf).is_file():
        out.append(f"hf config {job.hf} does not exist")
    return out


def missing_files(jobs: Iterable[JobSpec]) -> list[str]:
    """One line per problem :func:`source_problems` finds, naming its job."""
    return [f"job {j.job_id}: {p}" for j in jobs for p in source_problems(j)]


def check_sources(jobs: Iterable[JobSpec] | JobColumns, where: str | Path) -> None:
    """Refuse (one ``InputError`` line: the first problem and how many more) jobs whose model
    files :func:`missing_files` finds missing; commands call it before they import torch.
    Columns are checked per distinct job and counted per row (the same line)."""
    if isinstance(jobs, JobColumns):
        counts = jobs.counts.tolist()
        first, total = "", 0
        for j, c in zip(jobs.distinct, counts):
            found = source_problems(j)
            if found and not first:
                first = f"job {j.job_id}: {found[0]}"
            total += len(found) * c
    else:
        missing = missing_files(jobs)
        first, total = (missing[0] if missing else ""), len(missing)
    if total:
        more = f" (and {total - 1} more)" if total > 1 else ""
        raise InputError(f"{where}: {first}{more}")


def write_queue(jobs: Iterable[JobSpec], path: str | Path) -> Path:
    """Write a queue as ``.csv`` or ``.json`` (chosen by the extension)."""
    import pandas as pd

    from gpuscope.core.io import write_table, write_text

    path = Path(path)
    jobs = assign_ids(list(jobs))
    if path.suffix.lower() not in (".csv", ".json"):
        raise InputError(f"{path}: unsupported extension {path.suffix!r} (use .csv or .json)")
    if path.suffix.lower() == ".json":
        return write_text(path, json.dumps([j.to_dict() for j in jobs], indent=1) + "\n",
                          what="job queue")
    df = pd.DataFrame([j.to_dict() for j in jobs], columns=list(QUEUE_COLUMNS), dtype=object)
    return write_table(df.where(df.notna(), ""), path, what="job queue")
