"""The predictor contract both kinds satisfy, and the functions that work on either.

A trained predictor (:class:`Predictor`: the physics ``PhysicsPredictor`` or the GNN's
``GNNPredictor``) predicts one device and returns, for a list of jobs, one row per job with
exactly the columns of :data:`PREDICTION_COLUMNS`, in that order:

========================== ============================================================
``job_id``, ``device``      the job (its ``job_id``, else its key) and the device predicted
the 13 ``TARGETS``          burst/idle seconds and peaks of the four resources, then
                            ``exec_time_s`` (label units; NaN for a target the checkpoint
                            does not predict or never saw in training). Peaks never exceed
                            their capacity (100 %, the device's memory in MB)
``step_s``                  predicted seconds per training step (NaN where the predictor
                            does not model it: the GNN)
``oom_prob``                probability that the job runs out of device memory
``oom``                     the job is predicted not to fit (``oom_prob > 0.5``, or its
                            predicted footprint is above the device's memory; then
                            ``oom_prob`` is 1)
``in_domain``               False when the job lies outside the checkpoint's training domain
                            or a prediction had to be limited to what is physically possible
``domain_reason``           why not (empty when in domain)
========================== ============================================================

``load_predictor`` opens either checkpoint format; ``fit`` trains either kind on dataset
folders and ``save`` writes it; ``domain_warning`` is the one stderr line every command prints
for out-of-domain rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from gpuscope.core.targets import TARGETS

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from gpuscope.jobs.spec import JobSpec

#: The columns of every prediction frame, in order (module docstring).
PREDICTION_COLUMNS: tuple[str, ...] = ("job_id", "device", *TARGETS, "step_s", "oom_prob", "oom",
                                       "in_domain", "domain_reason")
#: ``arch`` of :func:`fit`: the physics-informed predictor (default) or seed 001's GNN.
ARCHS: tuple[str, ...] = ("physics", "gnn")


@runtime_checkable
class Predictor(Protocol):
    """A trained predictor of one device (module docstring)."""

    #: the device it predicts (a catalog name)
    device: str

    @property
    def targets(self) -> tuple[str, ...]:
        """The targets the checkpoint predicts (the others are NaN in ``predict``)."""
        ...

    @property
    def device_kind(self) -> str:
        """What the checkpoint's training labels were measured on
        (``core.provenance.DEVICE_KINDS``: ``emulated`` for emulated labels, else as recorded,
        or ``unknown``)."""
        ...

    def predict(self, jobs: Sequence[JobSpec]) -> pd.DataFrame:
        """One row per job, the columns of :data:`PREDICTION_COLUMNS`."""
        ...

    def save(self, path: str | Path) -> Path:
        """Write the checkpoint (atomically) and return its path."""
        ...


def load_predictor(path: str | Path, *, device: str | None = None,
                   graphs: str | Path | None = None, cache_dir: str | Path | None = None,
                   targets: str | tuple[str, ...] | None = None, workers: int = 1
                   ) -> Predictor:
    """Open a checkpoint of either kind (``CheckpointError`` with one line if unusable).

    Args:
        device: the device to predict (a multi-device checkpoint needs it; a one-device
            checkpoint accepts only its own).
        graphs: a dataset folder or ``graphs.parquet`` with encoded graphs (the GNN uses
            them instead of encoding the jobs' graphs, when encoded with its vocabulary; the
            physics predictor reads OpGraphs and ignores them).
        cache_dir: the graph cache (``GraphCache``) folder.
        targets: a target-set name or tuple the checkpoint must predict.
        workers: processes for the physics predictor's analytic labels of a large queue
            (0: one per core); the GNN ignores it.
    """
    from gpuscope.core.errors import CheckpointError
    from gpuscope.core.targets import TARGET_SETS
    from gpuscope.predictor.checkpoint import read_checkpoint_dict
    from gpuscope.predictor.physics.model import FORMAT_VERSION, PhysicsPredictor

    obj = read_checkpoint_dict(path)
    if obj.get("format_version") == FORMAT_VERSION:
        if targets is not None:
            want = tuple(TARGET_SETS[targets]) if isinstance(targets, str) else tuple(targets)
            if tuple(obj["targets"]) != want:
                raise CheckpointError(f"checkpoint {path} predicts {len(obj['targets'])} "
                                      f"targets, expected {len(want)}")
        pred = PhysicsPredictor(obj, device=device, cache_dir=cache_dir)
        pred.builder.workers = workers
        return pred
    from gpuscope.predictor.gnn.checkpoint import load_checkpoint
    from gpuscope.predictor.gnn.predict import GNNPredictor

    return GNNPredictor(load_checkpoint(path, targets), graphs=graphs, cache_dir=cache_dir,
                        device=device)


def fit(datasets: str | Path | Sequence[str | Path], arch: str = "physics", seed: int = 0,
        progress: bool = False, **options: Any) -> Predictor:
    """Train a predictor on dataset folders (``datasets/<provenance>/<device>``; the physics
    kind also reads corpus files and several folders at once, the GNN one folder).

    ``options``: the physics kind's ``kinds`` (``auto``, ``gbt``, ``mlp``, ``analytic``) and
    ``HybridModel`` parameters; the GNN's ``TrainConfig`` fields and ``init_from`` (a
    checkpoint path to transfer from)."""
    from gpuscope.core.errors import InputError

    paths = [datasets] if isinstance(datasets, (str, Path)) else list(datasets)
    if arch not in ARCHS:
        raise InputError(f"unknown arch {arch!r}; expected {' or '.join(ARCHS)}")
    if arch == "physics":
        from gpuscope.predictor.physics.dataset import load_physics
        from gpuscope.predictor.physics.model import PhysicsPredictor, fit_physics

        ck = fit_physics(load_physics(paths, progress=progress), seed=seed, **options)
        return PhysicsPredictor(ck, device=None if ck["device"] != "multi" else ck["devices"][0])
    if len(paths) != 1:
        raise InputError("--arch gnn trains on one dataset folder")
    from gpuscope.predictor.gnn.checkpoint import load_checkpoint
    from gpuscope.predictor.gnn.data import load_dataset
    from gpuscope.predictor.gnn.predict import GNNPredictor
    from gpuscope.predictor.gnn.train import TrainConfig, fit_predictor

    init = options.pop("init_from", None)
    cfg = TrainConfig(seed=seed, progress=progress, **options)
    src = load_checkpoint(init, cfg.target_names()) if init else None
    return GNNPredictor(fit_predictor(load_dataset(paths[0]), cfg, init_from=src).bundle)


def save(predictor: Predictor, path: str | Path) -> Path:
    """Write ``predictor``'s checkpoint to ``path`` (atomically; parent folders created)."""
    return predictor.save(path)


def domain_warning(pred: pd.DataFrame, what: str = "jobs",
                   weights: Sequence[int] | np.ndarray | None = None) -> str | None:
    """One line when rows of a prediction frame lie outside their checkpoint's training domain
    (``in_domain`` / ``domain_reason``), or, when none does, when some rows' checkpoint
    records no domain (``guard.NO_DOMAIN``), else None. ``what`` names the rows; with a
    ``device`` column holding several devices the example names its device too. ``weights``:
    how many rows each row stands for (a distinct job's prediction shared by queue rows)."""
    import numpy as np

    from gpuscope.predictor.guard import NO_DOMAIN

    if pred.empty:
        return None
    w = np.ones(len(pred), np.int64) if weights is None else np.asarray(weights, np.int64)
    out = ~pred["in_domain"].astype(bool).to_numpy()
    total = int(w.sum())
    if not out.any():
        none = (pred["domain_reason"].astype(str) == NO_DOMAIN).to_numpy()
        if not none.any():
            return None
        devs = sorted(set(pred.loc[none, "device"].astype(str)))
        many = len(devs) > 1
        return (f"warning: the checkpoint{'s' if many else ''} of {', '.join(devs)} "
                f"record{'' if many else 's'} no training domain: {int(w[none].sum())} of "
                f"{total} {what} are not checked against it (column domain_reason)")
    first = pred[out].iloc[0]
    where = f" on {first['device']}" if pred["device"].nunique() > 1 else ""
    return (f"warning: {int(w[out].sum())} of {total} {what} lie outside the checkpoint's "
            f"training domain (column in_domain; e.g. {first['job_id']}{where}: "
            f"{first['domain_reason']})")
