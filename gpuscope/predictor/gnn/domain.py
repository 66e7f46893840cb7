"""The GNN's training domain: what its inputs say about a job's size and length, and the
ranges of that over the training rows.

Per job, from its encoded graph and its run (``domain_features``):

* ``log10_ops``: the traced training step's op count (the encoded groups' ``n_ops``);
* ``log10_tensor_elems``: its summed output-tensor elements (parameters, activations and
  gradients all show in it; an encoded graph keeps no separate parameter count);
* ``log10_flops``: its FLOPs, for graphs encoded with the ``rich`` features (``driple``
  features carry none);
* ``log2_batch_size``, ``log10_epochs``, ``log10_steps_per_epoch``, ``log10_total_steps``.

``fit_domain`` stores the training rows' ``min``/``max`` of each in the checkpoint
(``domain``). A checkpoint written before it did gets the ranges of the training rows of the
dataset it names (``datasets/<provenance>/<device>``, when its fingerprint matches) from
``recorded_domain``; else it has none (``guard.NO_DOMAIN``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from gpuscope.jobs.spec import JobSpec

if TYPE_CHECKING:
    from torch_geometric.data import Data

    from gpuscope.predictor.gnn.checkpoint import PredictorBundle
    from gpuscope.predictor.gnn.data import PredictorData

#: Run-length features (the last three): ``GNNPredictor`` clamps a job's run into their
#: training ranges before the network sees it.
RUN_FEATURES: tuple[str, ...] = ("log10_epochs", "log10_steps_per_epoch", "log10_total_steps")


def feature_names(mode: str) -> tuple[str, ...]:
    """The domain features of graphs encoded with feature mode ``mode``."""
    size = ("log10_ops", "log10_tensor_elems") + (("log10_flops",) if mode == "rich" else ())
    return size + ("log2_batch_size",) + RUN_FEATURES


def _graph_totals(g: Data, mode: str) -> list[float]:
    from gpuscope.graphs.encoding import FEATURES

    cols = FEATURES[mode]
    x = g.x.double().numpy()
    ops = float(x[:, cols.index("n_ops")].sum())
    if mode == "rich":  # per-group log1p values
        elems = float(np.expm1(x[:, cols.index("log_out_numel")]).sum())
        flops = [math.log10(max(float(np.expm1(x[:, cols.index("log_flops")]).sum()), 1.0))]
    else:
        elems, flops = float(x[:, cols.index("out_numel")].sum()), []
    return [math.log10(max(ops, 1.0)), math.log10(max(elems, 1.0)), *flops]


def domain_features(graphs: Sequence[Data], jobs: Sequence[JobSpec], mode: str) -> np.ndarray:
    """[jobs × ``feature_names(mode)``]: row i from ``graphs[i]`` and ``jobs[i]``."""
    cache: dict[int, list[float]] = {}
    rows = []
    for g, j in zip(graphs, jobs, strict=True):
        if id(g) not in cache:
            cache[id(g)] = _graph_totals(g, mode)
        rows.append(cache[id(g)] + [math.log2(j.batch_size), math.log10(j.epochs),
                                    math.log10(j.steps), math.log10(j.total_steps)])
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), len(feature_names(mode)))


def fit_domain(data: PredictorData, rows: np.ndarray) -> dict[str, Any]:
    """``{"features", "min", "max"}`` of the domain features over ``rows`` of ``data``."""
    from gpuscope.predictor.gnn.data import job_from_row

    mode = str((data.encoding or {}).get("features", "driple"))
    lab = data.labels.iloc[np.asarray(rows, dtype=np.int64)]
    jobs = [job_from_row(r) for _, r in lab.iterrows()]
    X = domain_features([data.graphs[k] for k in lab["graph_key"].astype(str)], jobs, mode)
    return {"features": list(feature_names(mode)), "min": X.min(axis=0).tolist(),
            "max": X.max(axis=0).tolist()}


_RECORDED: dict[str, dict[str, Any] | None] = {}


def recorded_domain(bundle: PredictorBundle) -> dict[str, Any] | None:
    """The checkpoint's domain, or for one written before checkpoints recorded it, that of
    the training rows of the bundled dataset it names (its split rebuilt from the stored kind,
    seed and fraction), when that dataset's fingerprint is the checkpoint's; else None."""
    if bundle.domain:
        return bundle.domain
    key = bundle.dataset_fingerprint
    if key not in _RECORDED:
        _RECORDED[key] = _from_bundled_dataset(bundle)
    return _RECORDED[key]


def _from_bundled_dataset(bundle: PredictorBundle) -> dict[str, Any] | None:
    from gpuscope.core.data import bundled
    from gpuscope.core.errors import InputError
    from gpuscope.predictor.gnn.data import file_fingerprint, load_dataset
    from gpuscope.predictor.gnn.splits import make_splits, subsample

    folder = bundled(bundle.provenance, bundle.device)
    files = [folder / "labels.parquet", folder / "graphs.parquet"]
    if not bundle.dataset_fingerprint or not all(f.is_file() for f in files) \
            or file_fingerprint(files) != bundle.dataset_fingerprint:
        return None
    try:
        data = load_dataset(folder)
        seed = int(bundle.split.get("seed", 0))
        train = make_splits(data.labels, str(bundle.split.get("kind", "random")), seed)["train"]
        rows = subsample(train, float(bundle.split.get("fraction", 1.0)), seed)
    except InputError:
        return None
    return fit_domain(data, rows)
