"""gpuscope's schedulers side by side with the Path Relinking / ANDREAS authors' C++ scheduler
(ai-sprint-eu-project/GPUScheduler on GitHub, where the authors publish it) on identical
instances.

Takes the reference's built executable (``--reference-bin``; this script builds nothing and the
repository holds no recipe for building it), generates the instances with the reference
instance generator (AlexNet K80/M60 tables, J = 10 N jobs), then runs both tools as
command-line programs with matched settings: event-driven rescheduling, Greedy,
RandomGreedy(K) = RG with MaxIt_RG = K, PathRelinking(K) = PR with MaxIt_RG = K. Runs are
interleaved (reference, gpuscope, reference, gpuscope, ...) so that load on a shared machine
hits both. Prints per instance and method the total costs and their ratio, the wall-time ratio
(medians) and the peak RSS of each, then

    vs reference: worst cost ratio X (target <= 1.00), N=100 PR wall ratio Y (target <= 1.0)

X is over RG and PR (Greedy's target is |ratio - 1| <= 0.5 %, printed on its own line).

    .venv/bin/python benchmarks/schedulers_vs_reference.py --reference-bin PATH/TO/main
    .venv/bin/python benchmarks/schedulers_vs_reference.py --reference-bin PATH --quick   # N = 10 only
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
CPP_NAME = {"greedy": "Greedy", "rg": "RandomGreedy", "pr": "PathRelinking"}
#: (N, instance seed, [(method, iterations)]): the instances and settings compared
FULL = [(10, s, [("greedy", 0), ("rg", 1000), ("pr", 1000)]) for s in (1, 2, 3)] + [
    (50, 1, [("greedy", 0), ("pr", 100)]), (100, 1, [("greedy", 0), ("pr", 100)])]


def timed(cmd: list[str], log: Path) -> tuple[float, float, str]:
    """Run ``cmd`` under GNU time; (wall s, peak RSS MB, stdout tail)."""
    tf = log.with_suffix(".time")
    with open(log, "wb") as out:
        r = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", str(tf), *cmd], stdout=out,
                           stderr=subprocess.STDOUT)
    if r.returncode != 0:
        raise SystemExit(f"failed ({r.returncode}): {' '.join(cmd)}; see {log}")
    wall, kb = tf.read_text().split()[-2:]
    with open(log, "rb") as f:
        f.seek(max(0, log.stat().st_size - 4000))
        tail = f.read().decode(errors="replace")
    return float(wall), float(kb) / 1024.0, tail


def run_pair(exe: Path, inst: Path, method: str, it: int, repeats: int, seed: int) -> dict:
    ref_w, gs_w, ref_m, gs_m = [], [], [], []
    ref_cost = gs_cost = float("nan")
    gs_late = -1
    for r in range(repeats):
        res = inst / f"res_{CPP_NAME[method]}"
        res.mkdir(exist_ok=True)
        cmd = [str(exe), f"method={CPP_NAME[method]}", f"folder={res}/", f"seed={seed}"]
        if it:
            cmd.append(f"iter={it}")
        w, m, tail = timed(cmd, inst / f"cpp_{method}_{r}.log")
        ref_cost = float(re.findall(r"total cost: ([0-9.eE+-]+)", tail)[-1])
        ref_w.append(w)
        ref_m.append(m)
        out = inst / f"gpuscope_{method}"
        cmd = [sys.executable, "-m", "gpuscope.cli", "schedule", "--instance", str(inst), "--method",
               method, "--seed", str(seed), "-o", str(out)] + (["--max-it", str(it)] if it else [])
        w, m, tail = timed(cmd, inst / f"gpuscope_{method}_{r}.log")
        gs_cost = float(re.findall(r"total cost ([0-9.eE+-]+)", tail)[-1])
        gs_late = int(re.findall(r"(\d+) late jobs", tail)[-1])
        gs_w.append(w)
        gs_m.append(m)
    return {"ref_cost": ref_cost, "gpuscope_cost": gs_cost, "cost_ratio": gs_cost / ref_cost,
            "gpuscope_late": gs_late, "ref_wall_s": float(np.median(ref_w)),
            "gpuscope_wall_s": float(np.median(gs_w)),
            "wall_ratio": float(np.median(gs_w) / np.median(ref_w)),
            "ref_rss_mb": max(ref_m), "gpuscope_rss_mb": max(gs_m)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference-bin", required=True,
                    help="the reference scheduler's built executable (this script builds nothing)")
    ap.add_argument("--generator", default=str(REPO.parent / "shared" / "tools" / "gen_reference_instance.py"),
                    help="the reference instance generator (default ../shared/tools/gen_reference_instance.py)")
    ap.add_argument("--quick", action="store_true", help="N = 10 instances only")
    ap.add_argument("--repeats", type=int, default=1, help="interleaved runs per pair (median wall)")
    ap.add_argument("--seed", type=int, default=1, help="method seed of both tools")
    ap.add_argument("--out", help="also write the table as CSV here")
    a = ap.parse_args()
    exe = Path(a.reference_bin).resolve()
    if not exe.is_file() or not os.access(exe, os.X_OK):
        raise SystemExit(f"--reference-bin {a.reference_bin}: not an executable file")
    if not Path(a.generator).is_file():
        raise SystemExit(f"instance generator {a.generator} not found (give --generator)")
    env_pp = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = f"{REPO}{os.pathsep}{env_pp}" if env_pp else str(REPO)
    load = os.getloadavg()[0]
    grid = [g for g in FULL if g[0] == 10] if a.quick else FULL
    rows = []
    with tempfile.TemporaryDirectory(prefix="gpuscope-vs-ref-") as td:
        tmp = Path(td)
        for n, s, methods in grid:
            inst = tmp / f"N{n}_s{s}"
            subprocess.run([sys.executable, a.generator, str(inst), str(n), "--seed", str(s)],
                           check=True, capture_output=True)
            for m, it in methods:
                r = run_pair(exe, inst, m, it, a.repeats, a.seed)
                label = f"{m.upper() if m != 'greedy' else 'Greedy'}({it})" if it else "Greedy"
                rows.append({"instance": f"N={n} s{s}", "method": label, **r})
                print(f"{rows[-1]['instance']:>9s} {label:>9s}  ref {r['ref_cost']:11.2f}  gpuscope "
                      f"{r['gpuscope_cost']:11.2f}  cost x{r['cost_ratio']:.4f}  late {r['gpuscope_late']}  "
                      f"wall {r['ref_wall_s']:6.2f} / {r['gpuscope_wall_s']:6.2f} s (x{r['wall_ratio']:.2f})  "
                      f"RSS {r['ref_rss_mb']:6.0f} / {r['gpuscope_rss_mb']:6.0f} MB", flush=True)
    df = pd.DataFrame(rows)
    print(f"\nload average at start {load:.2f} (2 cores shared); walls are medians of {a.repeats} "
          f"interleaved run(s), whole command lines (gpuscope: Python start, loading, writing results)")
    print(df.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    if a.out:
        df.to_csv(a.out, index=False, float_format="%.6g")
    g = df[df.method == "Greedy"]
    print(f"Greedy: worst |cost ratio - 1| {np.abs(g.cost_ratio - 1).max() * 100:.2f} % (target <= 0.5 %)")
    rp = df[df.method != "Greedy"]
    pr_rg = df[df.method.str.startswith("PR")].set_index("instance").gpuscope_cost / \
        df[df.method.str.startswith("RG")].set_index("instance").gpuscope_cost
    if len(pr_rg.dropna()):
        print(f"PR / RG cost (gpuscope, same instances): mean {pr_rg.dropna().mean():.4f} (target < 1)")
    big = df[(df.instance == "N=100 s1") & df.method.str.startswith("PR")]
    big_g = df[(df.instance == "N=100 s1") & (df.method == "Greedy")]
    if len(big_g):
        print(f"N=100 Greedy wall ratio {big_g.wall_ratio.iloc[0]:.2f} (target <= 1.0), peak RSS "
              f"{big_g.gpuscope_rss_mb.iloc[0]:.0f} vs {big_g.ref_rss_mb.iloc[0]:.0f} MB")
    y = f"{big.wall_ratio.iloc[0]:.2f}" if len(big) else "n/a (--quick)"
    print(f"vs reference: worst cost ratio {rp.cost_ratio.max():.4f} (target <= 1.00), "
          f"N=100 PR wall ratio {y} (target <= 1.0)")


if __name__ == "__main__":
    main()
