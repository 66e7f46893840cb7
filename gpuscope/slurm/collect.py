"""Read back what Slurm did with a submitted plan and compare it with the plan.

Sources, best first: each job's own log record (``gpuscope-slurm start=… node=… gpus=…`` and
``end=… rc=…``, written by the batch script: sub-second times and the GPU indices Slurm gave
it, ``SLURM_JOB_GPUS``), the job completion log of a local cluster (``jobcomp/filetxt``: state,
node, start and end to the second), ``sacct`` on a cluster with accounting, and ``squeue`` for
jobs still pending or running. The result is the allocator's per-job table (``job_id, device,
gpu, arrival_s, start_s, finish_s, jct_s, status``) in the plan's seconds — wall seconds since
the submission's time origin ÷ its time scale — plus ``node``, ``gpu_ids``, ``slurm_job_id``,
``slurm_state``.

Plan vs actual: average JCT and makespan of both, and placement agreement (jobs that ran on
their planned node). :func:`gpu_overcommit` checks from the records that no node ever held more
GPUs than it has, and that no GPU index was held by two jobs at once.
"""

from __future__ import annotations

import math
import re
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pandas as pd

from gpuscope.core.errors import InputError
from gpuscope.core.io import (
    check_keys,
    read_csv,
    read_json,
    read_text,
    require_columns,
    write_json,
    write_table,
)
from gpuscope.slurm.submit import LOG_TAG, SUBMISSION, node_list

_KV = re.compile(r"(\w+)=(\S*)")
#: Slurm states that are final.
DONE = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
        "BOOT_FAIL", "DEADLINE"}
STATUS = {"COMPLETED": "ok", "OUT_OF_MEMORY": "oom", "TIMEOUT": "timeout",
          "CANCELLED": "cancelled"}


@dataclass
class Comparison:
    """Plan vs actual over the jobs that finished."""

    n_planned: int
    n_finished: int
    avg_jct_plan_s: float
    avg_jct_actual_s: float
    makespan_plan_s: float
    makespan_actual_s: float
    placement_agree: int
    time_scale: float

    def lines(self) -> list[str]:
        def ratio(a: float, b: float) -> str:
            return f"{a / b:.3f}" if b > 0 else "n/a"

        return [
            f"jobs: {self.n_finished} of {self.n_planned} finished",
            f"average JCT (plan s): plan {self.avg_jct_plan_s:,.1f}, actual "
            f"{self.avg_jct_actual_s:,.1f} (actual / plan {ratio(self.avg_jct_actual_s, self.avg_jct_plan_s)})",
            f"makespan (plan s): plan {self.makespan_plan_s:,.1f}, actual "
            f"{self.makespan_actual_s:,.1f} (actual / plan {ratio(self.makespan_actual_s, self.makespan_plan_s)})",
            f"placement agreement: {self.placement_agree}/{self.n_finished} jobs on their "
            "planned node",
            f"time scale: 1 plan s = {self.time_scale:.4g} wall s (Slurm's clock: 1 s = "
            f"{1 / self.time_scale:,.1f} plan s)",
        ]


def _epoch(text: str) -> float:
    if not text or text in ("Unknown", "None", "N/A"):
        return float("nan")
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").timestamp()


def read_jobcomp(path: str | Path) -> dict[str, dict[str, str]]:
    """``jobcomp/filetxt`` lines by JobId (the last line of a job wins)."""
    out: dict[str, dict[str, str]] = {}
    p = Path(path)
    if not p.is_file():
        return out
    for line in read_text(p, "Slurm job-completion log", lenient=True).splitlines():
        kv = dict(_KV.findall(line))
        if "JobId" in kv:
            out[kv["JobId"]] = kv
    return out


def read_sacct(ids: list[str], env: Mapping[str, str] | None) -> dict[str, dict[str, str]]:
    """``sacct`` rows by JobID (empty when accounting is off or sacct is missing)."""
    if not ids:
        return {}
    try:
        r = subprocess.run(["sacct", "-n", "-P", "-X", "-j", ",".join(ids), "-o",
                            "JobID,State,Start,End,NodeList,ExitCode"], env=dict(env or {}) or None,
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return {}
    out = {}
    for line in r.stdout.splitlines() if r.returncode == 0 else []:
        f = line.split("|")
        if len(f) >= 6:
            out[f[0]] = {"JobState": f[1].split()[0], "StartTime": f[2], "EndTime": f[3],
                         "NodeList": f[4], "ExitCode": f[5]}
    return out


def read_squeue(ids: list[str], env: Mapping[str, str] | None) -> dict[str, str]:
    """State of the jobs Slurm still holds in memory, by job id."""
    if not ids:
        return {}
    try:
        r = subprocess.run(["squeue", "-h", "-t", "all", "-j", ",".join(ids), "-o", "%i|%T"],
                           env=dict(env) if env else None, capture_output=True, text=True,
                           timeout=30)
    except (OSError, subprocess.SubprocessError):
        return {}
    return dict(line.split("|", 1) for line in r.stdout.splitlines() if "|" in line)


def read_log(path: Path) -> dict[str, str]:
    """The job's own start/end record (empty if the log is not there)."""
    rec: dict[str, str] = {}
    try:
        text = read_text(path, "job log", lenient=True)
    except InputError:
        return rec
    for line in text.splitlines():
        if line.startswith(LOG_TAG + " "):
            rec.update(_KV.findall(line))
    return rec


def load_submission(out: str | Path) -> tuple[dict, pd.DataFrame]:
    d = Path(out)
    p = d / SUBMISSION
    if not p.is_file():
        raise InputError(f"no {SUBMISSION} in {d}: submit a plan there first "
                         "(gpuscope slurm submit / allocate --submit slurm)")
    meta = read_json(p, "submission record", kind=dict)
    check_keys(meta, {"record": str, "t0_epoch": float, "time_scale": float, "plan": str},
               f"submission record {p}", error=InputError)
    if Path(meta["record"]).name != meta["record"]:
        raise InputError(f"submission record {p}: record must name a file in {d}")
    sub = read_csv(d / meta["record"], "submission table",
                   dtype={"slurm_job_id": str, "job_id": str})
    require_columns(sub, ("slurm_job_id", "job_id", "node"), d / meta["record"],
                    "submission table")
    return meta, sub


def actual_table(meta: Mapping, sub: pd.DataFrame, out: Path,
                 env: Mapping[str, str] | None) -> pd.DataFrame:
    """Per-job actual table (see module docstring) from every source available."""
    ids = sub["slurm_job_id"].astype(str).tolist()
    comp = read_jobcomp(meta["jobcomp"]) if meta.get("jobcomp") else {}
    if not comp or any(i not in comp for i in ids):
        comp = {**read_sacct([i for i in ids if i not in comp], env), **comp}
    queue = read_squeue([i for i in ids if i not in comp], env)
    t0, scale = float(meta["t0_epoch"]), float(meta["time_scale"])
    rows = []
    for r in sub.to_dict("records"):
        sid = str(r["slurm_job_id"])
        c = comp.get(sid, {})
        log = read_log(out / "slurm" / "logs" / f"{r['job_id']}-{sid}.out")
        state = c.get("JobState") or queue.get(sid, "UNKNOWN")
        start = float(log["start"]) if "start" in log else _epoch(c.get("StartTime", ""))
        end = float(log["end"]) if "end" in log and state in DONE else (
            _epoch(c.get("EndTime", "")) if state in DONE else float("nan"))
        hosts = expand_hostlist(log.get("nodes") or c.get("NodeList") or log.get("node", ""),
                                env)
        planned = node_list(r["node"])
        node = ";".join(planned if set(hosts) == set(planned) else hosts)
        status = STATUS.get(state, "error" if state in DONE else state.lower())
        if state == "COMPLETED" and log.get("rc", "0") != "0":
            status = "oom" if log["rc"] == "3" else "error"
        arrival = float(r.get("arrival_s", 0.0))
        s = (start - t0) / scale if math.isfinite(start) else float("nan")
        f = (end - t0) / scale if math.isfinite(end) else float("nan")
        rows.append({"job_id": r["job_id"], "device": r["gpu_type"], "gpu": _first(log),
                     "arrival_s": arrival, "start_s": s,
                     "finish_s": f, "jct_s": f - arrival, "status": status, "node": node,
                     "gpu_ids": log.get("gpus", ""), "gpus": int(r["gpus"]),
                     "slurm_job_id": sid, "slurm_state": state, "start_epoch": start,
                     "end_epoch": end})
    return pd.DataFrame(rows)


def expand_hostlist(hostlist: str, env: Mapping[str, str] | None = None) -> list[str]:
    """Node names of a Slurm hostlist (``a100-[1-2],v100-1``): ``scontrol show hostnames``
    when it is compressed, else split at commas."""
    if not hostlist or hostlist in ("(null)", "None"):
        return []
    if "[" not in hostlist:
        return [h for h in hostlist.split(",") if h]
    try:
        r = subprocess.run(["scontrol", "show", "hostnames", hostlist],
                           env=dict(env) if env else None, capture_output=True, text=True,
                           timeout=30)
    except (OSError, subprocess.SubprocessError):  # no scontrol here: expand it ourselves
        return _expand_brackets(hostlist)
    return r.stdout.split() if r.returncode == 0 else _expand_brackets(hostlist)


_HOSTS = re.compile(r"([^,\[]+)(?:\[([^\]]*)\])?([^,]*)")


def _expand_brackets(hostlist: str) -> list[str]:
    """``a100-[1-2,4],v100-1`` -> ``a100-1 a100-2 a100-4 v100-1`` (one bracket per name, the
    common form; zero padding kept: ``n[08-10]`` -> ``n08 n09 n10``)."""
    out: list[str] = []
    for m in _HOSTS.finditer(hostlist):
        pre, ranges, post = m.group(1).lstrip(","), m.group(2), m.group(3)
        if ranges is None:
            out.append(pre + post)
            continue
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            if not lo.isdigit() or (hi and not hi.isdigit()):
                return [hostlist]
            out += [f"{pre}{i:0{len(lo)}d}{post}" for i in range(int(lo), int(hi or lo) + 1)]
    return out


def _first(log: Mapping[str, str]) -> float:
    g = log.get("gpus", "")
    return float(g.split(",")[0]) if g and g.split(",")[0].isdigit() else float("nan")


def compare(sub: pd.DataFrame, act: pd.DataFrame, scale: float) -> Comparison:
    done = act["finish_s"].notna().to_numpy()
    plan = sub.set_index("job_id").loc[act["job_id"]]
    pj = (plan["finish_s"] - plan["arrival_s"]).to_numpy()[done]
    return Comparison(
        n_planned=len(sub), n_finished=int(done.sum()),
        avg_jct_plan_s=float(pj.mean()) if done.any() else float("nan"),
        avg_jct_actual_s=float(act["jct_s"][done].mean()) if done.any() else float("nan"),
        makespan_plan_s=float(sub["finish_s"].max()),
        makespan_actual_s=float(act["finish_s"][done].max()) if done.any() else float("nan"),
        placement_agree=int(sum(d and set(node_list(p)) == set(node_list(a)) for d, p, a in
                                zip(done, plan["node"], act["node"]))),
        time_scale=scale)


def gpu_overcommit(act: pd.DataFrame, node_gpus: Mapping[str, int]) -> list[str]:
    """Violations per the records: a node holding more GPUs than it has at some instant, or a
    GPU index held by two jobs at once. Intervals are half-open [start, end)."""
    bad: list[str] = []
    ran = act[act["start_epoch"].notna() & act["end_epoch"].notna()].to_dict("records")
    per_node: dict[str, list[dict]] = {}
    for r in ran:  # a job over k nodes holds gpus / k on each
        nodes = node_list(r["node"])
        for n in nodes:
            per_node.setdefault(n, []).append(
                {**r, "gpus": int(r["gpus"]) // len(nodes),
                 "gpu_ids": r["gpu_ids"] if len(nodes) == 1 else ""})
    for node, recs in per_node.items():
        g = pd.DataFrame(recs)
        ev = sorted([(s, +int(n)) for s, n in zip(g["start_epoch"], g["gpus"])]
                    + [(e, -int(n)) for e, n in zip(g["end_epoch"], g["gpus"])],
                    key=lambda x: (x[0], x[1]))
        use = peak = 0
        for _, d in ev:
            use += d
            peak = max(peak, use)
        if peak > node_gpus.get(str(node), 0):
            bad.append(f"{node}: {peak} GPUs in use at once, has {node_gpus.get(str(node), 0)}")
        held: dict[str, list[tuple[float, float, str]]] = {}
        for r in g.to_dict("records"):
            for i in (r["gpu_ids"] if isinstance(r["gpu_ids"], str) else "").split(","):
                if i.strip():
                    held.setdefault(i.strip(), []).append(
                        (r["start_epoch"], r["end_epoch"], r["job_id"]))
        for i, iv in held.items():
            iv.sort()
            for a, b in zip(iv, iv[1:]):
                if b[0] < a[1]:
                    bad.append(f"{node}: GPU {i} held by {a[2]} and {b[2]} at once")
    return bad


def wait_done(ids: list[str], poll: Callable[[], set[str]], timeout_s: float,
              progress: bool = True) -> bool:
    """Poll until every id is finished (``poll`` returns the finished ids); False on timeout."""
    from tqdm import tqdm

    end = time.monotonic() + timeout_s
    with tqdm(total=len(ids), desc="slurm jobs", unit="job", disable=not progress) as bar:
        while True:
            n = len(poll() & set(ids))
            bar.update(n - bar.n)
            if n >= len(ids):
                return True
            if time.monotonic() > end:
                return False
            time.sleep(0.5)


def finished_ids(meta: Mapping, ids: list[str], env: Mapping[str, str] | None) -> set[str]:
    comp = read_jobcomp(meta["jobcomp"]) if meta.get("jobcomp") else {}
    done = {i for i in ids if comp.get(i, {}).get("JobState") in DONE}
    rest = [i for i in ids if i not in done]
    if rest:
        q = read_squeue(rest, env)
        done |= {i for i in rest if q.get(i) in DONE}
        if not meta.get("jobcomp"):
            done |= {i for i, v in read_sacct([i for i in rest if i not in done], env).items()
                     if v["JobState"] in DONE}
    return done


def format_table(sub: pd.DataFrame, act: pd.DataFrame) -> str:
    """Per job: planned vs actual node, start, finish and JCT (plan seconds)."""
    plan = sub.set_index("job_id")
    lines = ["| job | slurm id | node plan → actual | start plan / actual | finish plan / actual "
             "| JCT plan / actual | state |", "|---|---|---|---|---|---|---|"]
    for r in act.to_dict("records"):
        p = plan.loc[r["job_id"]]
        mark = "" if set(node_list(p["node"])) == set(node_list(r["node"])) else " ✗"
        lines.append(
            f"| {r['job_id']} | {r['slurm_job_id']} | {p['node']} → {r['node'] or '?'}{mark} "
            f"| {p['start_s']:,.1f} / {r['start_s']:,.1f} | {p['finish_s']:,.1f} / "
            f"{r['finish_s']:,.1f} | {p['finish_s'] - p['arrival_s']:,.1f} / {r['jct_s']:,.1f} "
            f"| {r['slurm_state']} |")
    return "\n".join(lines)


@dataclass
class Collected:
    """What :func:`collect` read and concluded."""

    actual: pd.DataFrame
    comparison: Comparison
    violations: list[str]
    complete: bool

    def report(self, sub: pd.DataFrame) -> str:
        cap = ("GPU capacity per the records: never exceeded" if not self.violations else
               "GPU capacity VIOLATED: " + "; ".join(self.violations))
        note = "" if self.complete else "\n(not every job has finished: times are partial)"
        return (format_table(sub, self.actual) + "\n\n" + "\n".join(self.comparison.lines())
                + "\n" + cap + note)


def collect(out: str | Path, env: Mapping[str, str] | None = None, wait: bool = True,
            timeout_s: float = 600.0, progress: bool = True,
            node_gpus: Mapping[str, int] | None = None) -> tuple[pd.DataFrame, Collected]:
    """Read the submission in ``out`` back from Slurm (waiting for the jobs unless ``wait`` is
    False), write ``slurm_actual.csv`` and ``slurm_compare.json`` there; return the submission
    table and the result."""
    out = Path(out)
    meta, sub = load_submission(out)
    if env is None:
        import os

        env = dict(os.environ)
        if meta.get("slurm_conf"):
            env["SLURM_CONF"] = meta["slurm_conf"]
    ids = sub["slurm_job_id"].astype(str).tolist()
    complete = (wait_done(ids, lambda: finished_ids(meta, ids, env), timeout_s, progress)
                if wait else finished_ids(meta, ids, env) >= set(ids))
    act = actual_table(meta, sub, out, env)
    cmp = compare(sub, act, float(meta["time_scale"]))
    if node_gpus is None and meta.get("cluster_file") and Path(meta["cluster_file"]).is_file():
        from gpuscope.cluster.config import load_cluster

        node_gpus = {s.name: s.gpus for s in load_cluster(meta["cluster_file"]).servers}
    viol = gpu_overcommit(act, node_gpus) if node_gpus is not None else []
    res = Collected(act, cmp, viol, complete)
    write_table(act, out / "slurm_actual.csv", what="collected table")
    write_json(out / "slurm_compare.json", {**{k: v for k, v in vars(cmp).items()},
                                            "complete": complete, "gpu_violations": viol,
                                            "plan": meta["plan"]}, what="comparison")
    return sub, res
