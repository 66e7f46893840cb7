"""Queue × device matrices pivoted from one batched prediction (or ground-truth) DataFrame.

The predictor contract (design.md, Predictions) is a long DataFrame with ``job_id``, ``device``,
the checkpoint's targets and ``oom_prob``. Every placement policy reads the same
:class:`JobDeviceTable`: one ``(n_jobs, n_devices)`` float matrix per target, rows in queue
order, columns in cluster order, so a policy is a few vectorised numpy operations.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from gpuscope.core.errors import InputError
from gpuscope.jobs.spec import JobSpec

#: Seed 001 Alg. 1–2 and the contract: a job predicted not to fit is never placed there.
OOM_THRESHOLD: float = 0.5


@dataclass
class JobDeviceTable:
    """Values per (job, device) for a fixed queue and device list.

    Attributes:
        job_ids: queue order.
        devices: column order (the cluster's device types).
        values: target name -> ``(n_jobs, n_devices)`` float array (NaN where unknown); for a
            queue of repeated jobs (:meth:`take`) each array is built when read.
        fits: ``(n_jobs, n_devices)`` bool: the job is expected to fit the device's memory.
        source: ``predicted``, ``measured`` or ``emulated`` (what the numbers are).
    """

    job_ids: np.ndarray
    devices: tuple[str, ...]
    values: Mapping[str, np.ndarray]
    fits: np.ndarray
    source: str = "predicted"
    meta: dict[str, str] = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.job_ids), len(self.devices))

    def get(self, target: str) -> np.ndarray:
        if target not in self.values:
            raise InputError(
                f"{self.source} table has no {target!r} column "
                f"(has: {', '.join(sorted(self.values))})"
            )
        return self.values[target]

    def has(self, target: str) -> bool:
        return target in self.values

    def take(self, rows: np.ndarray, job_ids: Sequence[str]) -> JobDeviceTable:
        """The table of a queue whose row ``i`` is this table's job ``rows[i]``, named
        ``job_ids[i]`` (a distinct job's predictions repeated for each row that shares it)."""
        ids = np.asarray(job_ids, dtype=object)
        if len(ids) != len(rows):
            raise ValueError(f"{len(rows)} rows, {len(ids)} job ids")
        return JobDeviceTable(ids, self.devices, _Taken(self.values, rows), self.fits[rows],
                              self.source, dict(self.meta))

    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        job_ids: Sequence[str],
        devices: Sequence[str],
        *,
        source: str = "predicted",
        fits_column: str = "oom_prob",
    ) -> JobDeviceTable:
        """Pivot a long ``job_id, device, <targets>…`` frame.

        ``fits`` comes from ``oom_prob <= 0.5`` for predictions, or from ``status == "ok"`` for a
        ground-truth frame (``fits_column="status"``). A missing (job, device) row is an error
        naming the first few missing pairs: a policy must never guess a number.
        """
        for col in ("job_id", "device"):
            if col not in frame.columns:
                raise InputError(f"{source} table lacks column {col!r}")
        ids = np.asarray(list(job_ids), dtype=object)
        devices = tuple(devices)
        sub = frame[frame["device"].isin(devices) & frame["job_id"].isin(ids)]
        if sub.duplicated(["job_id", "device"]).any():
            dup = sub[sub.duplicated(["job_id", "device"])].iloc[0]
            raise InputError(f"{source} table has two rows for job {dup.job_id} on {dup.device}")
        ji = pd.Index(ids).get_indexer(sub["job_id"])
        di = pd.Index(devices).get_indexer(sub["device"])
        n, m = len(ids), len(devices)
        present = np.zeros((n, m), dtype=bool)
        present[ji, di] = True
        if not present.all():
            miss = np.argwhere(~present)[:3]
            pairs = ", ".join(f"{ids[a]}@{devices[b]}" for a, b in miss)
            raise InputError(
                f"{source} table misses {int((~present).sum())} job×device pair(s), e.g. {pairs}"
            )
        skip = {"job_id", "device", "status", "oom_prob", "provenance", "source"}
        values: dict[str, np.ndarray] = {}
        for col in sub.columns:
            if col in skip or not pd.api.types.is_numeric_dtype(sub[col]):
                continue
            arr = np.full((n, m), np.nan)
            arr[ji, di] = sub[col].to_numpy(dtype=float)
            values[col] = arr
        fits = np.ones((n, m), dtype=bool)
        if fits_column == "oom_prob" and "oom_prob" in sub.columns:
            p = sub["oom_prob"].to_numpy(dtype=float)
            fits[ji, di] = ~(p > OOM_THRESHOLD)  # NaN (unknown) counts as fitting
        elif fits_column == "status" and "status" in sub.columns:
            fits[ji, di] = (sub["status"].astype(str) == "ok").to_numpy()
        return cls(ids, devices, values, fits, source)


class _Taken(Mapping[str, np.ndarray]):
    """``{k: v[rows] for k, v in values.items()}``, each array built when read, so a queue of
    10**6 rows of a few hundred jobs holds its ~20 targets once per distinct job (a policy
    reads one or two of them)."""

    def __init__(self, values: Mapping[str, np.ndarray], rows: np.ndarray) -> None:
        self._values, self._rows = values, rows

    def __getitem__(self, key: str) -> np.ndarray:
        return self._values[key][self._rows]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


def queue_ids(jobs: Iterable[JobSpec]) -> list[str]:
    """The queue's job ids in order; a job without one is an error (the queue readers assign
    ids, so only a hand-built queue can lack them)."""
    ids: list[str] = []
    for i, j in enumerate(jobs):
        if j.job_id is None:
            raise InputError(f"job {i} ({j.model}) has no job_id")
        ids.append(j.job_id)
    return ids
