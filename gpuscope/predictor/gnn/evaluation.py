"""``gpuscope evaluate``: a checkpoint (and the GBT baseline) scored per split of a dataset.

The split is rebuilt from the checkpoint's stored split kind and seed, so ``train``, ``val``
and ``test`` are the rows the model was (not) trained on; ``unseen`` are seed 001 Table 4 rows.
When the dataset is not the one the checkpoint was trained on (another fingerprint: a
different device, or a transferred model), every trainable row is scored as ``all``.
The GBT baseline is fitted on the same training rows with the same targets.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from gpuscope.predictor.gnn.baselines import GBTBaseline, row_features
from gpuscope.predictor.gnn.batching import build_inputs, predict_inputs
from gpuscope.predictor.gnn.checkpoint import PredictorBundle
from gpuscope.predictor.gnn.data import PredictorData
from gpuscope.predictor.gnn.metrics import evaluation_table, score
from gpuscope.predictor.gnn.scaling import MinMaxLabels
from gpuscope.predictor.gnn.splits import make_splits, subsample
from gpuscope.predictor.threads import torch_threads

SPLIT_ORDER: tuple[str, ...] = ("train", "val", "test", "all", "unseen")


def bundle_predict(bundle: PredictorBundle, data: PredictorData,
                   device_vectors: torch.Tensor | None = None) -> np.ndarray:
    """Predictions (label units, clipped at 0) of ``bundle`` for every row of ``data``."""
    keys = data.labels["graph_key"].astype(str).tolist()
    ctx = data.contexts
    if bundle.train.get("steps_in_u") is False:
        from gpuscope.predictor.gnn.train import steps_out_of_u

        ctx = steps_out_of_u(ctx)
    inp = build_inputs(keys, data.graphs, ctx, bundle.features, bundle.contexts,
                       device_vectors, bundle.devices, gstats=bundle.gstats)
    with torch_threads(1):
        pred, _ = predict_inputs(bundle.net, inp)
    y = bundle.to_label_units(bundle.labels.inverse(pred.double().numpy()), data.total_steps())
    return np.clip(y, 0.0, None)


def eval_splits(bundle: PredictorBundle, data: PredictorData) -> dict[str, np.ndarray]:
    """The checkpoint's own split of ``data``, or ``all``/``unseen`` for another dataset."""
    kind = str(bundle.split.get("kind", "random"))
    seed = int(bundle.split.get("seed", 0))
    parts = make_splits(data.labels, kind, seed)
    if bundle.dataset_fingerprint and bundle.dataset_fingerprint != data.fingerprint:
        return {"all": np.sort(np.concatenate([parts["train"], parts["val"], parts["test"]])),
                "unseen": parts["unseen"]}
    parts["train"] = subsample(parts["train"], float(bundle.split.get("fraction", 1.0)), seed)
    return parts


def score_rows(name: str, pred: np.ndarray, data: PredictorData, bundle: PredictorBundle,
               parts: dict[str, np.ndarray]) -> list[dict[str, object]]:
    y = data.targets(bundle.targets)
    # the plain min-max space of this dataset's training rows (the checkpoint's when the
    # dataset is another one)
    space = bundle.labels
    if parts.get("train") is not None and parts["train"].size:
        space = MinMaxLabels(bundle.targets).fit(y[parts["train"]])
    out = []
    for split in SPLIT_ORDER:
        rows = parts.get(split)
        if rows is None or rows.size == 0:
            continue
        out.append({"model": name, "split": split, **score(pred[rows], y[rows], space)})
    return out


def evaluate(bundle: PredictorBundle, data: PredictorData, baseline: str | None = None,
             name: str | None = None) -> pd.DataFrame:
    """The evaluation table (``gpuscope.predictor.gnn.metrics``) of ``bundle`` on ``data``."""
    parts = eval_splits(bundle, data)
    name = name or f"gnn-{bundle.target_set}"
    rows = score_rows(name, bundle_predict(bundle, data), data, bundle, parts)
    if baseline == "gbt":
        train = parts.get("train", parts.get("all"))
        X = row_features(data)
        Y = data.targets(bundle.targets)
        log_t = tuple(t for t, lg in zip(bundle.labels.targets, bundle.labels.log) if lg)
        gbt = GBTBaseline(bundle.targets, log_targets=log_t,
                          random_state=int(bundle.split.get("seed", 0))).fit(X[train], Y[train])
        rows += score_rows(f"gbt-{bundle.target_set}", gbt.predict(X), data, bundle, parts)
    return evaluation_table(rows)
