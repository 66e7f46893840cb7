"""Seed 004's metrics (§VI): per-job completion times, the share of jobs improved, average JCT,
the best job, makespan — each policy against DS on the same jobs — and the output files.

Signs: ``*_change_pct`` are signed changes against DS (negative = shorter, as the paper's
"275.2 → 234.7 s (−14.7 %)"); ``best_job_pct`` is the largest per-job reduction.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpuscope.specon.simulate import SimResult


@dataclass(frozen=True)
class Comparison:
    policy: str
    avg_jct_s: float
    ds_avg_jct_s: float
    makespan_s: float
    ds_makespan_s: float
    improved_pct: float
    best_job: int
    best_job_pct: float
    moves: int
    stays: int
    rebalances: int

    @property
    def jct_change_pct(self) -> float:
        return 100.0 * (self.avg_jct_s - self.ds_avg_jct_s) / self.ds_avg_jct_s

    @property
    def makespan_change_pct(self) -> float:
        return 100.0 * (self.makespan_s - self.ds_makespan_s) / self.ds_makespan_s


def compare(ds: SimResult, other: SimResult) -> Comparison:
    """``other`` against DS on the same jobs (matched by job id)."""
    base = {j.job: j.jct_s for j in ds.jobs}
    red = {j.job: (base[j.job] - j.jct_s) / base[j.job] for j in other.jobs}
    best = max(red, key=lambda k: (red[k], -k))
    return Comparison(
        policy=other.policy, avg_jct_s=other.avg_jct_s, ds_avg_jct_s=ds.avg_jct_s,
        makespan_s=other.makespan_s, ds_makespan_s=ds.makespan_s,
        improved_pct=100.0 * float(np.mean([r > 1e-9 for r in red.values()])),
        best_job=best, best_job_pct=100.0 * red[best], moves=other.count("M"),
        stays=other.count("stay"), rebalances=other.count("R"))


def format_table(ds: SimResult, comps: Sequence[Comparison], title: str) -> str:
    lines = [title,
             f"{'policy':<12} {'avg JCT s':>10} {'change':>8} {'makespan s':>11} {'change':>8} "
             f"{'improved':>9} {'best job':>16} {'M':>3} {'stay':>4} {'R':>3}",
             f"{'ds':<12} {ds.avg_jct_s:>10.1f} {'':>8} {ds.makespan_s:>11.1f} {'':>8} "
             f"{'':>9} {'':>16} {0:>3} {0:>4} {0:>3}"]
    for c in comps:
        lines.append(
            f"{c.policy:<12} {c.avg_jct_s:>10.1f} {c.jct_change_pct:>+7.1f}% {c.makespan_s:>11.1f} "
            f"{c.makespan_change_pct:>+7.1f}% {c.improved_pct:>8.0f}% "
            f"{f'Job-{c.best_job} {-c.best_job_pct:+.1f}%':>16} {c.moves:>3} {c.stays:>4} "
            f"{c.rebalances:>3}")
    return "\n".join(lines)


def _atomic_write(path: Path, text: str) -> None:
    from gpuscope.core.io import write_text

    write_text(path, text, what="SpeCon output", check=False)


def _csv(rows: list[list[object]]) -> str:
    import io

    from gpuscope.core.io import escape_cell

    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([[escape_cell(v) for v in r] for r in rows])
    return buf.getvalue()


def jobs_csv(res: SimResult) -> str:
    rows: list[list[object]] = [["job_id", "model", "platform", "arrival_s", "finish_s", "jct_s",
                                 "worker_first", "worker_last", "n_moves"]]
    rows += [[j.job, j.model, j.platform, round(j.arrival_s, 3), round(j.finish_s, 3),
              round(j.jct_s, 3), j.worker_first, j.worker_last, j.n_moves] for j in res.jobs]
    return _csv(rows)


def decisions_csv(res: SimResult) -> str:
    """The released repo's ``distribution.csv`` format (time, job, original_node, to_node; an
    empty to_node is a stay), with a ``kind`` column M / R / stay. Nodes are ``worker-k``,
    1-based as the paper's Worker-k."""
    rows: list[list[object]] = [["time", "job", "original_node", "to_node", "kind"]]
    rows += [[round(d.time, 3), f"job{d.job}", f"worker-{d.src + 1}",
              "" if d.to is None else f"worker-{d.to + 1}", d.kind] for d in res.decisions]
    return _csv(rows)


def write_outputs(out: Path, results: dict[str, SimResult], summary: Mapping[str, object]) -> list[Path]:
    """jobs-<policy>.csv, decisions-<policy>.csv, summary.json (atomically) under ``out``."""
    written = []
    for pol, res in results.items():
        for name, text in ((f"jobs-{pol}.csv", jobs_csv(res)),
                           (f"decisions-{pol}.csv", decisions_csv(res))):
            if pol == "ds" and name.startswith("decisions"):
                continue
            _atomic_write(out / name, text)
            written.append(out / name)
    _atomic_write(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    written.append(out / "summary.json")
    return written


def plot_timeline(path: Path, results: dict[str, SimResult], n_workers: int, title: str) -> Path:
    """Active containers per worker over time, one panel per policy; moves marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(results), 1, figsize=(9, 2.4 * len(results)), sharex=True,
                             squeeze=False)
    for ax, (pol, res) in zip(axes[:, 0], results.items(), strict=True):
        t = [e[0] for e in res.timeline]
        for w in range(n_workers):
            ax.step(t, [e[1][w] for e in res.timeline], where="post", label=f"worker-{w + 1}")
        for d in res.decisions:
            if d.to is not None:
                ax.axvline(d.time, color="red" if d.kind == "M" else "purple", lw=0.6, alpha=0.5)
        ax.set_ylabel(f"{pol}\nactive")
    axes[0, 0].legend(ncol=min(n_workers, 4), fontsize=7, loc="upper right")
    axes[-1, 0].set_xlabel("time (s)  [emulated: co-location simulator; red M / purple R moves]")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    from gpuscope.core.io import write_figure

    try:
        return write_figure(fig, path, what="timeline", check=False)
    finally:
        plt.close(fig)


__all__ = ["Comparison", "compare", "decisions_csv", "format_table", "jobs_csv", "plot_timeline",
           "write_outputs"]
