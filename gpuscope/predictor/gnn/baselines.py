"""Gradient-boosted trees on whole-graph statistics: the baseline that keeps the GNN honest.

Features of a row (all derivable from the dataset's encoded graph, so the baseline sees no
more than the GNN does, plus the same context u):

* per node-feature column f of the encoded graph: log1p Σ_nodes x_f and log1p max_nodes x_f.
  With the ``driple`` features these are the total output-tensor size, the total op count
  (= number of ops in the largest component) and the total op frequency; with ``rich``
  features also total FLOPs and bytes (summed log columns are an upper proxy) and the op-class
  counts (``class_*`` columns sum to the graph's op-class histogram);
* log1p of the number of encoded nodes (groups) and of edges;
* the raw context vector u (log2 batch size, epochs, log10 steps, optimizer and dataset
  one-hots).

The parameter count is not stored in an encoded graph; the constant-class (parameters and
inputs) ops' tensor sizes are part of the summed tensor size, which is what remains of it.

One ``HistGradientBoostingRegressor`` per target, on the same label normalisation as the GNN
(min-max, log for execution time), rows with a missing label skipped for that target.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.ensemble import HistGradientBoostingRegressor
from threadpoolctl import threadpool_limits
from torch_geometric.data import Data

from gpuscope.predictor.gnn.data import PredictorData
from gpuscope.predictor.scaling import MinMaxLabels


def graph_statistics(g: Data) -> np.ndarray:
    """Whole-graph statistics of one encoded graph (see the module docstring)."""
    x = g.x.double().clamp(min=0)
    n_edges = int(g.edge_index.shape[1])
    return np.concatenate([torch.log1p(x.sum(0)).numpy(), torch.log1p(x.max(0).values).numpy(),
                           [np.log1p(x.shape[0]), np.log1p(n_edges)]])


def row_features(data: PredictorData) -> np.ndarray:
    """[n × F] baseline features of every label row of ``data``."""
    stats = {k: graph_statistics(g) for k, g in data.graphs.items()}
    gs = np.stack([stats[k] for k in data.labels["graph_key"].astype(str)])
    return np.concatenate([gs, data.contexts.double().numpy()], axis=1)


class GBTBaseline(BaseEstimator):
    """One gradient-boosted tree ensemble per target (a scikit-learn estimator: ``clone``,
    ``get_params``; learnt state ``labels_``, ``models_``).

    Args:
        targets: target names, in output order.
        log_targets: targets normalised after log1p (as the GNN's ``TrainConfig``).
        max_iter, learning_rate, max_leaf_nodes, min_samples_leaf: passed to
            ``HistGradientBoostingRegressor``.
        random_state: seed.
    """

    def __init__(self, targets: tuple[str, ...], log_targets: tuple[str, ...] = ("exec_time_s",),
                 max_iter: int = 300, learning_rate: float = 0.05, max_leaf_nodes: int = 15,
                 min_samples_leaf: int = 5, random_state: int = 0) -> None:
        self.targets = targets
        self.log_targets = log_targets
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.max_leaf_nodes = max_leaf_nodes
        self.min_samples_leaf = min_samples_leaf
        self.random_state = random_state

    def fit(self, X: np.ndarray, Y: np.ndarray) -> GBTBaseline:
        # one OpenMP thread: on a shared 2-core machine more threads wait on each other
        with threadpool_limits(1):
            return self._fit(X, Y)

    def _fit(self, X: np.ndarray, Y: np.ndarray) -> GBTBaseline:
        self.labels_ = MinMaxLabels(tuple(self.targets),
                                    tuple(t in self.log_targets for t in self.targets)).fit(Y)
        Z = self.labels_.transform(Y)
        self.models_: list[HistGradientBoostingRegressor | float] = []
        for j in range(Z.shape[1]):
            ok = np.isfinite(Z[:, j])
            if ok.sum() < 2 * self.min_samples_leaf:
                self.models_.append(float(np.nanmean(Z[:, j])) if ok.any() else 0.0)
                continue
            m = HistGradientBoostingRegressor(
                max_iter=self.max_iter, learning_rate=self.learning_rate,
                max_leaf_nodes=self.max_leaf_nodes, min_samples_leaf=self.min_samples_leaf,
                random_state=self.random_state)
            self.models_.append(m.fit(X[ok], Z[ok, j]))
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predictions in label units, negatives clipped to 0 (as the GNN's)."""
        with threadpool_limits(1):
            Z = np.column_stack([m.predict(X) if not isinstance(m, float)
                                 else np.full(len(X), m) for m in self.models_])
        return np.clip(self.labels_.inverse(Z), 0.0, None)
