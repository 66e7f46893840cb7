"""Train the bundled pretrained checkpoints (datasets/checkpoints/) and print their scores.

    .venv/bin/python benchmarks/predictor_checkpoints.py [--devices gtx1080,titanx] \
        [--measured amd-epyc] [--steps 8] [--epochs 150] [--jobs 2]

For every bundled emulated device: ``<device>.pt`` (13 targets) and ``<device>-driple.pt``
(6 Driple targets); for each measured dataset: ``<device>.pt`` (CPU targets and execution time
are the only observed labels; GPU targets are masked). Random 60/20/20 split, seed 0, weights
stored as float16; otherwise ``TrainConfig``'s default recipe (whole-graph statistics into the
MLP, log-space execution time). Bundled files: ``--epochs 100 --patience 15``. Prints one line per checkpoint: provenance, best validation MSE (training
label space), plain min-max nMSE on val/test, exec-time MAPE on test and on the unseen
(Table 4) rows, epochs, seconds. ``--jobs 2`` trains two checkpoints at a time (processes).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def train_one(job: dict) -> dict:
    from gpuscope.predictor import evaluate, fit_predictor, load_dataset, save_checkpoint
    from gpuscope.predictor.train import TrainConfig

    data = load_dataset(job["dataset"])
    cfg = TrainConfig(targets=job["targets"], steps=job["steps"], epochs=job["epochs"],
                      patience=job["patience"], progress=False)
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    res = fit_predictor(data, cfg)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    save_checkpoint(res.bundle, job["out"], half=True)
    table = evaluate(res.bundle, data).set_index("split")
    get = lambda s, c: float(table.loc[s, c]) if s in table.index else float("nan")  # noqa: E731
    return {"checkpoint": Path(job["out"]).name, "provenance": data.provenance,
            "rows": len(data), "best_val_mse": res.best_val, "val_nmse": get("val", "nmse"),
            "test_nmse": get("test", "nmse"), "test_mape": get("test", "mape_exec_pct"),
            "unseen_mape": get("unseen", "mape_exec_pct"), "epochs": len(res.history),
            "wall_s": wall, "cpu_s": cpu, "steps": job["steps"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", default="gtx1080,rtx2070,titanx,v100,t4,a100,h100")
    ap.add_argument("--measured", default="amd-epyc", help="measured datasets ('' for none)")
    ap.add_argument("--targets", default="full,driple")
    ap.add_argument("--steps", type=int, default=8, help="shared-GCN steps L (0: N/2)")
    ap.add_argument("--epochs", type=int, default=150)
    ap.add_argument("--patience", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "datasets" / "checkpoints"))
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    steps = a.steps or None
    jobs = []
    for dev in [d for d in a.devices.split(",") if d]:
        for t in a.targets.split(","):
            name = f"{dev}.pt" if t == "full" else f"{dev}-{t}.pt"
            jobs.append({"dataset": str(ROOT / "datasets" / "emulated" / dev), "targets": t,
                         "out": str(out / name)})
    for dev in [d for d in a.measured.split(",") if d]:
        jobs.append({"dataset": str(ROOT / "datasets" / "measured" / dev), "targets": "full",
                     "out": str(out / f"{dev}.pt")})
    for j in jobs:
        j.update(steps=steps, epochs=a.epochs, patience=a.patience)
    with ProcessPoolExecutor(max_workers=a.jobs) as ex:
        rows = list(ex.map(train_one, jobs))
    import pandas as pd

    df = pd.DataFrame(rows)
    pd.set_option("display.width", 200)
    print(df.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    total = sum(p.stat().st_size for p in out.glob("*.pt"))
    print(f"bundled checkpoints: {len(list(out.glob('*.pt')))} files, {total / 1e6:.2f} MB "
          "(float16 weights)")
    (out / "scores.json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
