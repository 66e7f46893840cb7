"""Transfer learning (seed 001 §4.4, Table 7) and a data-efficiency curve, on emulated data.

    .venv/bin/python benchmarks/predictor_tl.py [--source gtx1080] [--devices rtx2070,titanx] \
        [--curve-device titanx] [--fractions 0.1,0.25,0.5,1.0] [--steps 8] [--jobs 2]

Table 7: validation loss (best masked MSE on the 20 % validation split, min-max labels with
log execution time: the loss the model is trained on) per device, trained from scratch and
fine-tuned (all weights) from the source device's model, and their sum.
Curve: validation loss on the curve device against the fraction of its training split used
(the validation split is always the full one), without and with TL.
Writes results/figures/predictor_tl.csv and results/figures/predictor_tl.png. Emulated datasets.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIG = ROOT / "results" / "figures"


def _cfg(a: dict, fraction: float = 1.0):
    from gpuscope.predictor.gnn.train import TrainConfig

    return TrainConfig(steps=a["steps"], epochs=a["epochs"], patience=a["patience"],
                       fraction=fraction, progress=False, seed=a["seed"])


def run(job: dict) -> dict:
    from gpuscope.predictor.gnn import evaluate, fit_predictor, load_checkpoint, load_dataset

    data = load_dataset(ROOT / "datasets" / "emulated" / job["device"])
    src = load_checkpoint(job["source_ckpt"]) if job["tl"] else None
    res = fit_predictor(data, _cfg(job, job["fraction"]), init_from=src)
    table = evaluate(res.bundle, data).set_index("split")
    return {"device": job["device"], "tl": job["tl"], "fraction": job["fraction"],
            "val_loss": res.best_val, "val_nmse": float(table.loc["val", "nmse"]),
            "epochs": len(res.history), "seconds": res.seconds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", default="gtx1080")
    ap.add_argument("--devices", default="rtx2070,titanx")
    ap.add_argument("--curve-device", default="titanx")
    ap.add_argument("--fractions", default="0.1,0.25,0.5,1.0")
    ap.add_argument("--steps", type=int, default=8, help="shared-GCN steps L (0: N/2)")
    ap.add_argument("--epochs", type=int, default=150)
    ap.add_argument("--patience", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--reuse-bundled", action="store_true",
                    help="use datasets/checkpoints/<source>.pt as the source model when it is "
                    "a GNN (format 1) checkpoint; else the source is trained")
    a = ap.parse_args()
    base = {"steps": a.steps or None, "epochs": a.epochs, "patience": a.patience, "seed": a.seed}
    import pandas as pd

    from gpuscope.core.errors import CheckpointError
    from gpuscope.predictor.gnn import fit_predictor, load_checkpoint, load_dataset, save_checkpoint

    FIG.mkdir(parents=True, exist_ok=True)
    bundled = ROOT / "datasets" / "checkpoints" / f"{a.source}.pt"
    src_path = FIG / f".tl_source_{a.source}.pt"
    src_bundle = None
    if a.reuse_bundled and bundled.is_file():  # a bundled GNN, same recipe (fp16 weights)
        try:
            src_bundle = load_checkpoint(bundled)
        except CheckpointError as e:  # the bundled <device>.pt are physics
            print(f"not reusing {bundled.name}: {e}; training the source GNN")
    if src_bundle is not None:
        src_val, src_epochs = float(src_bundle.train["best_val_mse"]), \
            int(src_bundle.train["epochs_run"])
        src_s = float(src_bundle.train["seconds"])
    else:
        src = fit_predictor(load_dataset(ROOT / "datasets" / "emulated" / a.source), _cfg(base))
        src_bundle, src_val, src_epochs, src_s = src.bundle, src.best_val, len(src.history), \
            src.seconds
    save_checkpoint(src_bundle, src_path)
    fractions = [float(f) for f in a.fractions.split(",")]
    devices = [d for d in a.devices.split(",") if d]
    jobs = []
    for dev in devices:
        for tl in (False, True):
            jobs.append({**base, "device": dev, "tl": tl, "fraction": 1.0})
    for f in fractions:
        if f == 1.0 and a.curve_device in devices:
            continue
        for tl in (False, True):
            jobs.append({**base, "device": a.curve_device, "tl": tl, "fraction": f})
    for j in jobs:
        j["source_ckpt"] = str(src_path)
    with ProcessPoolExecutor(max_workers=a.jobs) as ex:
        rows = list(ex.map(run, jobs))
    rows.append({"device": a.source, "tl": False, "fraction": 1.0, "val_loss": src_val,
                 "val_nmse": float("nan"), "epochs": src_epochs, "seconds": src_s})
    src_path.unlink()
    df = pd.DataFrame(rows)
    df.to_csv(FIG / "predictor_tl.csv", index=False)

    full = df[df.fraction == 1.0]
    print(f"Table 7 (emulated; validation loss; source {a.source}; L={a.steps or 'N/2'})")
    order = [a.source] + devices
    t7 = []
    for tl in (False, True):
        vals = {d: full[(full.device == d) & (full.tl == tl)].val_loss for d in order}
        vals = {d: (float(v.iloc[0]) if len(v) else float("nan")) for d, v in vals.items()}
        if tl:
            vals[a.source] = vals[a.source] if not pd.isna(vals[a.source]) else \
                float(full[(full.device == a.source) & ~full.tl].val_loss.iloc[0])
        t7.append({"model": "w/ TL" if tl else "w/o TL", **vals,
                   "total": sum(vals.values())})
    t7 = pd.DataFrame(t7)
    t7["vs w/o TL %"] = 100 * (t7["total"] / t7["total"].iloc[0] - 1)
    print(t7.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print("(the source device's own model is the same in both rows, as seed 001 Table 7)")

    curve = df[df.device == a.curve_device].sort_values(["tl", "fraction"])
    piv = curve.pivot_table(index="fraction", columns="tl", values="val_loss")
    piv.columns = ["w/o TL" if not c else "w/ TL" for c in piv.columns]
    print(f"\ndata efficiency on {a.curve_device}: validation loss vs training fraction")
    print(piv.to_string(float_format=lambda v: f"{v:.4f}"))
    q = piv.loc[0.25, "w/ TL"] if 0.25 in piv.index else float("nan")
    r = piv.loc[1.0, "w/o TL"] if 1.0 in piv.index else float("nan")
    print(f"goal: TL with 25 % data ({q:.4f}) <= no TL with 100 % ({r:.4f}): "
          f"{'MET' if q <= r else 'NOT MET'}")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.4))
    for col, mk in (("w/o TL", "o-"), ("w/ TL", "s-")):
        if col in piv:
            ax.plot(100 * piv.index, piv[col], mk, label=col)
    ax.set_xlabel(f"% of {a.curve_device} training split used")
    ax.set_ylabel("validation loss (MSE, normalised)")
    ax.set_title(f"Transfer from {a.source} (emulated data)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(FIG / "predictor_tl.png", dpi=120)
    print(f"wrote {FIG / 'predictor_tl.png'} and {FIG / 'predictor_tl.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
