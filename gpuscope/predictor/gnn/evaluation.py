"""``gpuscope evaluate`` of a GNN checkpoint (and the GBT baseline), per split of a dataset.

The split is rebuilt from the checkpoint's stored split kind and seed, so ``train``, ``val``
and ``test`` are the rows the model was (not) trained on; ``unseen`` are seed 001 Table 4 rows.
When the dataset is not the one the checkpoint was trained on (another fingerprint: a
different device, or a transferred model), every trainable row is scored as ``all``.
The GBT baseline is fitted on the same training rows with the same targets. Scores are
``evaluation.score`` per resource group (nMSE in the plain min-max space of the training
rows, execution-time MAPE, R²).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from gpuscope.predictor.evaluation import GROUPS, score
from gpuscope.predictor.gnn.baselines import GBTBaseline, row_features
from gpuscope.predictor.gnn.batching import build_inputs, predict_inputs
from gpuscope.predictor.gnn.checkpoint import PredictorBundle
from gpuscope.predictor.gnn.data import PredictorData
from gpuscope.predictor.gnn.splits import make_splits, subsample
from gpuscope.predictor.scaling import MinMaxLabels
from gpuscope.predictor.threads import torch_threads

SPLIT_ORDER: tuple[str, ...] = ("train", "val", "test", "all", "unseen")


def bundle_predict(bundle: PredictorBundle, data: PredictorData) -> np.ndarray:
    """Predictions (label units, clipped at 0) of ``bundle`` for every row of ``data``."""
    keys = data.labels["graph_key"].astype(str).tolist()
    ctx = data.contexts
    if bundle.train.get("steps_in_u") is False:
        from gpuscope.predictor.gnn.train import steps_out_of_u

        ctx = steps_out_of_u(ctx)
    inp = build_inputs(keys, data.graphs, ctx, bundle.features, bundle.contexts,
                       gstats=bundle.gstats)
    with torch_threads(1):
        pred, _ = predict_inputs(bundle.net, inp)
    return np.clip(bundle.labels.inverse(pred.double().numpy()), 0.0, None)


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
        out.append({"model": name, "split": split, "rows": float(rows.size),
                    **score(pred[rows], y[rows], space, by="group")})
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


def evaluation_table(results: list[dict[str, object]]) -> pd.DataFrame:
    """Rows ``{model, split, rows, **score}`` → a DataFrame in a fixed column order."""
    df = pd.DataFrame(results)
    cols = ["model", "split", "rows"] + [f"nmse_{g}" for g in GROUPS] + \
        ["nmse", "mape_exec_pct", "r2"]
    return df[[c for c in cols if c in df.columns]]


def format_table(df: pd.DataFrame) -> str:
    """Fixed-width text of an evaluation table (MSEs to 4 decimals, MAPE 1, R² 3)."""
    fmt = df.copy()
    for c in fmt.columns:
        if c.startswith("nmse"):
            fmt[c] = fmt[c].map(lambda v: "-" if pd.isna(v) else f"{v:.4f}")
        elif c == "mape_exec_pct":
            fmt[c] = fmt[c].map(lambda v: "-" if pd.isna(v) else f"{v:.1f}")
        elif c == "r2":
            fmt[c] = fmt[c].map(lambda v: "-" if pd.isna(v) else f"{v:.3f}")
        elif c == "rows":
            fmt[c] = fmt[c].map(lambda v: f"{int(v)}")
    fmt.columns = [c.replace("nmse_", "").replace("mape_exec_pct", "exec_MAPE%")
                   for c in fmt.columns]
    return fmt.to_string(index=False)


def evaluate_gnn(model: str | Path, dataset: str | Path, baseline: str | None = None
                 ) -> pd.DataFrame:
    """``evaluation.evaluate`` of a GNN checkpoint file on a dataset folder."""
    from gpuscope.predictor.gnn.checkpoint import load_checkpoint
    from gpuscope.predictor.gnn.data import load_dataset

    bundle = load_checkpoint(model)
    data = load_dataset(dataset)
    table = evaluate(bundle, data, baseline, name=f"gnn-{bundle.target_set}")
    table.attrs["report"] = (
        f"{data.device} ({data.provenance}); model {Path(model).name} trained on "
        f"{bundle.device}, split {bundle.split.get('kind', '?')} seed "
        f"{bundle.split.get('seed', '?')}; nMSE = MSE of min-max normalised labels\n"
        + format_table(table))
    return table
