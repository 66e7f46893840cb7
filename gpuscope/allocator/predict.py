"""One batched prediction of a queue on every device type of a cluster (seed 001 Fig. 4).

Seed 001 keeps one predictor ("dataset") per GPU type; gpuscope's checkpoints are
``<model_dir>/<device>.pt`` (full targets) and ``<device>-driple.pt`` (Driple targets). Each
checkpoint predicts the whole queue in one call; the predictor caches encoded graphs by
``graph_key``, so a queue of N jobs on M devices costs M batched forward passes over the
distinct graphs, never N×M graph exports.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from gpuscope.core.data import bundled
from gpuscope.core.errors import InputError
from gpuscope.jobs.spec import JobSpec

DEFAULT_MODEL_DIR = bundled("checkpoints")


def checkpoint_path(model_dir: str | Path, device: str, driple: bool = False) -> Path:
    return Path(model_dir) / (f"{device}-driple.pt" if driple else f"{device}.pt")


def check_checkpoints(model_dir: str | Path, devices: Sequence[str], driple: bool = False) -> None:
    """Raise one-line ``InputError`` naming the first missing checkpoint."""
    for d in devices:
        p = checkpoint_path(model_dir, d, driple)
        if not p.is_file():
            raise InputError(f"missing checkpoint {p} (no predictor for device {d})")


def _same_vocab(predictor: Any, dataset: Path) -> bool:
    try:
        mine = json.loads(predictor.bundle.vocab_json)
        return mine == json.loads((dataset / "vocab.json").read_text())
    except (AttributeError, OSError, ValueError):
        return False


def predict_queue(
    jobs: Sequence[JobSpec], devices: Sequence[str], model_dir: str | Path, driple: bool = False,
    datasets: str | Path | None = None,
) -> pd.DataFrame:
    """Predictions of ``jobs`` on every device: ``job_id, device, <targets>, oom_prob``.

    ``datasets`` (e.g. ``datasets/emulated``): where ``<device>/graphs.parquet`` holds encoded
    graphs; they are reused instead of exporting and encoding the jobs' graphs again, but only
    when the dataset's op vocabulary is the checkpoint's (the encoding depends on it).
    """
    check_checkpoints(model_dir, devices, driple)
    from gpuscope.predictor import load_predictor  # torch: import lazily

    frames = []
    for d in devices:
        predictor = load_predictor(checkpoint_path(model_dir, d, driple))
        ds = Path(datasets) / d if datasets is not None else None
        if ds is not None and (ds / "graphs.parquet").is_file() and _same_vocab(predictor, ds):
            predictor.add_graphs(ds)
        df = predictor.predict(list(jobs)).copy()
        df["device"] = d  # the checkpoint's device name may be spelled differently
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def domain_warning(pred: pd.DataFrame) -> str | None:
    """The predictor's out-of-domain line for a cluster's (job, device) predictions: the
    allocation then rests on extrapolated times (``physpredict.domain_warning``)."""
    from gpuscope.predictor.physics.model import domain_warning as warn

    return warn(pred, what="(job, device) predictions")
