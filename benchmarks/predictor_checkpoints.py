"""Train the bundled checkpoints (datasets/checkpoints/) and print their scores.

    .venv/bin/python benchmarks/predictor_checkpoints.py [--devices gtx1080,titanx] \
        [--measured amd-epyc] [--corpus datasets/corpus] [--no-driple] [--jobs 2]

* ``<device>.pt``: the physics-informed predictor (format 2, ``gpuscope.predictor.physics.hybrid``)
  trained on ``datasets/emulated/<device>`` (Table 3 rows; the Table 4 ``unseen`` rows are
  never trained on) plus that device's corpus rows when ``--corpus`` holds a corpus;
* ``multi.pt``: the same on every device's rows (device specs and the emulator's estimate per
  device are inputs; predicts any catalog device, flagging those outside its training range);
* ``<device>-driple.pt``: seed 001's Driple GNN on the Driple targets (paper-literal switch,
  read by the allocator's ``driple`` policy), weights float16;
* ``<measured>.pt``: the GNN on a measured dataset (no catalog device for the emulator), with
  steps kept out of u and execution time learnt per step (a leakage fix).

Prints one line per checkpoint (rows, seconds, chosen model per target or validation MSE) and
writes ``scores.json``.
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


def physics_one(job: dict) -> dict:
    import numpy as np

    from gpuscope.predictor.physics.dataset import concat, load_physics
    from gpuscope.predictor.physics.model import fit_physics, save_physics

    parts = [load_physics([ROOT / "datasets" / "emulated" / d]) for d in job["devices"]]
    corpus = Path(job["corpus"]) / "corpus.parquet"
    if corpus.is_file():
        c = load_physics([corpus])
        keep = np.flatnonzero(c.labels["device"].isin(job["devices"]).to_numpy())
        if keep.size:
            parts.append(c.subset(keep))
    data = concat(parts)
    c0, t0 = time.process_time(), time.perf_counter()
    ck = fit_physics(data, device=job["device"])
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    save_physics(ck, job["out"])
    return {"checkpoint": Path(job["out"]).name, "kind": "physics",
            "provenance": ck["provenance"], "rows": ck["train"]["rows"],
            "devices": ck["devices"], "chosen": ck["train"]["chosen"],
            "emulator_version": ck["emulator_version"], "cpu_s": cpu, "wall_s": wall,
            "bytes": Path(job["out"]).stat().st_size}


def gnn_one(job: dict) -> dict:
    from gpuscope.predictor.gnn import evaluate, fit_predictor, load_dataset, save_checkpoint
    from gpuscope.predictor.gnn.train import TrainConfig

    data = load_dataset(job["dataset"])
    cfg = TrainConfig(targets=job["targets"], epochs=job["epochs"], patience=job["patience"],
                      steps_in_u=job["steps_in_u"], progress=False)
    c0, t0 = time.process_time(), time.perf_counter()
    res = fit_predictor(data, cfg)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    save_checkpoint(res.bundle, job["out"], half=True)
    table = evaluate(res.bundle, data).set_index("split")
    get = lambda s, c: float(table.loc[s, c]) if s in table.index else float("nan")  # noqa: E731
    return {"checkpoint": Path(job["out"]).name, "kind": f"gnn-{job['targets']}",
            "provenance": data.provenance, "rows": len(data), "best_val_mse": res.best_val,
            "val_nmse": get("val", "nmse"), "test_nmse": get("test", "nmse"),
            "test_mape": get("test", "mape_exec_pct"),
            "unseen_mape": get("unseen", "mape_exec_pct"), "epochs": len(res.history),
            "steps_in_u": job["steps_in_u"], "cpu_s": cpu, "wall_s": wall,
            "bytes": Path(job["out"]).stat().st_size}


def run(job: dict) -> dict:
    return physics_one(job) if job["kind"] == "physics" else gnn_one(job)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", default="gtx1080,rtx2070,titanx,v100,t4,a100,h100")
    ap.add_argument("--measured", default="amd-epyc", help="measured datasets ('' for none)")
    ap.add_argument("--corpus", default=str(ROOT / "datasets" / "corpus"))
    ap.add_argument("--no-driple", action="store_true", help="skip the Driple GNN files")
    ap.add_argument("--no-multi", action="store_true", help="skip multi.pt")
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--patience", type=int, default=15)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "datasets" / "checkpoints"))
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    devs = [d for d in a.devices.split(",") if d]
    jobs = [{"kind": "physics", "devices": [d], "device": d, "corpus": a.corpus,
             "out": str(out / f"{d}.pt")} for d in devs]
    if devs and not a.no_multi:
        jobs.append({"kind": "physics", "devices": devs, "device": "multi", "corpus": a.corpus,
                     "out": str(out / "multi.pt")})
    gnn = dict(epochs=a.epochs, patience=a.patience)
    if not a.no_driple:
        jobs += [{"kind": "gnn", "dataset": str(ROOT / "datasets" / "emulated" / d),
                  "targets": "driple", "steps_in_u": True, "out": str(out / f"{d}-driple.pt"),
                  **gnn} for d in devs]
    jobs += [{"kind": "gnn", "dataset": str(ROOT / "datasets" / "measured" / d),
              "targets": "full", "steps_in_u": False, "out": str(out / f"{d}.pt"), **gnn}
             for d in a.measured.split(",") if d]
    with ProcessPoolExecutor(max_workers=a.jobs) as ex:
        rows = list(ex.map(run, jobs))
    import pandas as pd

    pd.set_option("display.width", 250)
    df = pd.DataFrame(rows)
    print(df.drop(columns=[c for c in ("chosen", "devices") if c in df]).to_string(
        index=False, float_format=lambda v: f"{v:.4f}"))
    for r in rows:
        if r["kind"] == "physics":
            print(f"{r['checkpoint']}: " + ", ".join(f"{k}={v}" for k, v in r["chosen"].items()))
    total = sum(p.stat().st_size for p in out.glob("*.pt"))
    print(f"bundled checkpoints: {len(list(out.glob('*.pt')))} files, {total / 1e6:.2f} MB")
    old = out / "scores.json"
    prev = json.loads(old.read_text()) if old.is_file() else []
    names = {r["checkpoint"] for r in rows}
    merged = [r for r in prev if r.get("checkpoint") not in names] + rows
    old.write_text(json.dumps(merged, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
