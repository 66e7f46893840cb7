"""Job traces with arrival times: Gavel's trace files and Gavel's job generator.

A trace frame has one row per job: ``job_id, job_type, total_steps, arrival_s, gpus``. The
time of a job on a GPU type is then ``total_steps / steps_per_s`` of its ``job_type`` on that
type (a throughput truth table, :mod:`gpuscope.allocator.truth`).

* :func:`read_trace` reads Gavel's tab-separated traces (Narayanan et al., OSDI 2020): the
  7-field lines of its published Philly-derived traces (job type, command, steps argument,
  needs data dir, total steps, arrival s, GPUs) and the 10-field lines its current simulator
  reads (job type, command, working dir, steps argument, needs data dir, total steps, GPUs,
  priority, SLO, arrival s).
* :func:`write_trace` writes either layout, so a gpuscope workload can be replayed by Gavel.
* :func:`generate_jobs` draws jobs as Gavel's generator does for single-GPU jobs: a job type
  uniform over the job types, a run time on the reference GPU from the Philly distribution
  (80 %: 10^U(1.5, 3) minutes, 20 %: 10^U(3, 4) minutes), total steps = run time × the
  reference GPU's throughput; arrivals all at 0 or Poisson with a mean gap. It is gpuscope's
  own seeded code: the distribution is Gavel's, its random stream is not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from gpuscope.core.errors import InputError

TRACE_COLUMNS: tuple[str, ...] = ("job_id", "job_type", "total_steps", "arrival_s", "gpus")
_SEVEN = ("job_type", "command", "steps_arg", "needs_data", "total_steps", "arrival_s", "gpus")
_TEN = ("job_type", "command", "work_dir", "steps_arg", "needs_data", "total_steps", "gpus",
        "priority", "slo", "arrival_s")


def is_trace_file(path: str | Path) -> bool:
    """A ``.trace`` file, or a headerless tab-separated file of 7 or 10 fields a line."""
    p = Path(path)
    if p.suffix == ".trace":
        return True
    if p.suffix not in ("", ".tsv", ".txt") or not p.is_file():
        return False
    from gpuscope.core.io import read_text

    first = read_text(p, "job trace", lenient=True).partition("\n")[0]
    return first.count("\t") + 1 in (7, 10)


def read_trace(path: str | Path, *, max_jobs: int | None = None,
               single_gpu: bool = True) -> pd.DataFrame:
    """A Gavel trace as a frame of :data:`TRACE_COLUMNS`, jobs in arrival order.

    ``single_gpu`` keeps jobs of one GPU (gpuscope places single-GPU jobs); ``max_jobs`` then
    keeps the first ones. Job ids are ``g<line number>`` (the line in the file, from 0), so a
    slice names jobs as the whole trace does. A malformed line is one ``InputError``.
    """
    from gpuscope.core.io import check_values, read_text
    from gpuscope.core.limits import MAX_GPUS, MAX_SECONDS, parse_number

    text = read_text(path, "job trace")
    check_values(7 * (text.count("\n") + 1), "job trace", path, "fields")  # before splitting
    lines = text.splitlines()
    del text
    rows = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        f = line.split("\t")
        if len(f) not in (7, 10):
            raise InputError(f"trace {path} line {i + 1}: {len(f)} tab-separated fields, "
                             "expected 7 (Gavel's published traces) or 10 (its simulator's)")
        rec = dict(zip(_SEVEN if len(f) == 7 else _TEN, f))
        try:
            steps = parse_number(rec["total_steps"], low=0, low_open=True, high=2.0**62)
            arr = parse_number(rec["arrival_s"], low=0, high=MAX_SECONDS)
            gpus = int(parse_number(rec["gpus"], integer=True, low=1, high=MAX_GPUS))
        except ValueError:
            raise InputError(f"trace {path} line {i + 1}: needs total steps > 0, an arrival "
                             f"time in [0, {MAX_SECONDS:g}] s and 1 to {MAX_GPUS} GPUs"
                             ) from None
        rows.append((f"g{i}", rec["job_type"].strip(), steps, arr, gpus))
    df = pd.DataFrame(rows, columns=list(TRACE_COLUMNS))
    if df.empty:
        raise InputError(f"trace {path} holds no job")
    if single_gpu:
        df = df[df["gpus"] == 1]
    df = df.iloc[np.argsort(df["arrival_s"].to_numpy(), kind="stable")]
    if max_jobs is not None:
        df = df.iloc[:max_jobs]
    return df.reset_index(drop=True)


def write_trace(trace: pd.DataFrame, path: str | Path, fields: int = 7) -> Path:
    """Write a trace frame in Gavel's 7- or 10-field layout (commands: the job type, as the
    simulator only reads the type and steps). Total steps are written as integers, as Gavel
    does; arrivals with microsecond precision."""
    from gpuscope.core.io import write_text

    if fields not in (7, 10):
        raise InputError(f"a Gavel trace has 7 or 10 fields a line, not {fields}")
    lines = []
    for r in trace.itertuples(index=False):
        steps, gpus, arr = int(round(float(r.total_steps))), int(r.gpus), float(r.arrival_s)
        jt = str(r.job_type)
        if fields == 7:
            lines.append(f"{jt}\t{jt}\t-\t0\t{steps}\t{arr:.6f}\t{gpus}")
        else:
            lines.append(f"{jt}\t{jt}\t.\t-\t0\t{steps}\t{gpus}\t1\t-1.000000\t{arr:.6f}")
    return write_text(path, "\n".join(lines) + "\n", what="trace")


def philly_run_time_s(rng: np.random.Generator, n: int) -> np.ndarray:
    """Run times (s) from the Philly-derived distribution Gavel's generator uses."""
    long = rng.random(n) >= 0.8
    exponent = np.where(long, rng.uniform(3.0, 4.0, n), rng.uniform(1.5, 3.0, n))
    return 60.0 * 10.0 ** exponent


def generate_jobs(
    n: int,
    steps_per_s: Mapping[str, float],
    *,
    seed: int = 0,
    mean_gap_s: float = 0.0,
    job_types: Sequence[str] | None = None,
) -> pd.DataFrame:
    """``n`` single-GPU jobs as Gavel's generator draws them (module docstring).

    Args:
        steps_per_s: job type -> throughput on the reference GPU (Gavel's: the V100).
        seed: seed of the numpy generator (gpuscope's stream, not Gavel's).
        mean_gap_s: 0 puts every job at t = 0 (Gavel's ``lam = 0``); else Poisson arrivals
            with this mean gap.
        job_types: the types to draw from (default: every key of ``steps_per_s``, sorted).
    """
    if n < 1:
        raise InputError(f"need at least one job, got {n}")
    types = sorted(steps_per_s) if job_types is None else list(job_types)
    missing = [t for t in types if t not in steps_per_s]
    if not types or missing:
        raise InputError(f"no reference throughput for job type(s) {missing[:3]}")
    rng = np.random.default_rng(seed)
    kind = rng.integers(0, len(types), n)
    run = philly_run_time_s(rng, n)
    thr = np.array([steps_per_s[t] for t in types])[kind]
    gaps = rng.exponential(mean_gap_s, n) if mean_gap_s > 0 else np.zeros(n)
    arrival = np.concatenate([[0.0], np.cumsum(gaps[1:])])
    width = max(4, len(str(n - 1)))
    return pd.DataFrame({
        "job_id": [f"j{i:0{width}d}" for i in range(n)],
        "job_type": [types[k] for k in kind],
        "total_steps": np.maximum(np.round(run * thr), 1.0),
        "arrival_s": arrival,
        "gpus": 1,
    })
