"""Scheduler speed against its goals (seed 002 §4.4, seed 000 §V-B).

Goals: one rescheduling step with N = 100 nodes and 450 concurrent jobs (seed 002's peak
for the *high* rate) — Path Relinking <= 1 s median, Randomized Greedy <= 0.1 s, on 2 cores;
a full 1,000-job online simulation (N = 100, exponential arrivals) with PR <= 60 s.

Prints wall time and process CPU time. numpy runs these loops on one thread, so on a shared,
loaded machine CPU time is the better estimate of the time on an idle 2-core machine.

    .venv/bin/python benchmarks/schedulers_speed.py            # step + full simulation
    .venv/bin/python benchmarks/schedulers_speed.py --skip-sim # step only
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from gpuscope.schedulers import StepState, make_method, simulate
from gpuscope.schedulers.instances import generate


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def scaling(source: str) -> None:
    """Median CPU time of one step vs. jobs in the system (N = 100, high-rate instance)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes, rows = [50, 150, 250, 350, 450], []
    for k in sizes:
        p = generate(source, 100, seed=0, arrivals="high", n_jobs=k)
        st = StepState(t=float(p.submit.max()), jobs=np.arange(k), R=p.T.copy(),
                       cur_node=np.full(k, -1), cur_conf=np.full(k, -1))
        for name in ("greedy", "rg", "pr"):
            m = make_method(name, seed=1)
            cs = [timed(lambda m=m, p=p, st=st: m.step(p, st))[2] for _ in range(3)]
            rows.append((k, name, float(np.median(cs))))
    print("jobs  " + "  ".join(f"{n:>8s}" for n in ("greedy", "rg", "pr")) + "   (median CPU s, N = 100)")
    for k in sizes:
        print(f"{k:4d}  " + "  ".join(f"{c:8.4f}" for kk, _, c in rows if kk == k))
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for name in ("greedy", "rg", "pr"):
        ax.plot(sizes, [c for kk, n, c in rows if n == name], marker="o", label=name)
    ax.axhline(0.1, ls=":", c="gray")
    ax.axhline(1.0, ls="--", c="gray")
    ax.set(xlabel="jobs in the system", ylabel="CPU s per rescheduling step", yscale="log",
           title=f"one step, N = 100 ({source}, emulated)")
    ax.legend()
    fig.tight_layout()
    fig.savefig("results/figures/schedulers_step_time.png", dpi=120)
    print("figure: results/figures/schedulers_step_time.png")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--skip-sim", action="store_true")
    ap.add_argument("--source", default="alexnet")
    ap.add_argument("--scaling", action="store_true",
                    help="also time one step for 50..450 jobs on N = 100 and plot it")
    args = ap.parse_args()
    if args.scaling:
        scaling(args.source)

    p = generate(args.source, 100, seed=0, arrivals="high", n_jobs=450)
    k = p.n_jobs
    # 450 jobs in the system at once: all submitted, none started (worst case: everything queued)
    st = StepState(t=float(p.submit.max()), jobs=np.arange(k), R=p.T.copy(),
                   cur_node=np.full(k, -1), cur_conf=np.full(k, -1))
    goals = {"greedy": None, "rg": 0.1, "pr": 1.0}
    print(f"one rescheduling step, N = {p.n_nodes} nodes, {k} jobs, MaxIt_RG = {p.params.max_it_rg}, "
          f"sigma = {p.params.sigma}, MaxIt_PR = N ({args.source})")
    print(f"{'method':8s} {'median wall s':>14s} {'median CPU s':>13s} {'goal s':>7s}  met (CPU)")
    for name, goal in goals.items():
        m = make_method(name, seed=1)
        ws, cs = [], []
        for _ in range(args.reps):
            _, w, c = timed(lambda m=m: m.step(p, st))
            ws.append(w)
            cs.append(c)
        mw, mc = float(np.median(ws)), float(np.median(cs))
        g = "-" if goal is None else f"{goal:.2f}"
        met = "" if goal is None else ("yes" if mc <= goal else f"no ({mc / goal:.1f}x)")
        print(f"{name:8s} {mw:14.3f} {mc:13.3f} {g:>7s}  {met}")
    if args.skip_sim:
        return
    q = generate(args.source, 100, seed=0, arrivals="exponential")
    res, w, c = timed(lambda: simulate(q, make_method("pr", seed=1), progress=True))
    s = res.summary
    print(f"full simulation: {q.n_jobs} jobs, N = 100, exponential arrivals, PR: wall {w:.1f} s, "
          f"CPU {c:.1f} s (goal 60 s: {'met' if c <= 60 else f'missed, {c / 60:.1f}x'}); "
          f"{s['rescheduling_points']} rescheduling points, median step {s['solve_s_median']:.3f} s wall, "
          f"max {s['solve_s_max']:.3f} s; total cost {s['total_cost']:.0f}")


if __name__ == "__main__":
    main()
