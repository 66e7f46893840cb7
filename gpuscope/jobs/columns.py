"""A queue as columns: one :class:`JobSpec` per distinct job and per-row arrays of what only a
row holds (its id, arrival, due date and weight).

A 10**6-row queue usually repeats a few hundred jobs; holding each distinct job once and the
rows as arrays lets ``jobs check`` and ``allocate`` work per distinct job (checks, sources,
predictions) and expand to rows with numpy indexing, instead of building and walking 10**6
objects. :meth:`JobColumns.rows` gives the per-row ``JobSpec`` list where a caller needs it,
equal to what the per-row reader builds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import MISSING, dataclass, fields

import numpy as np

from gpuscope.core.errors import InputError
from gpuscope.jobs.spec import JobSpec

#: The fields only a row holds; every other field belongs to the distinct job.
ROW_FIELDS: tuple[str, ...] = ("job_id", "arrival_s", "due_s", "weight")
ALL_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(JobSpec))
#: Each field's default (None where the field has none).
FIELD_DEFAULTS: dict[str, object] = {f.name: (None if f.default is MISSING else f.default)
                                     for f in fields(JobSpec)}
#: The fields of a distinct job (the key that rows share).
JOB_FIELDS: tuple[str, ...] = tuple(f for f in ALL_FIELDS if f not in ROW_FIELDS)


@dataclass(frozen=True)
class JobColumns:
    """A queue: distinct jobs and per-row columns.

    Attributes:
        distinct: one job per distinct combination of :data:`JOB_FIELDS`, in the order of
            their first rows; each is its first row's job (id, arrival... included).
        code: ``(n,)`` int64, the row's index into ``distinct``.
        job_id: the rows' ids (unique).
        arrival_s: ``(n,)`` float64 arrival times.
        due_s: ``(n,)`` float64 due dates, NaN where a row has none.
        weight: ``(n,)`` float64 tardiness weights.
    """

    distinct: list[JobSpec]
    code: np.ndarray
    job_id: list[str]
    arrival_s: np.ndarray
    due_s: np.ndarray
    weight: np.ndarray

    def __len__(self) -> int:
        return len(self.job_id)

    @property
    def counts(self) -> np.ndarray:
        """Rows per distinct job."""
        return np.bincount(self.code, minlength=len(self.distinct))

    def column(self, name: str) -> list[object]:
        """A job field's value per row (shared objects, no copy of a distinct job)."""
        if name in ("arrival_s", "weight"):
            return list(getattr(self, name).tolist())
        if name == "due_s":
            return [None if v != v else v for v in self.due_s.tolist()]
        if name == "job_id":
            return list(self.job_id)
        per = [getattr(j, name) for j in self.distinct]
        return [per[k] for k in self.code.tolist()]

    def rows(self) -> list[JobSpec]:
        """One ``JobSpec`` per row (built without checking again: the values were checked
        when the columns were made)."""
        return JobSpec.trusted_rows({f: self.column(f) for f in ALL_FIELDS}, len(self))

    @classmethod
    def from_jobs(cls, jobs: Sequence[JobSpec]) -> JobColumns:
        """The columns of checked jobs (a JSON queue, a named queue); ids must be set."""
        index: dict[tuple[object, ...], int] = {}
        distinct: list[JobSpec] = []
        code = np.empty(len(jobs), dtype=np.int64)
        for i, j in enumerate(jobs):
            key = tuple(getattr(j, f) for f in JOB_FIELDS)
            k = index.get(key)
            if k is None:
                k = index[key] = len(distinct)
                distinct.append(j)
            code[i] = k
        ids = [j.job_id for j in jobs]
        if any(i is None for i in ids):
            raise InputError("every job of a queue needs a job_id (the queue readers assign them)")
        return cls(distinct, code, [str(i) for i in ids],
                   np.array([j.arrival_s for j in jobs], dtype=np.float64),
                   np.array([np.nan if j.due_s is None else j.due_s for j in jobs],
                            dtype=np.float64),
                   np.array([j.weight for j in jobs], dtype=np.float64))


def first_rows(code: np.ndarray) -> np.ndarray:
    """The index of the first row of each code (codes numbered by first occurrence)."""
    _, first = np.unique(code, return_index=True)
    return np.asarray(first, dtype=np.int64)


def combine_codes(parts: Sequence[np.ndarray]) -> np.ndarray:
    """One code per distinct tuple of per-row codes, numbered by first occurrence (mixed
    radix in int64 where it fits, else a pandas MultiIndex)."""
    import pandas as pd

    n = len(parts[0]) if parts else 0
    if not parts:
        return np.zeros(n, dtype=np.int64)
    radix = [int(p.max()) + 2 if len(p) else 1 for p in parts]  # codes may be -1
    if float(np.prod(np.array(radix, dtype=np.float64))) < 2.0**62:
        flat = np.zeros(n, dtype=np.int64)
        for p, r in zip(parts, radix):
            flat = flat * r + (p.astype(np.int64) + 1)
        return np.asarray(pd.factorize(flat)[0], dtype=np.int64)
    key = pd.factorize(pd.MultiIndex.from_arrays(list(parts)))[0]
    return np.asarray(key, dtype=np.int64)
