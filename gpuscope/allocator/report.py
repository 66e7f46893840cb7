"""Write an allocation's outputs: plans, metrics, seed-001-style tables, Gantt and bar charts."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from gpuscope.allocator.inputs import AllocationInputs, run
from gpuscope.allocator.metrics import comparison_table, distribution_table, to_markdown
from gpuscope.allocator.plots import gantt, policy_bars
from gpuscope.core.io import write_table, write_text
from gpuscope.core.targets import RESOURCES

#: Row labels of the tables (seed 001's names for its policies).
LABELS: dict[str, str] = {
    "oracle": "Oracle (true exec time)", "exec-time": "Proposed Model, exec time",
    "comp-eff": "Proposed Model, comp-eff", "driple": "Driple, comp-eff",
    "random": "Random", "round-robin": "Round-robin", "ect": "gpuscope ECT",
    "oracle-ect": "Oracle ECT (true exec time)", "makespan": "gpuscope makespan",
    "mix": "gpuscope JCT/makespan mix", "ect-online": "gpuscope ECT, online re-planning",
}


def truth_note(inp: AllocationInputs) -> str:
    """Which truth the figures were scored on, and what the policies planned with."""
    if inp.truth is None:
        return "durations: predicted (no ground truth given; the simulation replays predictions)"
    return (f"ground truth: {inp.truth.source} execution times of each job on each device; "
            f"planned on: {inp.planned_on}")


def write_allocation(
    inp: AllocationInputs,
    policies: Sequence[str],
    orders: Sequence[str],
    resources: Sequence[str] = RESOURCES,
    out: Path = Path("out"),
    seed: int = 0,
    weights: Mapping[str, float] | None = None,
    preempt: bool = False,
) -> str:
    """Run every policy × order and write under ``out``: ``plan_<policy>_<order>.csv``
    (per-job start/finish/JCT), ``gantt_<policy>_<order>.png``, ``metrics.csv`` and
    ``metrics.json`` (average JCT, makespan, rejected, failed, truth), ``per_device.csv``,
    ``tables.md`` (seed 001 Table 10/11 layout) and ``policies.png``. An online policy runs
    once (it has no order of its own). Returns the tables."""
    from gpuscope.allocator.policies import POLICIES

    rows, recs, per = [], [], []
    note = truth_note(inp)
    kinds = inp.job_kinds
    runs = [(p, o) for p in policies for o in orders
            if not POLICIES[p].online or o == orders[0]]
    from gpuscope.core.progress import bar as progress_bar

    bar = progress_bar(total=len(runs), desc="allocate", unit="run")
    for p, o in runs:
        bar.set_postfix_str(f"{p}/{o}", refresh=False)
        r = run(inp, p, o, resources, seed=seed, weights=weights,
                preempt=preempt and POLICIES[p].online)
        label = f"{LABELS.get(p, p)} ({r.order.upper()})"
        rows.append((label, r.metrics))
        tag = f"{p}_{r.order}"
        _csv(r.schedule, out / f"plan_{tag}.csv")
        gantt(r.schedule, out / f"gantt_{tag}.png", f"{label} on {inp.cluster} — {note}",
              kinds, cluster=inp.cluster)
        recs.append({"policy": p, "order": r.order, "avg_jct_s": r.metrics.avg_jct_s,
                     "makespan_s": r.metrics.makespan_s, "rejected": r.metrics.n_rejected,
                     "failed_oom": r.metrics.n_failed, "durations": r.truth_source,
                     "planned_on": inp.planned_on})
        per.append(r.metrics.per_device.assign(policy=p, order=r.order))
        bar.update(1)
    bar.close()
    _csv(pd.DataFrame(recs), out / "metrics.csv")
    _csv(pd.concat(per), out / "per_device.csv")
    write_text(out / "metrics.json", json.dumps({
        "cluster": str(inp.cluster), "jobs": inp.n_jobs, "resources": list(resources),
        "seed": seed, "note": note, "runs": recs}, indent=1) + "\n", check=False)
    cmp_md = to_markdown(comparison_table(rows), "Average JCT per GPU, Average JCT, Makespan (s)",
                         note + "; a GPU type that ran no job shows `idle`")
    dist_md = to_markdown(distribution_table(rows), "Job distribution")
    write_text(out / "tables.md", cmp_md + "\n" + dist_md, check=False)
    if len(rows) > 1:
        policy_bars(rows, out / "policies.png", f"{inp.cluster}, {inp.n_jobs} jobs — {note}")
    return cmp_md + "\n" + dist_md


def _csv(df: pd.DataFrame, path: Path) -> None:
    """Write a CSV through the one table writer (atomic, spreadsheet-safe cells)."""
    write_table(df, path, what="allocation output", check=False)
