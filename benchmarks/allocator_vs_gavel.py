"""gpuscope's allocator against Gavel (Narayanan et al., OSDI 2020) on Gavel's own workloads.

Usage: ``python benchmarks/allocator_vs_gavel.py [--gavel-dir ../shared/data/gavel]``

Truth: Gavel's measured single-GPU throughputs (``simulation_throughputs.json``, MIT licence,
read by path from ``--gavel-dir``, default ``$GPUSCOPE_DATA/gavel`` or ``../shared/data/gavel``);
a job's time on a GPU type = its total steps / that type's steps per second.

* static: 100 single-GPU jobs drawn as Gavel's generator draws them
  (:func:`gpuscope.allocator.trace.generate_jobs`: uniform job type, Philly run times on the
  V100), all queued at t = 0, on 4 × K80 + 4 × P100 + 4 × V100, seeds 0, 1, 2;
* online: the first 200 single-GPU jobs of Gavel's Philly-derived trace 6c71a0
  (``msr-traces-seed0``), with their arrival times, on 12 GPUs of each type.

gpuscope's policies are scored on the measured truth twice: planning with the measured times
(as Gavel's simulator plans with its oracle throughputs), and planning with gpuscope's own
estimates (the emulator's step time of each Gavel job type on each GPU, traced from
``gpuscope.workloads.models.gavel``; its calibration used the ResNet families' Gavel points).

Gavel's figures are reference numbers (:data:`GAVEL`): its simulator at commit c4fa400 run
outside this project on the same jobs, written as its 10-field trace by
``gpuscope.allocator.trace.write_trace(..., fields=10)``, with
``python scripts/drivers/simulate_scheduler_with_trace.py -t TRACE -p POLICY -c 4:4:4
--throughputs_file simulation_throughputs.json --seed 0`` (static; ``-c 12:12:12`` online),
its default 360 s rounds; average JCT and "Total duration" (makespan) as it prints them.
Planning on the emulator's estimates is also scored on seeds 3-11 (held out: nothing was
chosen on them), with the loss split into device choice and queue order.
The last part times 10,000 jobs × 16 GPU types online (place + simulate) on synthetic times.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpuscope.allocator import ClusterSpec, JobDeviceTable  # noqa: E402
from gpuscope.allocator.allocate import allocate  # noqa: E402
from gpuscope.allocator.online import simulate_online  # noqa: E402
from gpuscope.allocator.policies import makespan_lower_bound, times  # noqa: E402
from gpuscope.allocator.policies.ect import ect_plan  # noqa: E402
from gpuscope.allocator.policies.makespan import _lp  # noqa: E402
from gpuscope.allocator.restart import params_of, restart_seconds  # noqa: E402
from gpuscope.allocator.simulate import simulate  # noqa: E402
from gpuscope.allocator.trace import generate_jobs, read_trace  # noqa: E402
from gpuscope.allocator.truth_table import gavel_throughputs, truth_rows  # noqa: E402
from gpuscope.core.data import external_dir  # noqa: E402

H = 3600.0
#: Gavel (commit c4fa40097339e9608ab71fd64c8bdea96a5e4a4c) on the same jobs: policy ->
#: per seed (avg JCT s, makespan s); command in the module docstring.
GAVEL_STATIC: dict[str, list[tuple[float, float]]] = {
    "allox": [(194267.336, 1249487.332), (117170.605, 907740.652), (92300.755, 761673.247)],
    "max_min_fairness_perf": [(266895.594, 1153723.415), (151681.620, 792635.805),
                              (131636.374, 781987.708)],
    "finish_time_fairness_perf": [(267612.659, 1142274.824), (151715.006, 788521.657),
                                  (132249.095, 769991.026)],
    "min_total_duration_perf": [(947916.691, 987916.680), (652161.795, 655972.260),
                                (312183.071, 552043.313)],
}
#: Gavel on the online slice (-c 12:12:12): policy -> (avg JCT s, makespan s).
GAVEL_ONLINE: dict[str, tuple[float, float]] = {
    "allox": (1004938.384, 7019718.670),
    "max_min_fairness_perf": (1017631.950, 6485725.968),
}
TARGET_SPEED_S = 5.0


def _tab(rows: pd.DataFrame, ids: list[str], c: ClusterSpec, source: str) -> JobDeviceTable:
    return JobDeviceTable.from_frame(rows, ids, c.devices, source=source, fits_column="status")


def own_estimates(th: pd.DataFrame) -> pd.DataFrame:
    """``job_type, device, steps_per_s, status``: the emulator's estimate of each Gavel job
    type alone on one GPU (``gpuscope.emulator``), as a truth-table frame."""
    from gpuscope.core.data import parse_job_type
    from gpuscope.emulator.calibration.fidelity import gavel_points
    from gpuscope.emulator.params import default_params
    from gpuscope.emulator.perf import GraphCost, estimate
    from gpuscope.graphs import GraphCache
    from gpuscope.jobs.spec import JobSpec

    cache = GraphCache()
    fam = th["job_type"].map(lambda s: parse_job_type(s))
    g = th.assign(model=[f for f, _ in fam], batch_size=[b for _, b in fam], n_gpus=1)

    def r50(b: int) -> GraphCost:
        return GraphCost.from_graph(cache.get_or_export(
            JobSpec("resnet50", "imagenet", "sgd", b, 1)), b)

    single, _ = gavel_points(g, r50)
    params = default_params()
    rows = []
    for p in single:
        fam_b = p.label.rsplit("-b", 1)
        jt = [j for j, (f, b) in zip(g["job_type"], fam) if f == fam_b[0] and (b or 1) == int(fam_b[1])]
        for j in jt:
            rows.append((j, p.device.name, 1.0 / estimate(p.job, p.cost, p.device, params).iter_s))
    est = pd.DataFrame(rows, columns=["job_type", "device", "steps_per_s"])
    return est.drop_duplicates(["job_type", "device"]).assign(status="ok", provenance="emulated")


def tables(tr: pd.DataFrame, c: ClusterSpec, th: pd.DataFrame, est: pd.DataFrame
           ) -> tuple[JobDeviceTable, JobDeviceTable]:
    ids = tr["job_id"].tolist()
    args = (ids, tr["job_type"].tolist(), tr["total_steps"].to_numpy(), c.devices, "gavel")
    return _tab(truth_rows(th, *args), ids, c, "measured"), _tab(truth_rows(est, *args), ids, c,
                                                                  "emulated")


def static(th: pd.DataFrame, est: pd.DataFrame) -> tuple[float, float, float]:
    c = ClusterSpec.parse("k80:4,p100:4,v100:4")
    v100 = th[th["device"] == "v100"].set_index("job_type")["steps_per_s"].to_dict()
    print("## static: 100 jobs at t = 0 on k80:4,p100:4,v100:4 (truth: Gavel's measured "
          "throughputs)\n")
    print("| seed | gpuscope ect SJF | own estimates | Gavel best (policy) | ratio | "
          "makespan policy | non-preemptive LP bound | gap | preemptive LP | Gavel min-total-"
          "duration |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    ratios, gaps, owns = [], [], []
    for s in range(3):
        tr = generate_jobs(100, v100, seed=s)
        truth, mine = tables(tr, c, th, est)
        arr = tr["arrival_s"].to_numpy()
        jct = allocate("ect", "sjf", c, arr, pred=truth, truth=truth).metrics
        own = allocate("ect", "sjf", c, arr, pred=mine, truth=truth).metrics
        mk = allocate("makespan", "plan", c, arr, pred=truth, truth=truth).metrics
        lb = makespan_lower_bound(times(truth), c.counts)
        pre = _lp(times(truth), np.asarray(c.counts, float), None)
        best = min(GAVEL_STATIC, key=lambda p: GAVEL_STATIC[p][s][0])
        g_jct = GAVEL_STATIC[best][s][0]
        ratios.append(jct.avg_jct_s / g_jct)
        gaps.append(mk.makespan_s / lb - 1)
        owns.append(own.avg_jct_s / jct.avg_jct_s - 1)
        mtd = GAVEL_STATIC["min_total_duration_perf"][s][1]
        print(f"| {s} | {jct.avg_jct_s / H:.1f} h | {own.avg_jct_s / H:.1f} h | {g_jct / H:.1f} "
              f"h ({best}) | x{ratios[-1]:.3f} | {mk.makespan_s / H:.1f} h | {lb / H:.1f} h | "
              f"{100 * gaps[-1]:.1f} % | {(pre[0] if pre else np.nan) / H:.1f} h | "
              f"{mtd / H:.1f} h |")
    print(f"\nstatic avg JCT / Gavel's best: {', '.join(f'{r:.3f}' for r in ratios)} (target "
          f"<= 1 on every seed: {'met' if max(ratios) <= 1 else 'MISSED'}); makespan gap to the "
          f"LP bound max {100 * max(gaps):.1f} % (target <= 5 %: "
          f"{'met' if max(gaps) <= 0.05 else 'MISSED'})\n")
    return float(np.mean(ratios)), float(max(gaps)), float(np.mean(owns))


def _jct(c: ClusterSpec, dev: np.ndarray, key_t: np.ndarray, t: np.ndarray) -> float:
    """Average JCT of a queue all at t = 0 placed on ``dev``, each GPU shortest ``key_t``
    first, running for ``t``."""
    rows, arr = np.arange(len(dev)), np.zeros(len(dev))
    return float(np.mean(simulate(c, dev, arr, t[rows, dev], key_t[rows, dev]).finish))


def own_gap(th: pd.DataFrame, est: pd.DataFrame, seeds: range = range(3, 12)) -> float:
    """Static ect SJF planned on the emulator's estimates against planned on the measured
    throughputs, on seeds the other figures do not use; the loss split into device choice
    (own placement, measured order) and queue order (measured placement, own order); the
    worst-estimated (job type, GPU) pairs."""
    c = ClusterSpec.parse("k80:4,p100:4,v100:4")
    v100 = th[th["device"] == "v100"].set_index("job_type")["steps_per_s"].to_dict()
    gaps, place_only, order_only = [], [], []
    for s in seeds:
        truth, mine = tables(generate_jobs(100, v100, seed=s), c, th, est)
        t, p = times(truth), times(mine)
        zero = np.zeros(len(t))
        d_t, d_p = ect_plan(t, zero, c, "sjf")[0], ect_plan(p, zero, c, "sjf")[0]
        base = _jct(c, d_t, t, t)
        gaps.append(_jct(c, d_p, p, t) / base - 1)
        place_only.append(_jct(c, d_p, t, t) / base - 1)
        order_only.append(_jct(c, d_t, p, t) / base - 1)
    m = th.merge(est, on=["job_type", "device"], suffixes=("", "_est"))
    m["err"] = m["steps_per_s_est"] / m["steps_per_s"]
    worst = m.loc[np.log(m["err"]).abs().sort_values(ascending=False).index[:6]]
    print(f"## own estimates, held-out seeds {seeds.start}-{seeds.stop - 1} (static ect SJF, "
          "measured truth)\n")
    print(f"avg JCT planned on own estimates / planned on measured: "
          f"{', '.join(f'{100 * g:+.1f}' for g in gaps)} % (mean {100 * np.mean(gaps):+.1f} %, "
          f"target within 5 %: {'met' if np.mean(gaps) <= 0.05 else 'MISSED'}); device choice "
          f"alone {100 * np.mean(place_only):+.1f} %, queue order alone "
          f"{100 * np.mean(order_only):+.1f} %")
    print("worst-estimated pairs (estimated / measured steps per second): " + "; ".join(
        f"{r.job_type} on {r.device} x{r.err:.2f}" for r in worst.itertuples()) + "\n")
    return float(np.mean(gaps))


def online(th: pd.DataFrame, est: pd.DataFrame, gavel_dir: Path) -> tuple[float, float]:
    c = ClusterSpec.parse("k80:12,p100:12,v100:12")
    tr = read_trace(gavel_dir / "msr-traces-seed0" / "6c71a0.trace", max_jobs=200)
    truth, mine = tables(tr, c, th, est)
    arr = tr["arrival_s"].to_numpy()
    rs = restart_seconds(params_of(tr["job_type"].tolist()), c)
    print("## online: first 200 single-GPU jobs of trace 6c71a0 on k80:12,p100:12,v100:12 "
          "(truth: Gavel's measured throughputs)\n")
    print("| policy | planned on | avg JCT | makespan | preemptions |")
    print("|---|---|---|---|---|")
    res = {}
    for label, p, o, pre, pred in (
            ("ect, type fixed at arrival (SJF)", "ect", "sjf", False, truth),
            ("ect-online", "ect-online", "fifo", False, truth),
            ("ect-online --preempt", "ect-online", "fifo", True, truth),
            ("ect-online", "ect-online", "fifo", False, mine),
            ("ect-online --preempt", "ect-online", "fifo", True, mine)):
        m = allocate(p, o, c, arr, pred=pred, truth=truth, preempt=pre, restart_s=rs)
        n_pre = int(m.schedule["preemptions"].sum()) if "preemptions" in m.schedule else 0
        res[(label, pred.source)] = m.metrics.avg_jct_s
        print(f"| {label} | {pred.source} | {m.metrics.avg_jct_s / H:.1f} h | "
              f"{m.metrics.makespan_s / H:.1f} h | {n_pre} |")
    for p, (jct, mk) in GAVEL_ONLINE.items():
        print(f"| Gavel {p} | measured (oracle) | {jct / H:.1f} h | {mk / H:.1f} h | rounds |")
    mine_np = res[("ect-online", "measured")]
    mine_p = res[("ect-online --preempt", "measured")]
    if GAVEL_ONLINE:
        g = min(v[0] for v in GAVEL_ONLINE.values())
        use = mine_np if mine_np <= g else min(mine_np, mine_p)
        ratio = use / g
        print(f"\nonline avg JCT / Gavel's best: x{mine_np / g:.3f} without preemption, "
              f"x{mine_p / g:.3f} with (target <= 1: {'met' if ratio <= 1 else 'MISSED'})")
    else:
        ratio = float("nan")
        print("\nonline: no Gavel reference figures recorded (GAVEL_ONLINE is empty)")
    own = res[("ect-online", "emulated")] / mine_np - 1
    print(f"online, own estimates vs measured: {100 * own:+.1f} %\n")
    return ratio, own


def speed(preempt: bool = False) -> float:
    rng = np.random.default_rng(0)
    n, k = 10_000, 16
    c = ClusterSpec.parse(",".join(f"t{i}:4" for i in range(k)))
    speed_d = rng.uniform(1, 6, k)
    work = 3600 * 10 ** rng.uniform(-1, 1, n)
    t = work[:, None] / speed_d[None, :] * rng.lognormal(0, 0.1, (n, k))
    load = 0.9
    gap = float(np.mean(t.min(axis=1))) / (c.n_gpus * load) * 1.5
    arr = np.cumsum(rng.exponential(gap, n))
    actual = t * rng.lognormal(0, 0.1, t.shape)
    print("## speed\n")
    runs = [(False, None)] + ([(True, np.full(t.shape, 30.0))] if preempt else [])
    out = np.nan
    for pre, rs in runs:
        t0, c0 = time.perf_counter(), time.process_time()
        on = simulate_online(c, arr, t, actual, preempt=pre, restart_s=rs)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        assert np.isfinite(on.finish).all()
        what = f"--preempt ({int(on.preemptions.sum())} stops), no target" if pre else (
            f"target {TARGET_SPEED_S:.0f} s on 2 cores: "
            f"{'met' if dt <= TARGET_SPEED_S else 'MISSED'}")
        print(f"10,000 jobs x 16 GPU types x 4 GPUs, online (place + simulate): {dt:.2f} s "
              f"wall, {cpu:.2f} s CPU ({what})")
        out = dt if not pre else out
    print(f"(machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f})\n")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gavel-dir", default=str(external_dir() / "gavel"))
    ap.add_argument("--preempt-speed", action="store_true",
                    help="also time the 10,000-job run with --preempt (slower, no target)")
    ap.add_argument("--speed-only", action="store_true", help="only the speed part")
    args = ap.parse_args()
    if args.speed_only:
        speed(args.preempt_speed)
        return
    gd = Path(args.gavel_dir)
    th = gavel_throughputs(gd / "simulation_throughputs.json")
    est = own_estimates(th)
    s_ratio, gap, s_own = static(th, est)
    held_out = own_gap(th, est)
    o_ratio, o_own = online(th, est, gd)
    speed(args.preempt_speed)
    print(f"allocator vs gavel: static JCT x{s_ratio:.3f}, makespan gap {100 * gap:.1f}% to "
          f"the LP bound, online JCT x{o_ratio:.3f}, own predictions {100 * s_own:+.1f}% "
          f"(held-out seeds {100 * held_out:+.1f}%, online {100 * o_own:+.1f}%)")


if __name__ == "__main__":
    main()
