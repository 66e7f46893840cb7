"""``gpuscope train | evaluate | predict``: the predictor from the command line.

    gpuscope train --dataset datasets/emulated/titanx -o models/titanx.pt [--kinds auto]
    gpuscope train --arch gnn --dataset datasets/emulated/titanx -o models/titanx-gnn.pt \\
        [--targets full|driple] [--split random|family] [--seed 0] [--epochs 150] \\
        [--init-from models/gtx1080-gnn.pt --finetune all|head] [--fraction 1.0] [--half] \\
        [--no-graph-stats] [--no-log-exec] [--no-steps-in-u] [--steps 8]
    gpuscope evaluate --dataset datasets/emulated/titanx --model models/titanx.pt [--baseline gbt]
    gpuscope predict --model models/titanx.pt --jobs queue.csv -o pred.csv \\
        [--graphs datasets/emulated/titanx] [--device v100] [--workers 0]
    gpuscope predictor corpus | ablation ...     (maintainer commands)

Heavy libraries are imported inside the handlers.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from gpuscope.cluster.cli import add_catalog_option
from gpuscope.core.errors import InputError
from gpuscope.core.io import check_output, write_table
from gpuscope.core.limits import (
    check_count,
    check_memory,
    check_number,
    fraction,
    pos_float,
    pos_int,
)
from gpuscope.core.progress import phase
from gpuscope.core.provenance import labels_file
from gpuscope.predictor.checkpoint import check_checkpoint_file

#: Most size variants per Hugging Face family and configurations per architecture (corpus).
MAX_CORPUS_VARIANTS: int = 10_000


def register(subparsers: Any) -> None:
    t = subparsers.add_parser("train", help="train a resource/exec-time predictor on a dataset")
    t.add_argument("--dataset", required=True, nargs="+",
                   help="dataset folder(s) (datasets/<prov>/<device>) or corpus .parquet; "
                        "several make a multi-device physics model")
    t.add_argument("-o", "--output", required=True, help="checkpoint file to write (.pt)")
    t.add_argument("--arch", default="physics", choices=("physics", "gnn"),
                   help="physics (default: corrections to the emulator's estimate) "
                        "or gnn (seed 001's Driple network; the options below)")
    t.add_argument("--kinds", default="auto",
                   help="physics: auto (per-target winner on held-out families), gbt, mlp "
                        "or analytic")
    t.add_argument("--targets", default="full", choices=("full", "driple"), help="full (13 targets, default) or driple (6)")
    t.add_argument("--split", default="random", choices=("random", "family"), help="random (60/20/20, default) or family")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--epochs", type=pos_int, default=150, help="maximum epochs (default 150)")
    t.add_argument("--patience", type=pos_int, default=20, help="early-stopping patience (epochs)")
    t.add_argument("--batch-size", type=pos_int, default=32)
    t.add_argument("--lr", type=pos_float, default=3e-3)
    t.add_argument("--hidden", type=pos_int, default=64)
    t.add_argument("--steps", type=pos_int, default=8,
                   help="gnn: shared-GCN steps L (default 8; the seed applies N/2 per graph)")
    t.add_argument("--fraction", type=fraction, default=1.0,
                   help="fraction of the training split to use (data-efficiency runs)")
    t.add_argument("--init-from", help="transfer learning: start from this checkpoint")
    t.add_argument("--finetune", default="all", choices=("all", "head"), help="all (default) or head (with --init-from)")
    t.add_argument("--graph-stats", action=argparse.BooleanOptionalAction, default=True,
                   help="feed whole-graph statistics to the MLP beside u (default; beyond the "
                        "seed); --no-graph-stats for the seed's [r ‖ u]")
    t.add_argument("--log-exec", action=argparse.BooleanOptionalAction, default=True,
                   help="min-max normalise log(1 + exec_time_s) (default); --no-log-exec for "
                        "the seed's plain min-max labels")
    t.add_argument("--steps-in-u", action=argparse.BooleanOptionalAction, default=True,
                   help="gnn: feed steps per epoch / total steps in u (default); "
                        "--no-steps-in-u zeroes them (campaigns whose steps were tuned per "
                        "model)")
    t.add_argument("--half", action="store_true", help="store weights as float16")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    add_catalog_option(t)
    t.set_defaults(func=_train)

    e = subparsers.add_parser("evaluate", help="score a checkpoint per split (and a GBT baseline)")
    e.add_argument("--dataset", required=True)
    e.add_argument("--model", required=True, help="checkpoint (.pt)")
    e.add_argument("--baseline", choices=("gbt",), help="also fit and score the GBT baseline")
    e.add_argument("-o", "--output", help="also write the table as CSV")
    e.add_argument("--quiet", action="store_true", help="no progress bar")
    add_catalog_option(e)
    e.set_defaults(func=_evaluate)

    g = subparsers.add_parser("predictor", help="predictor corpus and ablation")
    gs = g.add_subparsers(dest="predictor_cmd", required=True)
    c = gs.add_parser("corpus", help="build (or resume) the architecture corpus")
    c.add_argument("-o", "--output", required=True, help="corpus folder (parts/, corpus.parquet)")
    c.add_argument("--devices", default="all", help="catalog devices: all or a comma list")
    c.add_argument("--per-arch", type=pos_int, default=1, help="configurations per architecture")
    c.add_argument("--per-family", type=pos_int, default=32, help="Hugging Face size variants")
    c.add_argument("--no-hf", action="store_true", help="catalog models only")
    c.add_argument("--max-minutes", type=pos_float, help="stop cleanly after this long (resume later)")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--quiet", action="store_true")
    add_catalog_option(c)
    c.set_defaults(func=_corpus)
    b = gs.add_parser("ablation", help="leave-family-out ablation of the physics candidates")
    b.add_argument("--dataset", required=True, nargs="+", help="dataset folder(s) / corpus")
    b.add_argument("--seeds", default="0,1,2")
    b.add_argument("-o", "--output", help="also write the per-seed table as CSV")
    b.set_defaults(func=_ablation)

    p = subparsers.add_parser("predict", help="predict a job queue's resource use (batched)")
    p.add_argument("--model", required=True, help="checkpoint (.pt)")
    p.add_argument("--jobs", required=True, help="job queue (.csv or .json)")
    p.add_argument("-o", "--output", required=True, help="predictions CSV")
    p.add_argument("--graphs", help="dataset folder or graphs.parquet holding encoded graphs")
    p.add_argument("--device", help="device name (multi-device checkpoints only)")
    p.add_argument("--workers", type=int, default=1,
                   help="processes for the analytic labels of a large queue (physics "
                        "checkpoints; 0 = one per core; default 1: this process)")
    add_catalog_option(p)
    p.set_defaults(func=_predict)


def _train(a: argparse.Namespace) -> int:
    if a.init_from:
        from gpuscope.predictor.checkpoint import resolve_checkpoint

        a.init_from = str(resolve_checkpoint(a.init_from))  # a bundled one by name
    check_output(a.output, [*a.dataset, a.init_from], what="checkpoint")
    if a.init_from:
        if a.arch != "gnn":
            raise InputError("--init-from (transfer learning) goes with --arch gnn; the physics "
                             "predictor trains from its emulator estimate")
        check_checkpoint_file(a.init_from)
    for d in a.dataset:  # a wrong path fails here, before torch loads
        labels_file(d)
    # GCN + GRU + MLP weights with Adam's two moments: ~16 hidden x hidden float32 matrices
    check_memory(f"--hidden {a.hidden}", 16 * 4 * 3 * a.hidden**2)
    if a.arch == "physics":
        return _train_physics(a)
    if len(a.dataset) != 1:
        raise InputError("--arch gnn trains on one dataset folder")
    a.dataset = a.dataset[0]
    return _train_gnn(a)


def _train_physics(a: argparse.Namespace) -> int:
    from gpuscope.predictor.physics.dataset import load_physics
    from gpuscope.predictor.physics.model import fit_physics, save_physics

    if a.kinds not in ("auto", "gbt", "mlp", "analytic"):
        raise InputError(f"unknown --kinds {a.kinds!r}; expected auto, gbt, mlp or analytic")
    phase(f"loading {_datasets(a.dataset)}", quiet=a.quiet)
    data = load_physics(a.dataset, progress=not a.quiet)
    phase(f"fitting the corrections of {len(data.targets)} targets on {len(data):,} rows "
          f"(--kinds {a.kinds})", quiet=a.quiet)
    ck = fit_physics(data, kinds=a.kinds, seed=a.seed)
    ck["device_kind"] = _device_kind(a.dataset, ck["provenance"])
    save_physics(ck, a.output)
    tr = ck["train"]
    print(f"trained physics predictor on {', '.join(ck['devices'])} ({ck['provenance']}, "
          f"{tr['rows']} rows, {len(tr['families'])} families) in {tr['seconds']:.1f} s; "
          f"models: {', '.join(f'{k}={v}' for k, v in tr['chosen'].items())} -> {a.output}")
    unseen = [t for t in ck["targets"] if t not in tr["chosen"]]
    if tr.get("few_labels"):
        least = ck["model"]["params"].get("min_labels", "min_labels")
        sys.stderr.write(f"note: {len(tr['few_labels'])} target(s) have fewer than {least} labelled "
                         f"rows and are predicted by the analytic estimate alone (no learnt "
                         f"correction): {', '.join(tr['few_labels'])}\n")
    if unseen:
        sys.stderr.write(f"note: {len(unseen)} target(s) are not in the dataset and will be "
                         f"predicted NaN: {', '.join(unseen)}\n")
    if ck["device_kind"] == "cpu-only":
        from gpuscope.core.provenance import cpu_only_note

        sys.stderr.write(cpu_only_note(ck["devices"], f"checkpoint {a.output}") + "\n")
    return 0


def _device_kind(datasets: list[str], provenance: str) -> str:
    """What the training datasets were measured on (``core.provenance.DEVICE_KINDS``; the
    manifests say; a corpus file is emulated): one kind, ``mixed``, or ``unknown``."""
    from gpuscope.core.provenance import folder_device_kind

    found = [folder_device_kind(d) if Path(d).is_dir() else "emulated" for d in datasets]
    kinds = {k if k is not None else "emulated" if provenance == "emulated" else "unknown"
             for k in found}
    return next(iter(kinds)) if len(kinds) == 1 else "mixed"


def _train_gnn(a: argparse.Namespace) -> int:
    from gpuscope.predictor.gnn.checkpoint import load_checkpoint, save_checkpoint
    from gpuscope.predictor.gnn.data import load_dataset
    from gpuscope.predictor.gnn.train import TrainConfig, fit_predictor

    for name in ("epochs", "batch_size", "lr", "hidden", "fraction"):
        check_number(f"--{name.replace('_', '-')}", getattr(a, name), low=0, low_open=True)
    if a.fraction > 1:
        raise InputError(f"--fraction must be in (0, 1], got {a.fraction}")
    cfg = TrainConfig(targets=a.targets, split=a.split, seed=a.seed, epochs=a.epochs,
                      patience=a.patience, batch_size=a.batch_size, lr=a.lr, hidden=a.hidden,
                      steps=a.steps, fraction=a.fraction, finetune=a.finetune,
                      graph_stats=a.graph_stats,
                      log_targets=("exec_time_s",) if a.log_exec else (),
                      steps_in_u=a.steps_in_u, progress=not a.quiet)
    targets = cfg.target_names()
    src = load_checkpoint(a.init_from, targets) if a.init_from else None
    phase(f"loading {_datasets([a.dataset])}", quiet=a.quiet)
    data = load_dataset(a.dataset)
    res = fit_predictor(data, cfg, init_from=src)
    save_checkpoint(res.bundle, a.output, half=a.half)
    print(f"trained {data.device} ({data.provenance}, {cfg.targets} targets, {cfg.split} split): "
          f"{len(res.history)} epochs, best val MSE {res.best_val:.5f}, {res.seconds:.1f} s "
          f"-> {a.output}")
    return 0


def _evaluate(a: argparse.Namespace) -> int:
    if a.output:
        check_output(a.output, [a.dataset, a.model], what="table")
    check_checkpoint_file(a.model)  # both checked before torch loads
    labels_file(a.dataset)
    phase(f"scoring {Path(a.model).name} on {_datasets([a.dataset])}", quiet=a.quiet)
    from gpuscope.predictor.evaluation import evaluate

    table = evaluate(a.model, a.dataset, a.baseline, progress=not a.quiet)
    print(table.attrs["report"])
    if a.output:
        write_table(table, a.output, [a.dataset, a.model], what="table")
    return 0


def _predict(a: argparse.Namespace) -> int:
    from gpuscope.jobs.queue import check_sources, read_queue

    if a.workers < 0:
        raise InputError(f"--workers must be >= 0 (0 = one per core), got {a.workers}")
    check_output(a.output, [a.jobs, a.model, a.graphs], what="predictions")
    check_checkpoint_file(a.model)
    if a.graphs is not None:  # a typo or a corrupt file fails here, whatever the checkpoint
        from gpuscope.core.io import read_parquet

        gp = Path(a.graphs)
        read_parquet(gp / "graphs.parquet" if gp.is_dir() else gp, "encoded graphs")
    jobs = read_queue(a.jobs)
    check_sources(jobs, a.jobs)  # everything above runs before torch loads
    phase(f"loading {a.model}")
    from gpuscope.predictor.base import domain_warning, load_predictor

    pred = load_predictor(a.model, graphs=a.graphs, device=a.device, workers=a.workers)
    phase(f"predicting {len(jobs):,} jobs on {pred.device}")
    t0 = time.perf_counter()
    df = pred.predict(jobs)
    dt = time.perf_counter() - t0
    out = Path(a.output)
    kind = pred.device_kind
    df["device_kind"] = kind  # what the checkpoint's labels were measured on
    write_table(df, out, [a.jobs, a.model, a.graphs], what="predictions")
    sys.stderr.write(f"predicted {len(df)} jobs on {pred.device} in {dt:.2f} s -> {out}\n")
    if kind == "cpu-only":
        from gpuscope.core.provenance import cpu_only_note

        sys.stderr.write(cpu_only_note([pred.device], f"checkpoint {a.model}") + "\n")
    note = domain_warning(df)
    if note:
        sys.stderr.write(note + "\n")
    n_oom = int(df["oom"].sum())
    if n_oom:
        sys.stderr.write(f"{n_oom} of {len(df)} jobs do not fit {pred.device}'s memory "
                         "(column oom)\n")
    return 0


def _datasets(paths: list[str]) -> str:
    return f"dataset {paths[0]}" if len(paths) == 1 else f"{len(paths)} datasets"


def _corpus(a: argparse.Namespace) -> int:
    from gpuscope.cluster.devices import load_catalog, parse_device_list
    from gpuscope.predictor.physics.corpus import architectures, build_corpus

    devs = list(load_catalog()) if a.devices == "all" else \
        [d.name for d in parse_device_list(a.devices)]
    check_count("--per-arch", a.per_arch, MAX_CORPUS_VARIANTS)
    check_count("--per-family", a.per_family, MAX_CORPUS_VARIANTS)
    check_output(a.output, kind="dir", what="corpus folder")
    archs = architectures(a.per_arch, a.per_family, a.seed, hf=not a.no_hf)
    s = build_corpus(a.output, devs, archs, a.max_minutes, progress=not a.quiet)
    print(f"corpus {a.output}: {s['architectures']} architectures, {s['families']} families, "
          f"{s['rows']} rows on {len(s['devices'])} devices (emulated; {s['labels']}); built "
          f"{s['built_now']} now, {s['resumed']} resumed, {len(s['failed'])} failed, "
          f"{s['seconds']} s")
    for f in s["failed"][:10]:
        print(f"  failed: {f}")
    return 0


def _ablation(a: argparse.Namespace) -> int:
    import pandas as pd

    from gpuscope.predictor.physics.ablation import run_ablation, summarise
    from gpuscope.predictor.physics.dataset import load_physics

    try:
        seeds = tuple(int(x) for x in a.seeds.split(",") if x.strip())
    except ValueError:
        raise InputError(f"--seeds is a comma list of integers, got {a.seeds!r}") from None
    if len(seeds) < 1 or min(seeds) < 0:
        raise InputError(f"--seeds needs at least one seed, all >= 0, got {a.seeds!r}")
    if a.output:
        check_output(a.output, a.dataset, what="table")
    data = load_physics(a.dataset, progress=True)
    long = run_ablation(data, seeds, progress=True)
    s = summarise(long, data.targets)
    pd.set_option("display.width", 250)
    print(f"leave-family-out ablation over {data.labels['family'].nunique()} families, "
          f"{len(data)} rows, seeds {a.seeds}: mean and 95 % half-width over seeds")
    cols = ["model", "mape_exec_pct", "mape_exec_pct_ci", "nmse", "nmse_ci"]
    print(s[cols].to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    if a.output:
        write_table(long, a.output, a.dataset, what="table")
    return 0
