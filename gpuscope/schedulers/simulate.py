"""Online simulation (seed 002 §2.1, seed 000 §IV-A): reschedule at every submission, every
completion, and H seconds after the last rescheduling point when nothing else happens.

Between two points every running job progresses at rate 1 / t_jc on its configuration; a
preempted job keeps its completed fraction and resumes from it on any configuration (the
seeds' checkpoint assumption); a resized or migrated job likewise. Costs: each open node
costs ``node_rate[v, busy GPUs]`` per hour, split among its jobs by GPU share (execution
cost); a job finishing at C_j > d_j adds ω_j (C_j − d_j) (tardiness cost).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from tqdm import tqdm

from gpuscope.schedulers.model import Problem
from gpuscope.schedulers.step import StepState, node_types


@dataclass
class SimResult:
    """``log``: one row per rescheduling point × job in the system (reference-format columns,
    see :mod:`gpuscope.schedulers.results`); ``jobs``: one row per job; ``slots``: one row per
    interval between rescheduling points; ``summary``: totals and solver times."""

    log: pd.DataFrame
    jobs: pd.DataFrame
    slots: pd.DataFrame
    summary: dict[str, float | int | str] = field(default_factory=dict)

    @property
    def timeline(self) -> pd.DataFrame:
        """Per-job segments: consecutive slots on the same node and configuration merged."""
        r = self.log[self.log["n_assigned_GPUs"] > 0]
        r = r.sort_values(["UniqueJobsID", "n_iterate"], kind="stable")
        key = r[["UniqueJobsID", "node_ID", "VMtype", "n_assigned_GPUs"]].astype(str).agg("|".join, axis=1)
        same_job = r["UniqueJobsID"] == r["UniqueJobsID"].shift()
        brk = (key != key.shift()) | ~same_job | (r["n_iterate"] != r["n_iterate"].shift() + 1)
        seg = brk.cumsum()
        g = r.groupby(seg, sort=False)
        return pd.DataFrame({
            "job_id": g["UniqueJobsID"].first(), "node": g["node_ID"].first(),
            "vm_type": g["VMtype"].first(), "gpu_type": g["GPUtype"].first(),
            "n_gpus": g["n_assigned_GPUs"].first(), "start_s": g["StartTime"].first(),
            "end_s": g["FinishTime"].last(), "exec_cost": g["GPUcost"].sum(),
        }).reset_index(drop=True)


def _relabel(p: Problem, prev: np.ndarray, node: np.ndarray, conf: np.ndarray) -> np.ndarray:
    """Rename nodes so that a job keeping its VM type stays on its node where possible (node
    names are interchangeable under the VM model; this only avoids counting fake migrations)."""
    if p.fixed:
        return node
    run = conf >= 0
    vm = node_types(p, node, conf)
    mapping = np.full(p.n_nodes, -1, dtype=np.int64)
    taken = np.zeros(p.n_nodes, dtype=bool)
    both = run & (prev >= 0)
    # (new, old) node pairs by how many jobs they share, most first (ties: smallest pair)
    pairs, counts = np.unique(node[both] * p.n_nodes + prev[both], return_counts=True)
    for code in pairs[np.argsort(-counts, kind="stable")].tolist():
        new, old = divmod(code, p.n_nodes)
        if mapping[new] < 0 and not taken[old]:
            mapping[new], taken[old] = old, True
    rest = iter(np.flatnonzero(~taken))
    for n in np.flatnonzero(vm >= 0):
        if mapping[n] < 0:
            mapping[n] = next(rest)
    return np.where(run, mapping[np.maximum(node, 0)], -1)


def simulate(p: Problem, method: object, progress: bool = False, check: bool = True) -> SimResult:
    """Run ``method`` (an object with ``step(problem, state)``) online over the whole instance."""
    J, N, H = p.n_jobs, p.n_nodes, p.params.interval
    done = np.zeros(J)
    finished = np.zeros(J, dtype=bool)
    completion = np.full(J, np.nan)
    start = np.full(J, np.nan)
    cur_node = np.full(J, -1, dtype=np.int64)
    cur_conf = np.full(J, -1, dtype=np.int64)
    n_pre = np.zeros(J, dtype=np.int64)
    n_mig = np.zeros(J, dtype=np.int64)
    exec_cost = np.zeros(J)
    arr = np.argsort(p.submit, kind="stable")
    ptr, t, it = 0, float(p.submit[arr[0]]), 0
    logs, slots, solve = [], [], []
    bar = tqdm(total=J, disable=not progress, desc="simulate", unit="job")
    while not finished.all():
        while ptr < J and p.submit[arr[ptr]] <= t + 1e-9:
            ptr += 1
        q = np.sort(arr[:ptr][~finished[arr[:ptr]]])
        R = (1.0 - done[q])[:, None] * p.T[q]
        st = StepState(t=t, jobs=q, R=R, cur_node=cur_node[q].copy(), cur_conf=cur_conf[q].copy())
        tic = time.perf_counter()
        d = method.step(p, st)
        solve.append(time.perf_counter() - tic)
        node = _relabel(p, cur_node[q], d.node, d.conf)
        conf = d.conf
        run = conf >= 0
        if check:
            _check(p, node, conf, R)
        was = cur_conf[q] >= 0
        n_pre[q[was & ~run]] += 1
        n_mig[q[was & run & ((node != cur_node[q]) | (conf != cur_conf[q]))]] += 1
        cur_node[q], cur_conf[q] = node, conf
        li = np.flatnonzero(run)
        rem = R[li, conf[li]]
        t_arr = p.submit[arr[ptr]] if ptr < J else np.inf
        t_next = min(t_arr, t + (rem.min() if len(li) else np.inf), t + H)
        if not len(li) and t_arr == np.inf:
            raise RuntimeError(f"{type(method).__name__} left {len(q)} jobs waiting on an empty cluster")
        dt = t_next - t
        gj = p.conf_g[conf[li]]
        used = np.bincount(node[li], weights=gj, minlength=N)
        vm = node_types(p, node, conf)
        rate = np.where(used > 0, p.node_rate[np.maximum(vm, 0), used.astype(np.int64)], 0.0)
        node_cost = rate * dt / 3600.0
        share = node_cost[node[li]] * gj / used[node[li]]
        jr = q[li]
        exec_cost[jr] += share
        start[jr] = np.where(np.isnan(start[jr]), t, start[jr])
        ends = rem - dt <= 1e-9 * np.maximum(1.0, rem)
        done[jr] = np.where(ends, 1.0, done[jr] + dt / p.T[jr, conf[li]])
        completion[jr[ends]] = t + rem[ends]
        finished[jr[ends]] = True
        cur_node[jr[ends]] = cur_conf[jr[ends]] = -1
        bar.update(int(ends.sum()))
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
        t, it = t_next, it + 1
    bar.close()
    return _result(p, logs, slots, solve, completion, start, exec_cost, n_pre, n_mig, method)


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


def _result(p, logs, slots, solve, completion, start, exec_cost, n_pre, n_mig, method) -> SimResult:
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
    summary = {
        "method": type(method).__name__, "n_jobs": p.n_jobs, "n_nodes": p.n_nodes,
        "exec_cost": float(exec_cost.sum()), "tardiness_cost": float(jobs.tardiness_cost.sum()),
        "total_cost": float(exec_cost.sum() + jobs.tardiness_cost.sum()),
        "makespan_s": float(np.nanmax(completion) - p.submit.min()),
        "late_jobs": int((tard > 0).sum()), "rescheduling_points": len(s),
        "solve_s_total": float(s.sum()), "solve_s_median": float(np.median(s)),
        "solve_s_max": float(s.max()),
    }
    return SimResult(log=log, jobs=jobs, slots=slot_df, summary=summary)
