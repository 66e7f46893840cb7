"""Gradient-boosted trees as plain arrays: weights_only-safe storage and fast batch inference.

scikit-learn's ``HistGradientBoostingRegressor`` (numerical features only) is flattened into
five arrays over all trees' nodes — feature index, threshold, missing-goes-left, left/right
child (global node ids), leaf value — plus the baseline prediction. ``predict_packed``
walks every tree for every row at once (a ``[rows × trees]`` node-id matrix advanced one level
per step), which is the same decision rule as scikit-learn's predictor: ``x ≤ threshold`` (or
``x`` NaN and missing-goes-left) → left child.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch


def pack_hgb(model: Any) -> dict[str, Any]:
    """Arrays of a fitted single-output ``HistGradientBoosting*`` model (tensors, ints)."""
    feats, thr, miss, left, right, leaf, val, roots = [], [], [], [], [], [], [], []
    off, depth = 0, 0
    for it in model._predictors:
        if len(it) != 1:
            raise ValueError("only single-output boosting is packed")
        n = it[0].nodes
        roots.append(off)
        # compact dtypes (checkpoints stay small); thresholds keep float64 so that every
        # decision is scikit-learn's exactly
        feats.append(n["feature_idx"].astype(np.int16))
        thr.append(n["num_threshold"].astype(np.float64))
        miss.append(n["missing_go_to_left"].astype(bool))
        left.append(n["left"].astype(np.int32) + off)
        right.append(n["right"].astype(np.int32) + off)
        leaf.append(n["is_leaf"].astype(bool))
        val.append(n["value"].astype(np.float32))
        depth = max(depth, int(n["depth"].max()) if len(n) else 0)
        off += len(n)
        if np.any(n["is_categorical"]):
            raise ValueError("categorical splits are not packed")

    def cat(parts: list[np.ndarray], dtype: Any) -> torch.Tensor:
        return torch.as_tensor(np.concatenate(parts) if parts else np.zeros(0, dtype))

    base = float(np.asarray(model._baseline_prediction).ravel()[0])
    return {"feature": cat(feats, np.int16), "threshold": cat(thr, np.float64),
            "missing_left": cat(miss, bool), "left": cat(left, np.int32),
            "right": cat(right, np.int32), "is_leaf": cat(leaf, bool),
            "value": cat(val, np.float32), "roots": torch.as_tensor(np.array(roots, np.int64)),
            "depth": depth, "baseline": base}


def predict_packed(packed: dict[str, Any], X: np.ndarray) -> np.ndarray:
    """Raw predictions (the model's ``predict`` for a regressor, the logit for a binary
    classifier) of rows ``X`` [n × F]."""
    X = np.asarray(X, dtype=np.float64)
    roots = np.asarray(packed["roots"])
    out = np.full(len(X), float(packed["baseline"]))
    if roots.size == 0 or len(X) == 0:
        return out
    feat = np.asarray(packed["feature"]).astype(np.int64)
    thr = np.asarray(packed["threshold"])
    miss = np.asarray(packed["missing_left"])
    left, right = np.asarray(packed["left"]), np.asarray(packed["right"])
    leaf, value = np.asarray(packed["is_leaf"]), np.asarray(packed["value"], np.float64)
    node = np.broadcast_to(roots, (len(X), roots.size)).copy()
    rows = np.arange(len(X))[:, None]
    for _ in range(int(packed["depth"]) + 1):
        done = leaf[node]
        if done.all():
            break
        x = X[rows, feat[node]]
        go_left = np.where(np.isnan(x), miss[node], x <= thr[node])
        node = np.where(done, node, np.where(go_left, left[node], right[node]))
    return out + value[node].sum(axis=1)
