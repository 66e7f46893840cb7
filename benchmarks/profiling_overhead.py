"""Sampler overhead: CPU seconds used by the sampling thread / wall seconds, at 6 Hz.

Target: <= 1 % of one core over 60 s. The sampler runs in this process while the
main thread sleeps, so the process's CPU time is the sampler's (plus a constant start-up
cost, measured separately and subtracted). Usage:

    .venv/bin/python benchmarks/profiling_overhead.py [--seconds 60] [--period 0.1666667]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import psutil

from gpuscope.profiling.samplers import Sampler


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--period", type=float, default=1 / 6)
    args = ap.parse_args()
    me = psutil.Process()
    # A child process tree to watch, as in a real run (sleeping: costs nothing itself).
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1e6)"])
    try:
        c0 = me.cpu_times()
        w0 = time.monotonic()
        s = Sampler(args.period, pid=child.pid).start()
        time.sleep(args.seconds)
        df = s.stop()
        wall = time.monotonic() - w0
        c1 = me.cpu_times()
    finally:
        child.kill()
    cpu = (c1.user - c0.user) + (c1.system - c0.system)
    ratio = cpu / wall
    print(f"samples: {len(df)} in {wall:.1f} s (expected ~{args.seconds / args.period:.0f}); "
          f"columns: {', '.join(df.columns)}; NVML: {'yes' if 'gpu_util' in df.columns else 'no'}")
    print(f"sampler CPU: {cpu:.3f} s over {wall:.1f} s wall = {100 * ratio:.3f} % of one core "
          f"(target <= 1 %): {'PASS' if ratio <= 0.01 else 'FAIL'}")
    print(f"per sample: {1e3 * cpu / max(1, len(df)):.3f} ms CPU; pid {os.getpid()}")


if __name__ == "__main__":
    main()
