"""Beyond the seed: one multi-device model (device spec as input), leave-one-device-out,
against per-device models. Emulated data.

    .venv/bin/python benchmarks/predictor_multidevice.py [--holdout rtx2070,t4,h100] \
        [--steps 8] [--epochs 40] [--jobs 2]

For each held-out device D: a model is trained on the other devices' datasets (their random
60/20/20 train splits; the device feature vector appended to u, ``research/gnn_multidevice.py``) and
predicts D's test rows and D's unseen (Table 4) rows; the per-device reference is a GNN
trained here on D's own training split with the same recipe (the bundled D.pt are physics
checkpoints). Both are scored in D's own min-max label space. The per-device
model *has* seen D's training rows; the multi-device model has never seen D.
Writes results/figures/predictor_multidevice.csv.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ALL = "gtx1080,rtx2070,titanx,v100,t4,a100,h100"


def fold(job: dict) -> list[dict]:
    """The multi-device GNN without the held-out device, and the per-device GNN trained on
    the held-out device's own training split with the same recipe (the bundled
    ``<device>.pt`` are physics (format 2) checkpoints, not GNNs)."""
    from gpuscope.predictor.gnn import evaluate, fit_predictor, load_dataset
    from gpuscope.predictor.gnn.train import TrainConfig
    from research.gnn_multidevice import leave_one_device_out

    datasets = [load_dataset(ROOT / "datasets" / "emulated" / d) for d in job["devices"]]
    cfg = TrainConfig(steps=job["steps"], epochs=job["epochs"], patience=job["patience"],
                      progress=False)
    rows = leave_one_device_out(datasets, cfg, holdout=[job["held"]]).to_dict("records")
    own = next(d for d in datasets if d.device == job["held"])
    t = evaluate(fit_predictor(own, cfg).bundle, own).set_index("split")
    for r in rows:
        per = t.loc[r["split"]] if r["split"] in t.index else {}
        r["per_device_nmse"] = float(per.get("nmse", float("nan")))
        r["per_device_mape"] = float(per.get("mape_exec_pct", float("nan")))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", default=ALL)
    ap.add_argument("--holdout", default="rtx2070,t4,h100")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--patience", type=int, default=8)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    import pandas as pd

    devices = [d for d in a.devices.split(",") if d]
    jobs = [{"devices": devices, "held": h, "steps": a.steps or None, "epochs": a.epochs,
             "patience": a.patience} for h in a.holdout.split(",") if h]
    with ProcessPoolExecutor(max_workers=a.jobs) as ex:
        multi = [r for rs in ex.map(fold, jobs) for r in rs]
    rows = []
    for r in multi:
        rows.append({"device": r["device"], "split": r["split"],
                     "multi_nmse": r["nmse"], "per_device_nmse": r["per_device_nmse"],
                     "multi_mape": r["mape_exec_pct"], "per_device_mape": r["per_device_mape"],
                     "multi_train_s": r["seconds"]})
    df = pd.DataFrame(rows)
    out = ROOT / "results" / "figures" / "predictor_multidevice.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False)
    pd.set_option("display.width", 200)
    print(f"leave-one-device-out (emulated; trained on {len(devices) - 1} other devices; "
          f"L={a.steps or 'N/2'}, {a.epochs} epochs max)")
    print(df.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    test = df[df.split == "test"]
    wins = int((test.multi_nmse < test.per_device_nmse).sum())
    print(f"multi-device beats the per-device model on test nMSE for {wins}/{len(test)} "
          f"held-out devices; mean nMSE {test.multi_nmse.mean():.4f} vs "
          f"{test.per_device_nmse.mean():.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
