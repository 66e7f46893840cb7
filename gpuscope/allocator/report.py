"""Write an allocation's outputs: plans, metrics, seed-001-style tables, Gantt and bar charts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from gpuscope.allocator.experiments import LABELS, ExperimentInputs, run
from gpuscope.allocator.metrics import comparison_table, distribution_table, to_markdown
from gpuscope.allocator.plots import gantt, policy_bars
from gpuscope.core.io import write_text
from gpuscope.core.targets import RESOURCES


def truth_note(inp: ExperimentInputs) -> str:
    if inp.truth is None:
        return "durations: predicted (no ground truth given; the simulation replays predictions)"
    return f"ground truth: {inp.truth.source} execution times of each job on each device"


def write_allocation(
    inp: ExperimentInputs,
    policies: Sequence[str],
    orders: Sequence[str],
    resources: Sequence[str] = RESOURCES,
    out: Path = Path("out"),
    seed: int = 0,
) -> str:
    """Run every policy × order and write under ``out``: ``plan_<policy>_<order>.csv``
    (per-job start/finish/JCT), ``gantt_<policy>_<order>.png``, ``metrics.csv`` and
    ``metrics.json`` (average JCT, makespan, rejected, failed), ``per_device.csv``,
    ``tables.md`` (seed 001 Table 10/11 layout) and ``policies.png``. Returns the tables."""
    out.mkdir(parents=True, exist_ok=True)
    rows, recs, per = [], [], []
    note = truth_note(inp)
    models = [j.model for j in inp.jobs]
    from tqdm.auto import tqdm

    # one bar (stderr, a terminal only) once the runs take over 2 s (issue 18)
    bar = tqdm(total=len(policies) * len(orders), desc="allocate", unit="run", delay=2.0,
               disable=None)
    for p in policies:
        for o in orders:
            bar.set_postfix_str(f"{p}/{o}", refresh=False)
            r = run(inp, p, o, resources, seed=seed)
            label = f"{LABELS.get(p, p)} ({o.upper()})"
            rows.append((label, r.metrics))
            tag = f"{p}_{o}"
            _csv(r.schedule, out / f"plan_{tag}.csv")
            gantt(r.schedule, out / f"gantt_{tag}.png",
                  f"{label} on {inp.cluster} — {note}", models)
            recs.append({"policy": p, "order": o, "avg_jct_s": r.metrics.avg_jct_s,
                         "makespan_s": r.metrics.makespan_s, "rejected": r.metrics.n_rejected,
                         "failed_oom": r.metrics.n_failed, "durations": r.truth_source})
            per.append(r.metrics.per_device.assign(policy=p, order=o))
            bar.update(1)
    bar.close()
    _csv(pd.DataFrame(recs), out / "metrics.csv")
    _csv(pd.concat(per), out / "per_device.csv")
    write_text(out / "metrics.json", json.dumps({
        "cluster": str(inp.cluster), "jobs": len(inp.jobs), "resources": list(resources),
        "seed": seed, "note": note, "runs": recs}, indent=1) + "\n")
    cmp_md = to_markdown(comparison_table(rows), "Average JCT per GPU, Average JCT, Makespan (s)",
                         note)
    dist_md = to_markdown(distribution_table(rows), "Job distribution")
    write_text(out / "tables.md", cmp_md + "\n" + dist_md)
    if len(rows) > 1:
        policy_bars(rows, out / "policies.png", f"{inp.cluster}, {len(inp.jobs)} jobs — {note}")
    return cmp_md + "\n" + dist_md


def _csv(df: pd.DataFrame, path: Path) -> None:
    """Write a CSV atomically (a temp file renamed into place, issue 18)."""
    from gpuscope.core.io import atomic_write

    with atomic_write(path, what="allocation output") as tmp:
        df.to_csv(tmp, index=False, lineterminator="\n")
