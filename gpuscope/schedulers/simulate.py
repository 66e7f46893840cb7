"""Online simulation (seed 002 §2.1, seed 000 §IV-A): reschedule at every submission, every
completion and, with a finite ``Params.interval``, that many seconds after the last
rescheduling point when nothing else happens (default: event-driven, as the reference).

Between two points every running job progresses at rate 1 / t_jc on its configuration; a
preempted job keeps its completed fraction and resumes from it on any configuration (the
seeds' checkpoint assumption); a resized or migrated job likewise. Costs: each open node
costs ``node_rate[v, busy GPUs]`` per hour, split among its jobs by GPU share (execution
cost); a job finishing at C_j > d_j adds ω_j (C_j − d_j) (tardiness cost).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from gpuscope.core.errors import InputError
from gpuscope.core.progress import bar as progress_bar
from gpuscope.schedulers.model import Problem
from gpuscope.schedulers.step import StepState, node_types


@dataclass
class SimResult:
    """``segments``: one row per job per contiguous run on one node and configuration (the
    compact schedule: linear in the number of jobs); ``jobs``: one row per job; ``slots``:
    one row per interval between rescheduling points; ``summary``: totals and solver times;
    ``full_log`` (only with ``simulate(..., full_log=True)``): one row per rescheduling point
    × job in the system, reference-format columns (see :mod:`gpuscope.schedulers.results`)."""

    segments: pd.DataFrame
    jobs: pd.DataFrame
    slots: pd.DataFrame
    summary: dict[str, float | int | str] = field(default_factory=dict)
    full_log: pd.DataFrame | None = None

    @property
    def log(self) -> pd.DataFrame:
        if self.full_log is None:
            raise ValueError("run simulate(..., full_log=True) for the per-point log")
        return self.full_log

    @property
    def timeline(self) -> pd.DataFrame:
        """Per-job segments (alias of ``segments``)."""
        return self.segments


def _relabel(p: Problem, prev: np.ndarray, node: np.ndarray, conf: np.ndarray) -> np.ndarray:
    """Rename nodes so that jobs keeping their node mates stay on their node where possible
    (node names are interchangeable under the VM model; this only avoids counting fake
    migrations): each new node takes the old node it shares most jobs with, unless a new
    node sharing more took it first; the others take free names in order."""
    if p.fixed:
        return node
    N = p.n_nodes
    run = conf >= 0
    mapping = np.full(N, -1, dtype=np.int64)
    taken = np.zeros(N, dtype=bool)
    both = run & (prev >= 0)
    if both.any():
        pairs, counts = np.unique(node[both] * N + prev[both], return_counts=True)
        o = np.argsort(-counts, kind="stable")  # most shared first (ties: smallest pair)
        new, old = np.divmod(pairs[o], N)
        _, fn = np.unique(new, return_index=True)  # best old node of each new node
        cand = np.sort(fn)  # in order of shared count
        _, fo = np.unique(old[cand], return_index=True)  # each old node once, best first
        win = cand[fo]
        mapping[new[win]], taken[old[win]] = old[win], True
    opened = np.zeros(N, dtype=bool)
    opened[node[run]] = True
    rest = np.flatnonzero(opened & (mapping < 0))
    mapping[rest] = np.flatnonzero(~taken)[: len(rest)]
    return np.where(run, mapping[np.maximum(node, 0)], -1)


#: Most periodic rescheduling points a simulation may plan (``--interval 0.001`` on
#: jobs of hours would loop for millions of points); ``$GPUSCOPE_MAX_POINTS`` overrides.
MAX_POINTS: int = 100_000
#: Rescheduling points in a row at which neither the clock moves nor a job completes before
#: the simulation stops with one line (every simulated clock is bounded).
MAX_STALLED_POINTS: int = 1000


def check_points(p: Problem) -> None:
    """Refuse a periodic ``interval`` that needs more than :data:`MAX_POINTS` rescheduling
    points: the instance spans at least (last - first submission) + the shortest job."""
    H = p.params.interval
    if not math.isfinite(H) or p.n_jobs == 0:
        return
    fastest = np.min(p.T, axis=1)
    ok = np.isfinite(fastest)
    # every job ends at least its fastest time after its submission: a lower bound on the span
    span = float(np.max(p.submit[ok] + fastest[ok]) - np.min(p.submit)) if ok.any() else 0.0
    limit = int(os.environ.get("GPUSCOPE_MAX_POINTS", MAX_POINTS))
    if span / H > limit:
        raise InputError(f"rescheduling interval {H:g} s over an instance spanning at least "
                         f"{span:.0f} s needs over {span / H:.3g} rescheduling points, over the "
                         f"limit of {limit} ($GPUSCOPE_MAX_POINTS); use a longer --interval")


def simulate(p: Problem, method: object, progress: bool = False, check: bool = True,
             full_log: bool = False) -> SimResult:
    """Run ``method`` (an object with ``step(problem, state)``) online over the whole instance.

    Rescheduling points: every arrival, every completion and, with a finite
    ``p.params.interval``, that many seconds after the previous point. Work per point is
    linear in the jobs in the system; the output is linear in the jobs (segments) unless
    ``full_log`` asks for the reference's per-point rows."""
    J, N, H = p.n_jobs, p.n_nodes, p.params.interval
    check_points(p)
    done = np.zeros(J)
    finished = np.zeros(J, dtype=bool)
    completion = np.full(J, np.nan)
    start = np.full(J, np.nan)
    cur_node = np.full(J, -1, dtype=np.int64)
    cur_conf = np.full(J, -1, dtype=np.int64)
    n_pre = np.zeros(J, dtype=np.int64)
    n_mig = np.zeros(J, dtype=np.int64)
    exec_cost = np.zeros(J)
    seg_start = np.zeros(J)
    seg_cost = np.zeros(J)
    segs: list[tuple[np.ndarray, ...]] = []  # closed segments: job, node, conf, start, end, cost, done
    arr = np.argsort(p.submit, kind="stable")
    active = np.zeros(0, dtype=np.int64)
    ptr, t, it = 0, float(p.submit[arr[0]]), 0
    logs, slots, solve = [], [], []
    bar = progress_bar(total=J, desc="simulate", unit="job", quiet=not progress)

    def close(js: np.ndarray, end: np.ndarray | float) -> None:
        if len(js):
            segs.append((js, cur_node[js].copy(), cur_conf[js].copy(), seg_start[js].copy(),
                         np.broadcast_to(end, js.shape).copy(), seg_cost[js].copy(), done[js].copy()))

    n_done, stalled = 0, 0
    while n_done < J:
        done_before = n_done
        p0 = ptr
        while ptr < J and p.submit[arr[ptr]] <= t + 1e-9:
            ptr += 1
        if ptr > p0:  # the jobs in the system, in file order
            active = np.sort(np.concatenate([active, arr[p0:ptr]]))
        q = active
        R = (1.0 - done[q])[:, None] * p.T[q]
        st = StepState(t=t, jobs=q, R=R, cur_node=cur_node[q].copy(), cur_conf=cur_conf[q].copy())
        tic = time.perf_counter()
        d = method.step(p, st)  # type: ignore[attr-defined]
        solve.append(time.perf_counter() - tic)
        node = _relabel(p, cur_node[q], d.node, d.conf)
        conf = d.conf
        run = conf >= 0
        if check:
            _check(p, node, conf, R)
        was = cur_conf[q] >= 0
        moved = was & run & ((node != cur_node[q]) | (conf != cur_conf[q]))
        n_pre[q[was & ~run]] += 1
        n_mig[q[moved]] += 1
        close(q[was & (moved | ~run)], t)
        new = q[run & (moved | ~was)]
        seg_start[new], seg_cost[new] = t, 0.0
        cur_node[q], cur_conf[q] = np.where(run, node, -1), conf
        li = np.flatnonzero(run)
        rem = R[li, conf[li]]
        t_arr = p.submit[arr[ptr]] if ptr < J else np.inf
        t_next = min(t_arr, t + (rem.min() if len(li) else np.inf), t + H)
        if not len(li) and t_arr == np.inf:
            raise RuntimeError(f"{type(method).__name__} left {len(q)} jobs waiting on an empty cluster")
        dt = t_next - t
        gj = p.conf_g[conf[li]]
        nl = node[li]
        used = np.bincount(nl, weights=gj, minlength=N)
        vm = node_types(p, node, conf)
        rate = np.where(used > 0, p.node_rate[np.maximum(vm, 0), used.astype(np.int64)], 0.0)
        node_cost = rate * dt / 3600.0
        share = node_cost[nl] * gj / used[nl]
        jr = q[li]
        exec_cost[jr] += share
        seg_cost[jr] += share
        start[jr] = np.where(np.isnan(start[jr]), t, start[jr])
        ends = rem - dt <= 1e-9 * np.maximum(1.0, rem)
        done[jr] = np.where(ends, 1.0, done[jr] + dt / p.T[jr, conf[li]])
        je = jr[ends]
        completion[je] = t + rem[ends]
        finished[je] = True
        close(je, completion[je])
        cur_node[je] = cur_conf[je] = -1
        if len(je):
            active = active[~finished[active]]
            n_done += len(je)
            bar.update(len(je))
        if full_log:
            ci = np.maximum(conf, 0)
            gpu_cost = np.zeros(len(q))
            gpu_cost[li] = share
            tard = np.where(finished[q] & run, np.maximum(0.0, completion[q] - p.due[q]), 0.0)
            logs.append(({
                "n_iterate": it, "sim_time": t, "_j": q,
                "SelectedTime": np.where(run, R[np.arange(len(q)), ci], np.nan),
                "ExecutionTime": np.where(run, dt, 0.0), "CompletionPercent": 100.0 * done[q],
                "StartTime": t, "FinishTime": np.where(run, t_next, np.nan),
                "_node": np.where(run, node, -1), "_vm": np.where(run, p.conf_vm[ci], -1),
                "n_assigned_GPUs": np.where(run, p.conf_g[ci], 0), "Tardiness": tard,
                "GPUcost": gpu_cost, "TardinessCost": tard * p.weight[q],
            }, len(q)))
        slots.append((it, t, t_next, int((used > 0).sum()), int(used.sum()), len(li),
                      len(q) - len(li), float(node_cost.sum())))
        stalled = stalled + 1 if t_next <= t and n_done == done_before else 0
        if stalled > MAX_STALLED_POINTS:  # t + step == t: times too large for the interval
            raise InputError(f"the simulated clock stopped at {t:.6g} s (its steps no longer "
                             "move it); use times below 1e12 s or a longer --interval")
        t, it = t_next, it + 1
    bar.close()
    return _result(p, logs, segs, slots, solve, completion, start, exec_cost, n_pre, n_mig, method)


def _check(p: Problem, node: np.ndarray, conf: np.ndarray, R: np.ndarray) -> None:
    run = conf >= 0
    vm = node_types(p, node, conf)
    if np.any(p.conf_vm[conf[run]] != vm[node[run]]):
        raise RuntimeError("a decision puts two VM types on one node")
    used = np.bincount(node[run], weights=p.conf_g[conf[run]], minlength=p.n_nodes)
    if np.any(used > np.where(vm >= 0, p.vm_G[np.maximum(vm, 0)], 0)):
        raise RuntimeError("a decision runs more GPUs on a node than it has")
    if not np.all(np.isfinite(R[np.flatnonzero(run), conf[run]])):
        raise RuntimeError("a decision uses a configuration without an execution time")


def _segments(p: Problem, segs: list) -> pd.DataFrame:
    j, nd, cf, s0, s1, cost, dn = (np.concatenate(c) for c in zip(*segs))
    o = np.lexsort((s0, j))
    j, nd, cf, s0, s1, cost, dn = (x[o] for x in (j, nd, cf, s0, s1, cost, dn))
    vm = p.conf_vm[cf]
    return pd.DataFrame({
        "job_id": p.job_ids[j], "node": np.asarray(p.node_names, dtype=object)[nd],
        "vm_type": p.vm_names[vm], "gpu_type": p.vm_gpu_type[vm], "n_gpus": p.conf_g[cf],
        "start_s": s0, "end_s": s1, "exec_cost": cost, "completion_pct": 100.0 * dn,
    })


def _result(p: Problem, logs: list[Any], segs: list[tuple[np.ndarray, ...]],
            slots: list[tuple[Any, ...]], solve: list[float], completion: np.ndarray,
            start: np.ndarray, exec_cost: np.ndarray, n_pre: np.ndarray, n_mig: np.ndarray,
            method: object) -> SimResult:
    tard = np.maximum(0.0, completion - p.due)
    jobs = pd.DataFrame({
        "job_id": p.job_ids, "submit_s": p.submit, "due_s": p.due, "weight": p.weight,
        "start_s": start, "completion_s": completion, "tardiness_s": tard,
        "exec_cost": exec_cost, "tardiness_cost": tard * p.weight,
        "preemptions": n_pre, "migrations": n_mig,
    })
    slot_df = pd.DataFrame(slots, columns=["n_iterate", "start_s", "end_s", "open_nodes",
                                           "busy_gpus", "running_jobs", "waiting_jobs", "exec_cost"])
    s = np.asarray(solve)
    summary: dict[str, float | int | str] = {
        "method": type(method).__name__, "n_jobs": p.n_jobs, "n_nodes": p.n_nodes,
        "exec_cost": float(exec_cost.sum()), "tardiness_cost": float(jobs.tardiness_cost.sum()),
        "total_cost": float(exec_cost.sum() + jobs.tardiness_cost.sum()),
        "makespan_s": float(np.nanmax(completion) - p.submit.min()),
        "late_jobs": int((tard > 0).sum()), "rescheduling_points": len(s),
        "solve_s_total": float(s.sum()), "solve_s_median": float(np.median(s)),
        "solve_s_max": float(s.max()),
    }
    return SimResult(segments=_segments(p, segs), jobs=jobs, slots=slot_df, summary=summary,
                     full_log=_full_log(p, logs) if logs else None)


def _full_log(p: Problem, logs: list) -> pd.DataFrame:
    # one DataFrame at the end (per-step DataFrames cost more than the schedulers)
    log = pd.DataFrame({c: np.concatenate([np.broadcast_to(d[c], (n,)) for d, n in logs])
                        for c in logs[0][0]})
    j = log.pop("_j").to_numpy()
    nd, vm = log.pop("_node").to_numpy(), log.pop("_vm").to_numpy()
    names = np.asarray(p.node_names, dtype=object)
    meta = p.instance.jobs
    front = pd.DataFrame({
        "n_iterate": log.pop("n_iterate"), "sim_time": log.pop("sim_time"),
        "UniqueJobsID": p.job_ids[j], "SubmissionTime": p.submit[j], "Deadline": p.due[j],
        "TardinessWeight": p.weight[j],
        "MinExecTime": pd.to_numeric(meta["MinExecTime"]).to_numpy(float)[j],
        "MaxExecTime": pd.to_numeric(meta["MaxExecTime"]).to_numpy(float)[j],
    })
    log = pd.concat([front, log], axis=1)
    log.insert(13, "node_ID", np.where(nd >= 0, names[np.maximum(nd, 0)], ""))
    log.insert(14, "GPUtype", np.where(vm >= 0, p.vm_gpu_type[np.maximum(vm, 0)], ""))
    log["TotalCost"] = log["GPUcost"] + log["TardinessCost"]
    log["VMtype"] = np.where(vm >= 0, p.vm_names[np.maximum(vm, 0)], "")
    return log
