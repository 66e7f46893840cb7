"""Seed 001's allocation tables (Tables 8–20), the Gavel tables and the demo, as files.

Used by ``benchmarks/allocator_experiments.py``, ``notebooks/allocator_seed001.py`` and
``gpuscope demo``. Every table states its ground truth (measured or emulated) and shows the
oracle and Driple rows beside the proposed model's and gpuscope's ``ect``.

* :func:`compare_policies` — every policy × order, the rows of Tables 10/12/15 plus oracle,
  random, round-robin and ``ect``; :func:`ablation` — Tables 17–20; :func:`score_table` —
  Table 9 / Table 14 (per-job scores per GPU, allocation and JCT).
* :func:`reproduce_seed001`, :func:`reproduce_gavel` — the markdown tables and figures.
* :func:`run_demo` — the Table 4 comparison on the bundled checkpoints (``make demo``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from gpuscope.allocator.allocate import AllocationResult, allocate
from gpuscope.allocator.efficiency import SEED_NAMES
from gpuscope.allocator.inputs import (
    AllocationInputs,
    prepare,
    run,
    seed_workload,
    table8_jobs,
)
from gpuscope.allocator.metrics import Metrics, comparison_table, distribution_table, to_markdown
from gpuscope.allocator.plots import gantt, policy_bars
from gpuscope.allocator.predict import checkpoint_path
from gpuscope.allocator.report import LABELS
from gpuscope.allocator.table import JobDeviceTable
from gpuscope.allocator.truth import truth_steps
from gpuscope.cluster.counts import ClusterSpec
from gpuscope.core.data import bundled
from gpuscope.core.errors import InputError
from gpuscope.core.targets import RESOURCES

SEED_CLUSTER = "gtx1080:1,rtx2070:1,titanx:1"
MODERN_CLUSTER = "v100:1,t4:1,a100:1,h100:1"


def available_policies(inp: AllocationInputs) -> list[str]:
    out = []
    if inp.truth is not None:
        out.append("oracle")
    if inp.pred is not None:
        out += ["exec-time", "comp-eff"]
    if inp.driple is not None:
        out.append("driple")
    out += ["random", "round-robin"]
    if inp.pred is not None:
        out.append("ect")
    if inp.truth is not None:
        out.append("oracle-ect")
    return out


def compare_policies(
    inp: AllocationInputs, policies: Sequence[str] | None = None,
    orders: Sequence[str] = ("fifo", "sjf"), seed: int = 0,
) -> list[tuple[str, AllocationResult]]:
    """Every policy × order on one queue: ``[("Label (FIFO)", result), …]``; comp-eff also
    with Alg. 2's literal order (``SJF-EFF``: comp-eff ascending) when SJF is asked."""
    rows = []
    for p in policies or available_policies(inp):
        for o in orders:
            rows.append((f"{LABELS.get(p, p)} ({o.upper()})", run(inp, p, o, seed=seed)))
        if p == "comp-eff" and "sjf" in orders:
            rows.append((f"{LABELS[p]} (SJF-EFF)", run(inp, p, "sjf-eff", seed=seed)))
    return rows


def ablation(
    inp: AllocationInputs, orders: Sequence[str] = ("fifo", "sjf")
) -> tuple[list[tuple[str, AllocationResult]], list[tuple[str, AllocationResult]]]:
    """Tables 17–18 (each resource alone) and Tables 19–20 (all but one), comp-eff policy."""
    alone, without = [], []
    for r in ("gpu_mem_util", "gpu_util", "cpu_util", "gpu_mem"):
        for o in orders:
            alone.append((f"{SEED_NAMES[r]} ({o.upper()})", run(inp, "comp-eff", o, (r,))))
    for r in ("gpu_mem_util", "gpu_util", "cpu_util", "gpu_mem"):
        rest = tuple(x for x in RESOURCES if x != r)
        for o in orders:
            without.append((f"w/o {SEED_NAMES[r]} ({o.upper()})", run(inp, "comp-eff", o, rest)))
    return alone, without


def metrics_rows(rows: Sequence[tuple[str, AllocationResult]]) -> list[tuple[str, Metrics]]:
    return [(label, r.metrics) for label, r in rows]


def score_table(result: AllocationResult, digits: int = 2) -> pd.DataFrame:
    """Table 9 (comp-eff) / Table 14 (exec time): each job's score on every GPU, the GPU it was
    allocated to and its JCT."""
    sched = result.schedule
    cols = list(result.metrics.per_device["device"])  # cluster order
    df = pd.DataFrame(np.round(result.placement.score, digits), columns=cols,
                      index=sched["job_id"].to_numpy())
    df["Allocation"] = sched["device"].to_numpy()
    df["JCT (s)"] = np.round(sched["jct_s"].to_numpy(), digits)
    df.index.name = ""
    return df


def policies_for(model_dir: Path, cluster: ClusterSpec) -> list[str]:
    """The policies to compare: all, Driple only where its checkpoints exist."""
    p = ["oracle", "exec-time", "comp-eff", "random", "round-robin", "ect", "oracle-ect"]
    if all(checkpoint_path(model_dir, d, True).is_file() for d in cluster.devices):
        p.insert(3, "driple")
    return p


def _note(inp: AllocationInputs, extra: str = "") -> str:
    src = inp.truth.source if inp.truth is not None else "predicted"
    driple = "" if inp.driple is not None else " Driple rows absent: no Driple checkpoints."
    return (f"Ground truth: **{src}** execution times (job × device); cluster {inp.cluster}; "
            f"{len(inp.jobs)} jobs.{driple} {extra}").strip()


def comparison_md(inp: AllocationInputs, title: str,
                  rows: Sequence[tuple[str, AllocationResult]], extra: str = "") -> str:
    mr = metrics_rows(rows)
    return (to_markdown(comparison_table(mr), f"{title}: average JCT per GPU, average JCT, "
                        "makespan (s)", _note(inp, extra))
            + "\n" + to_markdown(distribution_table(mr), f"{title}: job distribution"))


def table9_md(inp: AllocationInputs) -> str:
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
                      f"{label} on {cluster} — ground truth {truth_src}", models,
                      cluster=cluster)
    for k, v in out.items():
        (tables / f"allocator_{k}.md").write_text(v)
    return out


def reproduce_gavel(
    gavel_dir: str | Path, tables: str | Path, figures: str | Path,
    trace: str = "6c71a0", cluster: str = "k80:128,p100:64,v100:32",
    pred_noise: float = 0.3, seed: int = 0,
) -> str:
    """Execution-time policies on Gavel's measured throughputs and an MSR trace."""
    from gpuscope.allocator.trace import read_trace
    from gpuscope.allocator.truth_table import gavel_throughputs

    gavel_dir = Path(gavel_dir)
    tr = read_trace(gavel_dir / "msr-traces-seed0" / f"{trace}.trace")
    th = gavel_throughputs(gavel_dir / "simulation_throughputs.json")
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


def gavel_tables(
    trace: pd.DataFrame, throughputs: pd.DataFrame, pred_noise: float = 0.2, seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(predictions, truth)`` long frames of a trace on Gavel's devices (k80, p100, v100)
    from its throughputs (:func:`gpuscope.allocator.truth_table.gavel_throughputs`).

    ``truth`` (``provenance = measured``): total steps / measured steps per second.
    ``predictions``: ``exec_time_s`` = truth × exp(N(0, pred_noise)), ``oom_prob`` 0 (the
    throughputs list only configurations that ran). Job types missing on a device are dropped
    from the trace.
    """
    from gpuscope.core.data import GAVEL_DEVICES

    thr = throughputs.pivot(index="job_type", columns="device", values="steps_per_s")
    thr = thr.reindex(columns=list(GAVEL_DEVICES)).dropna()
    tr = trace[trace["job_type"].isin(thr.index)].reset_index(drop=True)
    if tr.empty:
        raise InputError("no trace job has throughputs on all Gavel devices")
    t = tr["total_steps"].to_numpy()[:, None] / thr.loc[tr["job_type"]].to_numpy()
    rng = np.random.default_rng(seed)
    p = t * rng.lognormal(0.0, pred_noise, t.shape)
    m = len(GAVEL_DEVICES)
    base = {"job_id": np.repeat(tr["job_id"].to_numpy(), m), "device": np.tile(GAVEL_DEVICES, len(tr))}
    truth = pd.DataFrame({**base, "exec_time_s": t.ravel(), "status": "ok",
                          "provenance": "measured"})
    pred = pd.DataFrame({**base, "exec_time_s": p.ravel(), "oom_prob": 0.0})
    return pred, truth


def run_demo(
    model_dir: str | Path = bundled("checkpoints"),
    truth_dir: str | Path = bundled("emulated"),
) -> int:
    """Print seed 001's Table 4 policy comparison (every policy with FIFO and SJF on one
    gtx1080, rtx2070 and titanx, emulated ground truth); 0 on success, 2 when bundled data
    is missing."""
    t0 = time.perf_counter()
    cluster = ClusterSpec.parse(SEED_CLUSTER)
    jobs = seed_workload(128, steps_per_epoch=truth_steps(truth_dir, cluster.devices))
    policies = policies_for(Path(model_dir), cluster)
    try:
        inp = prepare(jobs, cluster, model_dir, truth_dir, policies)
    except InputError as e:
        print(f"allocator demo: {e}", file=sys.stderr)
        return 2
    rows = metrics_rows(compare_policies(inp, available_policies(inp)))
    note = (f"{len(jobs)} jobs (seed 001 Table 4, gan counted twice), {cluster}; "
            f"ground truth: {inp.truth.source if inp.truth else 'none'}")
    print(to_markdown(comparison_table(rows), "Seed 001 Table 4 workload: average JCT per GPU, "
                      "average JCT, makespan (s)", note))
    print(to_markdown(distribution_table(rows), "Job distribution"))
    print(f"allocator demo finished in {time.perf_counter() - t0:.1f} s")
    return 0


