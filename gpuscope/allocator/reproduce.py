"""Reproduce seed 001's allocation tables (Tables 8–20) and gpuscope's extensions, as files.

Used by ``benchmarks/allocator_experiments.py`` and ``notebooks/allocator_seed001.py``.
Every table states its ground truth (measured or emulated) and shows the oracle and Driple
rows beside the proposed model's and gpuscope's ``ect``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gpuscope.allocator.allocate import AllocationResult, allocate
from gpuscope.allocator.experiments import (
    LABELS,
    MODERN_CLUSTER,
    SEED_CLUSTER,
    ExperimentInputs,
    ablation,
    available_policies,
    compare_policies,
    metrics_rows,
    run,
    score_table,
    seed_workload,
    table8_jobs,
)
from gpuscope.allocator.metrics import comparison_table, distribution_table, to_markdown
from gpuscope.allocator.pipeline import prepare
from gpuscope.allocator.plots import gantt, policy_bars
from gpuscope.allocator.predict import checkpoint_path
from gpuscope.allocator.table import JobDeviceTable
from gpuscope.allocator.truth import truth_steps
from gpuscope.cluster.counts import ClusterSpec


def policies_for(model_dir: Path, cluster: ClusterSpec) -> list[str]:
    """The policies to compare: all, Driple only where its checkpoints exist."""
    p = ["oracle", "exec-time", "comp-eff", "random", "round-robin", "ect", "oracle-ect"]
    if all(checkpoint_path(model_dir, d, True).is_file() for d in cluster.devices):
        p.insert(3, "driple")
    return p


def _note(inp: ExperimentInputs, extra: str = "") -> str:
    src = inp.truth.source if inp.truth is not None else "predicted"
    driple = "" if inp.driple is not None else " Driple rows absent: no Driple checkpoints."
    return (f"Ground truth: **{src}** execution times (job × device); cluster {inp.cluster}; "
            f"{len(inp.jobs)} jobs.{driple} {extra}").strip()


def comparison_md(inp: ExperimentInputs, title: str,
                  rows: Sequence[tuple[str, AllocationResult]], extra: str = "") -> str:
    mr = metrics_rows(rows)
    return (to_markdown(comparison_table(mr), f"{title}: average JCT per GPU, average JCT, "
                        "makespan (s)", _note(inp, extra))
            + "\n" + to_markdown(distribution_table(mr), f"{title}: job distribution"))


def table9_md(inp: ExperimentInputs) -> str:
    parts = []
    for policy, what in (("comp-eff", "Table 9: predicted computing efficiency (Eq. 2)"),
                         ("exec-time", "Table 14: predicted execution time (s)"),
                         ("driple", "Driple: computing efficiency over GPU util, GPU mem util")):
        if policy == "driple" and inp.driple is None:
            continue
        r = run(inp, policy, "fifo")
        parts.append(to_markdown(score_table(r), f"{what}, allocation and JCT (FIFO)",
                                 _note(inp, "Jobs arrive one minute apart (Table 8).")))
    return "\n".join(parts)


def reproduce_seed001(
    model_dir: str | Path, truth_dir: str | Path, tables: str | Path, figures: str | Path,
    clusters: Sequence[tuple[str, str]] = (("seed", SEED_CLUSTER), ("modern", MODERN_CLUSTER)),
) -> dict[str, str]:
    """Write ``allocator_<name>.md`` tables and ``allocator_<name>*.png`` figures; return the
    markdown by name."""
    model_dir, tables, figures = Path(model_dir), Path(tables), Path(figures)
    tables.mkdir(parents=True, exist_ok=True)
    figures.mkdir(parents=True, exist_ok=True)
    out: dict[str, str] = {}
    for name, spec in clusters:
        cluster = ClusterSpec.parse(spec)
        pol = policies_for(model_dir, cluster)
        steps = truth_steps(truth_dir, cluster.devices)  # as long as the ground-truth runs
        if name == "seed":
            inp8 = prepare(table8_jobs(steps), cluster, model_dir, truth_dir, pol)
            out["table9"] = table9_md(inp8)
        jobs = seed_workload(128, steps_per_epoch=steps)
        inp = prepare(jobs, cluster, model_dir, truth_dir, pol)
        rows = compare_policies(inp, available_policies(inp))
        md = comparison_md(inp, f"Table 4 workload ({name} cluster, Tables 10–16 layout)", rows,
                           "All jobs queued at t = 0.")
        alone, without = ablation(inp)
        md += "\n" + comparison_md(inp, "Ablation, one resource alone (Tables 17–18)", alone)
        md += "\n" + comparison_md(inp, "Ablation, all but one resource (Tables 19–20)", without)
        out[f"table4_{name}"] = md
        truth_src = inp.truth.source if inp.truth is not None else "none"
        title = f"Table 4 workload on {cluster} — ground truth {truth_src}"
        policy_bars(metrics_rows(rows), figures / f"allocator_table4_{name}_policies.png", title)
        models = [j.model for j in jobs]
        for label, r in rows:
            if (r.policy, r.order) in (("comp-eff", "sjf"), ("ect", "sjf")):
                gantt(r.schedule, figures / f"allocator_table4_{name}_gantt_{r.policy}.png",
                      f"{label} on {cluster} — ground truth {truth_src}", models)
    for k, v in out.items():
        (tables / f"allocator_{k}.md").write_text(v)
    return out


def reproduce_gavel(
    gavel_dir: str | Path, tables: str | Path, figures: str | Path,
    trace: str = "6c71a0", cluster: str = "k80:128,p100:64,v100:32",
    pred_noise: float = 0.3, seed: int = 0,
) -> str:
    """Execution-time policies on Gavel's measured throughputs and an MSR trace."""
    from gpuscope.allocator.gavel import gavel_tables, load_throughputs, load_trace

    gavel_dir = Path(gavel_dir)
    tr = load_trace(gavel_dir / "msr-traces-seed0" / f"{trace}.trace")
    th = load_throughputs(gavel_dir / "simulation_throughputs.json")
    pred, truth = gavel_tables(tr, th, pred_noise=pred_noise, seed=seed)
    tr = tr[tr["job_id"].isin(truth["job_id"])]
    c = ClusterSpec.parse(cluster)
    ids = tr["job_id"].tolist()
    p_tab = JobDeviceTable.from_frame(pred, ids, c.devices)
    t_tab = JobDeviceTable.from_frame(truth, ids, c.devices, source="measured",
                                      fits_column="status")
    arr = tr["arrival_s"].to_numpy(dtype=float)
    rows = []
    for p in ("oracle", "exec-time", "random", "round-robin", "ect", "oracle-ect"):
        for o in ("fifo", "sjf"):
            r = allocate(p, o, c, arr, pred=p_tab, truth=t_tab, seed=seed)
            label = {"exec-time": "Exec time, noisy estimate", "ect": "gpuscope ECT, noisy estimate"
                     }.get(p, LABELS[p])
            rows.append((f"{label} ({o.upper()})", r.metrics))
    note = (f"Ground truth: **measured** (Gavel throughputs on k80/p100/v100, MIT licence; "
            f"MSR trace {trace}, {len(ids)} single-GPU jobs, trace arrivals). Predicted times = "
            f"measured × exp(N(0, {pred_noise})) (gpuscope's predictor does not know these "
            "models); Gavel has no utilisation data, so comp-eff and Driple cannot run here.")
    md = (to_markdown(comparison_table(rows), f"Gavel measured workload on {c}: average JCT "
                      "per GPU type, average JCT, makespan (s)", note)
          + "\n" + to_markdown(distribution_table(rows), "Gavel workload: job distribution"))
    Path(tables).mkdir(parents=True, exist_ok=True)
    (Path(tables) / "allocator_gavel.md").write_text(md)
    policy_bars(rows, Path(figures) / "allocator_gavel_policies.png",
                f"Gavel trace {trace} on {c} — ground truth measured")
    return md
