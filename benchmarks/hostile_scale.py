"""A 10**6-row queue through ``gpuscope jobs check`` and ``gpuscope allocate``: wall time and
peak memory of each, against the targets (check <= 10 s, allocate = predict + place +
simulate <= 60 s, memory < 1 GB, on 2 cores).

The queue is seed 001's Table 3 and Table 4 jobs (560 distinct jobs at 100 steps per epoch)
repeated to ``--rows`` rows with increasing arrival times and unique ids, written as CSV;
each command runs in its own process (``python -m gpuscope ...``), timed from outside, its
peak resident memory read from ``getrusage`` of the child. ``--cores 2`` pins the children
to two cores (``taskset``) on a larger machine. Usage:

    python benchmarks/hostile_scale.py [--rows 1000000] [--cluster v100:8,a100:8] [--cores 2]
        [--policy exec-time,ect]

Each policy of ``--policy`` is its own ``allocate`` command (``ect`` is allocate's default).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHECK_TARGET_S, ALLOCATE_TARGET_S, MEMORY_TARGET_MB = 10.0, 60.0, 1024.0


def write_queue(path: Path, rows: int) -> int:
    """The benchmark queue (CSV) at ``path``; returns its size in bytes."""
    from gpuscope.jobs.spec import table_jobs

    jobs = table_jobs(3, steps_per_epoch=100) + table_jobs(4, steps_per_epoch=100)
    with path.open("w") as fh:
        fh.write("job_id,model,dataset,optimizer,batch_size,epochs,steps_per_epoch,"
                 "arrival_s\n")
        for i in range(rows):
            j = jobs[i % len(jobs)]
            fh.write(f"q{i},{j.model},{j.dataset},{j.optimizer},{j.batch_size},{j.epochs},"
                     f"{j.steps_per_epoch},{i * 0.5:.1f}\n")
    return path.stat().st_size


def run(argv: list[str], cores: int | None, timeout_s: float, max_mb: float | None = None
        ) -> tuple[int, float, float, float, str]:
    """(exit code, wall s, CPU s, peak RSS MB of the child and its children, last stderr
    line) of ``gpuscope argv``; the memory is sampled every 50 ms. CPU seconds (user +
    system) tell the command's own cost apart from waiting for a shared machine's cores.
    ``max_mb``: the child is killed once its memory passes this (a shared machine's
    safety net; the peak then reads as at least ``max_mb``)."""
    import resource

    import psutil

    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)

    cmd = [sys.executable, "-m", "gpuscope", *argv]
    if cores and shutil.which("taskset"):
        cmd = ["taskset", "-c", ",".join(str(c) for c in range(cores)), *cmd]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err_fh:
        p = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err_fh)
        peak, rc = 0, None
        while rc is None:
            try:
                proc = psutil.Process(p.pid)
                rss = proc.memory_info().rss + sum(c.memory_info().rss
                                                   for c in proc.children(recursive=True))
                peak = max(peak, rss)
            except psutil.Error:
                pass
            if time.perf_counter() - t0 > timeout_s or (max_mb and peak > max_mb * 2**20):
                p.kill()
            time.sleep(0.05)
            rc = p.poll()
        wall = time.perf_counter() - t0
        err_fh.seek(0)
        lines = err_fh.read().strip().splitlines()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    err = (f"killed after {timeout_s:g} s" if wall > timeout_s
           else f"killed above {max_mb:g} MB" if max_mb and peak > max_mb * 2**20
           else (lines or [""])[-1])
    return rc, wall, cpu, peak / 2**20, err


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--cluster", default="v100:8,a100:8")
    ap.add_argument("--policy", default="exec-time,ect",
                    help="comma list; each policy is timed as its own allocate command")
    ap.add_argument("--cores", type=int, default=None, help="pin the commands to N cores")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per command")
    ap.add_argument("--skip-allocate", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpuscope-scale-") as tmp:
        q = Path(tmp) / "queue.csv"
        size = write_queue(q, a.rows)
        print(f"queue: {a.rows:,} rows, {size / 2**20:.1f} MB ({q.name}); "
              f"{os.cpu_count()} cores here{f', pinned to {a.cores}' if a.cores else ''}")
        rc, wall, cpu, peak, err = run(["jobs", "check", str(q)], a.cores, a.timeout)
        print(f"jobs check: {wall:.1f} s (target <= {CHECK_TARGET_S:g} s; {cpu:.1f} s CPU), peak "
              f"{peak:.0f} MB (target < {MEMORY_TARGET_MB:g} MB), exit {rc}"
              + (f": {err}" if rc else ""))
        for policy in ([] if a.skip_allocate else a.policy.split(",")):
            rc, wall, cpu, peak, err = run(["allocate", "--jobs", str(q), "--cluster", a.cluster,
                                            "--policy", policy, "-o",
                                            str(Path(tmp) / f"out-{policy}")],
                                           a.cores, a.timeout)
            print(f"allocate ({policy} on {a.cluster}): {wall:.1f} s (target <= "
                  f"{ALLOCATE_TARGET_S:g} s; {cpu:.1f} s CPU), peak {peak:.0f} MB (target < "
                  f"{MEMORY_TARGET_MB:g} MB), exit {rc}" + (f": {err}" if rc else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
