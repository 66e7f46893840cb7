"""One batched prediction of a queue on every device type of a cluster (seed 001 Fig. 4).

Seed 001 keeps one predictor ("dataset") per GPU type; gpuscope's checkpoints are
``<model_dir>/<device>.pt`` (full targets) and ``<device>-driple.pt`` (Driple targets); a GPU
type without its own is predicted by the multi-device checkpoint (:class:`ModelSet`). Each
checkpoint predicts the whole queue in one call; the predictor caches encoded graphs by
``graph_key``, so a queue of N jobs on M devices costs M batched forward passes over the
distinct graphs, never N×M graph exports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from gpuscope.allocator.names import DEFAULT_MODEL_DIR
from gpuscope.core.errors import InputError
from gpuscope.jobs.spec import JobSpec


def checkpoint_path(model_dir: str | Path, device: str, driple: bool = False) -> Path:
    return Path(model_dir) / (f"{device}-driple.pt" if driple else f"{device}.pt")


@dataclass(frozen=True)
class ModelSet:
    """Where each GPU type's predictor comes from: ``overrides[device]`` (``--model
    DEVICE=PATH``), else ``<model_dir>/<device>.pt``, else the multi-device checkpoint
    ``multi`` (``--model-multi``; default ``<model_dir>/multi.pt``, then the bundled one),
    which predicts any catalog GPU from its spec. Driple checkpoints have no fallback."""

    model_dir: Path = DEFAULT_MODEL_DIR
    overrides: tuple[tuple[str, Path], ...] = ()
    multi: Path | None = None

    def multi_path(self) -> Path:
        if self.multi is not None:
            return self.multi
        own = Path(self.model_dir) / "multi.pt"
        return own if own.is_file() else DEFAULT_MODEL_DIR / "multi.pt"

    def resolve(self, devices: Sequence[str], driple: bool = False
                ) -> dict[str, tuple[Path, str | None]]:
        """Per device: (checkpoint, the device a multi-device checkpoint predicts, or None);
        a missing file is one-line ``InputError``."""
        if not Path(self.model_dir).is_dir():
            raise InputError(f"missing checkpoint folder {self.model_dir} (--model-dir)")
        over = dict(self.overrides)
        out: dict[str, tuple[Path, str | None]] = {}
        for d in devices:
            own = checkpoint_path(self.model_dir, d, driple)
            if not driple and d in over:
                out[d] = (over[d], None)
            elif own.is_file() or driple:
                out[d] = (own, None)
            else:
                out[d] = (self.multi_path(), d)
        for d, (path, _) in out.items():
            if not path.is_file():
                what = "multi-device checkpoint" if out[d][1] else "checkpoint"
                raise InputError(f"missing {what} {path} (no predictor for device {d})")
        return out

    def fallback_note(self, devices: Sequence[str]) -> str | None:
        """One line naming the GPU types predicted by the multi-device checkpoint."""
        multi = [d for d, (_, dev) in self.resolve(devices).items() if dev is not None]
        if not multi:
            return None
        return (f"note: {', '.join(multi)} {'has' if len(multi) == 1 else 'have'} no checkpoint "
                f"of {'its' if len(multi) == 1 else 'their'} own in {self.model_dir}: predicted "
                f"by the multi-device checkpoint {self.multi_path()} from the catalog spec")


def model_set(models: str | Path | ModelSet) -> ModelSet:
    """A :class:`ModelSet` (a checkpoint folder is one without overrides)."""
    return models if isinstance(models, ModelSet) else ModelSet(Path(models))


def check_checkpoints(model_dir: str | Path | ModelSet, devices: Sequence[str],
                      driple: bool = False) -> None:
    """Raise one-line ``InputError`` naming the first missing checkpoint."""
    model_set(model_dir).resolve(devices, driple)


def predict_queue(
    jobs: Sequence[JobSpec], devices: Sequence[str], model_dir: str | Path | ModelSet,
    driple: bool = False, datasets: str | Path | None = None,
) -> pd.DataFrame:
    """Predictions of ``jobs`` on every device (``gpuscope.predictor.PREDICTION_COLUMNS``).

    ``datasets`` (e.g. ``datasets/emulated``): where ``<device>/graphs.parquet`` holds encoded
    graphs; a GNN checkpoint reuses them instead of exporting and encoding the jobs' graphs
    again, when the dataset's op vocabulary is the checkpoint's (the encoding depends on it).
    """
    where = model_set(model_dir).resolve(devices, driple)
    from gpuscope.predictor import load_predictor  # torch: import lazily

    frames = []
    for d in devices:
        path, device = where[d]
        ds = Path(datasets) / d if datasets is not None else None
        graphs = ds if ds is not None and (ds / "graphs.parquet").is_file() else None
        predictor = load_predictor(path, device=device, graphs=graphs)
        df = predictor.predict(jobs)  # a new frame: no copy (10**6 jobs: 150 MB each)
        df["device"] = d  # the checkpoint's device name may be spelled differently
        frames.append(df)
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True, copy=False)


def domain_warning(pred: pd.DataFrame, weights: Sequence[int] | np.ndarray | None = None) -> str | None:
    """The predictor's out-of-domain line for a cluster's (job, device) predictions: the
    allocation then rests on extrapolated times (``gpuscope.predictor.domain_warning``);
    ``weights``: the queue rows each prediction row stands for."""
    from gpuscope.predictor import domain_warning as warn

    return warn(pred, what="(job, device) predictions", weights=weights)
