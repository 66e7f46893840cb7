"""gpuscope's extensions of seed 003 (ours, not the paper's).

* ``--durations tjng``: a job's run time is its t_jng (``gpuscope tjng`` table: job, node
  type, g GPUs) for the partition's GPU type and the flavor's GPUs, so the same model runs at
  different speeds on the A100 and V100 partitions. t_jng rows are profiling-length runs
  (minutes), so they are scaled by one factor per table — the l flavor's time limit over the
  median l-size t_jng on the table's fastest type — and capped at the flavor's time limit
  (Slurm ends a job at ``--time``). Label: ``emulated`` (or as the table's ``source``).
* ``--jobs queue.csv``: a gpuscope job queue's arrivals (and, with ``--durations tjng``, each
  job's own run time and the flavor that holds it): :class:`QueueEpisodes`.
* ``--arrivals gavel``: arrival times and GPU counts from the Gavel MSR trace (measured,
  Philly-derived; 2000 jobs over 719.7 h): its 2/4/8-GPU jobs in order become s/m/l jobs,
  K−1 consecutive ones an episode, the terminal f job arriving with the next one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from gpuscope.core.errors import InputError
from gpuscope.jobs.spec import JobSpec
from gpuscope.mdrl.simulate import DurationFn, Episode, JobReq, Partition, limit_durations


@dataclass
class TjngDurations:
    """Durations drawn from a t_jng table (a random job of the table per episode job)."""

    table: pd.DataFrame
    scale: float = 0.0
    times: dict[tuple[str, int], np.ndarray] = field(init=False)
    jobs: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        t = self.table
        t = t[np.isfinite(t["exec_time_s"].astype(float))]
        piv = t.pivot_table(index="job_id", columns=["node_type", "n_gpus"],
                            values="exec_time_s", aggfunc="min").dropna()
        if piv.empty:
            raise InputError("t_jng table has no job with times on every node type and g")
        self.jobs = piv.index.to_numpy()
        self.times = {(str(c[0]), int(c[1])): piv[c].to_numpy(float) / 3600.0
                      for c in piv.columns}

    @classmethod
    def from_file(cls, path: str | Path) -> TjngDurations:
        from gpuscope.core.tjng import read_tjng

        return cls(read_tjng(path))

    def calibrate(self, part: Partition) -> None:
        """Set ``scale`` so the median l-size job on the fastest type fills the l limit."""
        k = part.single[-1]
        g = part.flavors[k].gpus
        med = [np.median(v) for (typ, gg), v in self.times.items() if gg == g]
        if not med:
            raise InputError(f"t_jng table has no rows with n_gpus = {g}")
        self.scale = part.flavors[k].limit_h / min(med)

    def __call__(self, rng: np.random.Generator, part: Partition, k: int) -> tuple[float, str]:
        f = part.flavors[k]
        key = (part.gpu_type, f.gpus)
        if key not in self.times:
            have = sorted({t for t, _ in self.times})
            raise InputError(f"t_jng table has no {part.gpu_type!r} rows with n_gpus = "
                             f"{f.gpus} (node types: {', '.join(have)})")
        if self.scale <= 0:
            self.calibrate(part)
        i = int(rng.integers(len(self.jobs)))
        return min(f.limit_h, float(self.times[key][i]) * self.scale), str(self.jobs[i])


def load_gavel_multi(path: str | Path | None = None) -> pd.DataFrame:
    """Multi-GPU jobs of a Gavel MSR trace: ``arrival_h, gpus, job_type`` (2/4/8/16 GPUs)."""
    from gpuscope.core.data import gavel_trace, read_gavel_trace

    p = Path(path) if path else gavel_trace("6c71a0")
    tr = read_gavel_trace(p)
    tr = tr[tr["gpus"].isin([2, 4, 8, 16])].reset_index(drop=True)
    return pd.DataFrame({"arrival_h": tr["arrival_s"].astype(float) / 3600.0,
                         "gpus": tr["gpus"].astype(int), "job_type": tr["job_type"]})


@dataclass
class GavelEpisodes:
    """Episodes cut from the trace's multi-GPU jobs (16-GPU jobs map to l: the single f is
    the terminal job). Episodes start at a random offset; arrivals are shifted to start at 0."""

    part: Partition
    n_jobs: int = 5
    durations: DurationFn = limit_durations
    trace: pd.DataFrame = field(default_factory=load_gavel_multi)

    def __post_init__(self) -> None:
        if len(self.trace) < self.n_jobs:
            raise InputError("Gavel trace has fewer multi-GPU jobs than --jobs")
        by_gpus = {self.part.flavors[k].gpus: k for k in self.part.single}
        big = self.part.single[-1]
        self._k = [by_gpus.get(int(g), big) for g in self.trace["gpus"]]

    def __call__(self, rng: np.random.Generator) -> Episode:
        i0 = int(rng.integers(0, len(self.trace) - self.n_jobs + 1))
        arr = self.trace["arrival_h"].to_numpy()[i0:i0 + self.n_jobs]
        arr = arr - arr[0]
        term = self.part.multi[-1] if self.part.multi else self.part.single[-1]
        jobs = []
        for i in range(self.n_jobs):
            k = self._k[i0 + i] if i < self.n_jobs - 1 else term
            d, model = self.durations(rng, self.part, k)
            jobs.append(JobReq(i, k, float(arr[i]), d,
                               model or str(self.trace["job_type"].iloc[i0 + i])))
        return Episode(tuple(jobs), source="measured arrivals (Gavel MSR trace)")


@dataclass
class QueueEpisodes:
    """Episodes of a job queue (``mdrl --jobs queue.csv``): its jobs in arrival order, their
    arrival times (``arrival_s``, shifted to start at 0), the last one the terminal f job.

    A job's flavor: with ``--durations tjng`` and the job in the table (its ``job_id``; the
    table of ``gpuscope tjng --jobs`` the same queue), the smallest single-server flavor whose
    time limit holds the job's scaled run time on this partition, which is its duration;
    otherwise, as seed 003 §6.1 draws it, uniform over s/m/l (the queue then fixes arrivals
    and the episode length, each draw its flavors).
    """

    part: Partition
    jobs: tuple[JobSpec, ...]
    durations: DurationFn = limit_durations

    def __post_init__(self) -> None:
        if len(self.jobs) < 2:
            raise InputError(f"--jobs queue has {len(self.jobs)} job(s); an episode needs 2 "
                             "or more (the last is f)")
        self.jobs = tuple(sorted(self.jobs, key=lambda j: j.arrival_s))

    def _own(self, job: JobSpec) -> tuple[int, float] | None:
        """(flavor, duration) from the job's own t_jng rows, or None."""
        dur = self.durations
        if not isinstance(dur, TjngDurations) or job.job_id is None:
            return None
        hit = np.flatnonzero(dur.jobs == job.job_id)
        if not hit.size:
            return None
        if dur.scale <= 0:
            dur.calibrate(self.part)
        for k in self.part.single:
            f = self.part.flavors[k]
            t = dur.times.get((self.part.gpu_type, f.gpus))
            if t is not None and t[hit[0]] * dur.scale <= f.limit_h:
                return k, float(t[hit[0]] * dur.scale)
        k = self.part.single[-1]
        return k, float(self.part.flavors[k].limit_h)

    def __call__(self, rng: np.random.Generator) -> Episode:
        single = self.part.single
        term = self.part.multi[-1] if self.part.multi else single[-1]
        t0 = self.jobs[0].arrival_s
        out = []
        for i, job in enumerate(self.jobs):
            own = None if i == len(self.jobs) - 1 else self._own(job)
            if own is not None:
                k, d = own
            else:
                k = term if i == len(self.jobs) - 1 else int(single[int(rng.integers(len(single)))])
                d, _ = self.durations(rng, self.part, k)
            out.append(JobReq(i, k, (job.arrival_s - t0) / 3600.0, float(d),
                              job.job_id or job.model))
        return Episode(tuple(out), source="a job queue's arrivals")
