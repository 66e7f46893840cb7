"""The predictor's goals (issue 5), each printed against its target, emulated and measured
data separately.

    .venv/bin/python benchmarks/predictor_goals.py [--devices gtx1080,...] [--measured amd-epyc]
        [--steps 8] [--family-devices titanx,h100] [--skip-time] \
        [--epochs 100 --patience 15] [--ckpt-dir datasets/checkpoints]

The training recipe is ``TrainConfig``'s default (L = 8, whole-graph statistics, log-space
execution time) with the epochs/patience given.

1. normalised validation MSE ≤ 0.010 per device, random split: the bundled checkpoints'
   (datasets/checkpoints/<device>.pt) validation rows, plain min-max space of the training split;
2. execution-time MAPE ≤ 10 % on unseen models: (a) the family hold-out split (a model trained
   here with ``--split family``, scored on its test families) and (b) the seed 001 Table 4
   ``unseen`` rows scored with the bundled checkpoint (never trained on);
3. TL with 25 % of the data no worse than no TL with 100 %: read from
   docs/figures/predictor_tl.csv (benchmarks/predictor_tl.py);
4. training one 432-run dataset ≤ 120 s (wall and process CPU seconds, with the recipe given);
5. predicting 10,000 jobs ≤ 1 s (graphs cached: the second call of a Predictor).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CKPT = ROOT / "datasets" / "checkpoints"


def verdict(value: float, target: float, le: bool = True) -> str:
    if value != value:
        return "n/a"
    return "MET" if (value <= target if le else value >= target) else "NOT MET"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", default="gtx1080,rtx2070,titanx,v100,t4,a100,h100")
    ap.add_argument("--measured", default="amd-epyc")
    ap.add_argument("--family-devices", default="gtx1080,titanx,h100")
    ap.add_argument("--steps", type=int, default=8, help="shared-GCN steps L (0: N/2)")
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--patience", type=int, default=15)
    ap.add_argument("--ckpt-dir", default=str(CKPT), help="bundled checkpoints to score")
    ap.add_argument("--skip-time", action="store_true", help="skip the training-time run")
    ap.add_argument("--skip-accuracy", action="store_true", help="skip goals 1-2")
    ap.add_argument("--time-default", action="store_true",
                    help="also time the seed-literal L = N/2 recipe (several minutes)")
    a = ap.parse_args()
    import pandas as pd
    import torch

    from gpuscope.jobs import table_jobs
    from gpuscope.predictor import (
        Predictor,
        evaluate,
        fit_predictor,
        load_checkpoint,
        load_dataset,
    )
    from gpuscope.predictor.train import TrainConfig

    steps = a.steps or None
    ckpt_dir = Path(a.ckpt_dir)
    sets = [("emulated", d) for d in a.devices.split(",") if d] + \
        [("measured", d) for d in a.measured.split(",") if d]
    rows = []
    for prov, dev in [] if a.skip_accuracy else sets:
        path = ROOT / "datasets" / prov / dev
        ck = ckpt_dir / f"{dev}.pt"
        if not path.is_dir() or not ck.is_file():
            print(f"skip {prov}/{dev}: dataset or checkpoint missing")
            continue
        data = load_dataset(path)
        t = evaluate(load_checkpoint(ck), data).set_index("split")
        fam = float("nan")
        if dev in a.family_devices.split(",") or prov == "measured":
            try:
                res = fit_predictor(data, TrainConfig(split="family", steps=steps,
                                                      epochs=a.epochs, patience=a.patience,
                                                      progress=False))
                ft = evaluate(res.bundle, data).set_index("split")
                fam = float(ft.loc["test", "mape_exec_pct"])
            except Exception as e:  # noqa: BLE001 - a tiny measured set may not split
                print(f"{dev}: family split not possible ({e})")
        get = lambda s, c, t=t: float(t.loc[s, c]) if s in t.index else float("nan")  # noqa: E731
        rows.append({"provenance": prov, "device": dev, "val_nmse": get("val", "nmse"),
                     "test_nmse": get("test", "nmse"), "family_mape": fam,
                     "unseen_mape": get("unseen", "mape_exec_pct"),
                     "test_mape": get("test", "mape_exec_pct")})
    df = pd.DataFrame(rows, columns=["provenance", "device", "val_nmse", "test_nmse",
                                     "family_mape", "unseen_mape", "test_mape"])
    pd.set_option("display.width", 200)
    for prov in ("emulated", "measured"):
        sub = df[df.provenance == prov]
        if sub.empty:
            continue
        print(f"\n== {prov} data ==")
        print(sub.drop(columns="provenance").to_string(
            index=False, float_format=lambda v: f"{v:.4f}"))
        worst = sub["val_nmse"].max()
        print(f"goal 1  val nMSE <= 0.010 per device: worst {worst:.4f} "
              f"({(sub.val_nmse <= 0.010).sum()}/{len(sub)} devices) -> {verdict(worst, 0.010)}")
        fm = sub["family_mape"].dropna()
        if len(fm):
            print(f"goal 2a exec MAPE <= 10 % on held-out families: mean {fm.mean():.1f} % over "
                  f"{len(fm)} device(s) -> {verdict(fm.mean(), 10)}")
        um = sub["unseen_mape"].dropna()
        if len(um):
            print(f"goal 2b exec MAPE <= 10 % on Table-4 unseen rows: mean {um.mean():.1f} % "
                  f"-> {verdict(um.mean(), 10)}")
    tl = ROOT / "docs" / "figures" / "predictor_tl.csv"
    if tl.is_file():
        d = pd.read_csv(tl)
        dev = d[d.fraction == 0.25].device.iloc[0] if (d.fraction == 0.25).any() else None
        if dev is not None:
            q = float(d[(d.device == dev) & d.tl & (d.fraction == 0.25)].val_loss.iloc[0])
            r = float(d[(d.device == dev) & ~d.tl & (d.fraction == 1.0)].val_loss.iloc[0])
            print(f"\ngoal 3  TL@25 % val loss {q:.4f} <= no-TL@100 % {r:.4f} ({dev}, emulated) "
                  f"-> {verdict(q, r)}")
    else:
        print("\ngoal 3  run benchmarks/predictor_tl.py first")
    if not a.skip_time:
        data = load_dataset(ROOT / "datasets" / "emulated" / "titanx")
        for st in (steps, None) if steps and a.time_default else (steps,):
            c0, t0 = time.process_time(), time.perf_counter()
            res = fit_predictor(data, TrainConfig(steps=st, epochs=a.epochs,
                                                  patience=a.patience, progress=False))
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            print(f"goal 4  train titanx (432 runs, L={st or 'N/2'}): {wall:.1f} s wall, "
                  f"{cpu:.1f} s CPU, {len(res.history)} epochs, val loss {res.best_val:.4f} "
                  f"-> {verdict(wall, 120)} (wall)")
    ck = ckpt_dir / "titanx.pt"
    if ck.is_file():
        data_dir = ROOT / "datasets" / "emulated" / "titanx"
        jobs = (table_jobs(3) + table_jobs(4))
        queue = [jobs[i % len(jobs)].with_(job_id=f"q{i}") for i in range(10_000)]
        pred = Predictor(load_checkpoint(ck), graphs=data_dir)
        pred.predict(queue)  # warm the readout cache as a long-lived allocator would
        torch.manual_seed(0)
        t0 = time.perf_counter()
        out = pred.predict(queue)
        dt = time.perf_counter() - t0
        cold = Predictor(load_checkpoint(ck), graphs=data_dir)
        t1 = time.perf_counter()
        cold.predict(queue)
        dc = time.perf_counter() - t1
        print(f"goal 5  predict 10,000 jobs: {dt:.3f} s with readouts cached, {dc:.3f} s cold "
              f"(encoded graphs loaded, {out.shape[0]} rows) -> {verdict(dc, 1.0)} (cold)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
