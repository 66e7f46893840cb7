"""Start-up time of the command line: ``gpuscope --help`` and a few ``gpuscope <cmd> --help``.

Goal: ``gpuscope --help`` in <= 0.5 s on 2 cores. Each command runs ``--runs`` times in a fresh
interpreter (``python -m gpuscope ...``); the script prints the median wall time, the median
CPU time of the child (user + system: on a loaded, shared machine the better estimate of an
idle one) and both as a ratio to ``python -c pass``, the floor any Python command pays.

    .venv/bin/python benchmarks/cli_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

GOAL_S = 0.5
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("--help",), ("estimate", "--help"), ("train", "--help"), ("allocate", "--help"),
    ("schedule", "--help"), ("profile", "run", "--help"), ("jobs", "check", "--help"),
)


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall and child CPU seconds of one run of ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=os.environ.copy())
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def median_of(argv: list[str], runs: int) -> tuple[float, float]:
    timed(argv)  # warm the file cache
    walls, cpus = zip(*(timed(argv) for _ in range(runs)))
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    base_wall, base_cpu = median_of([sys.executable, "-c", "pass"], a.runs)
    print(f"python -c pass: wall {base_wall:.3f} s, cpu {base_cpu:.3f} s "
          f"(median of {a.runs}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"{'command':28s} {'wall s':>7s} {'cpu s':>7s} {'wall x':>7s} {'cpu x':>7s}")
    for cmd in COMMANDS:
        wall, cpu = median_of([sys.executable, "-m", "gpuscope", *cmd], a.runs)
        print(f"{'gpuscope ' + ' '.join(cmd):28s} {wall:7.3f} {cpu:7.3f} "
              f"{wall / base_wall:7.1f} {cpu / base_cpu:7.1f}")
        if cmd == ("--help",):
            help_wall, help_cpu = wall, cpu
    load = os.getloadavg()[0]
    print(f"goal: gpuscope --help <= {GOAL_S} s on 2 cores: wall {help_wall:.3f} s "
          f"({'met' if help_wall <= GOAL_S else 'missed'} at load {load:.1f}), cpu "
          f"{help_cpu:.3f} s ({'met' if help_cpu <= GOAL_S else 'missed'}; the wall time of "
          "an idle machine)")


if __name__ == "__main__":
    main()
