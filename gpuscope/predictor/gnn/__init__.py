"""Seed 001's Driple GNN (``--arch gnn``; the bundled ``*-driple.pt`` and ``amd-epyc.pt``): GCN,
a shared GCN layer with a GRU between applications, Set2Set readout and an MLP head, min-max
normalised MSE, transfer learning from another device's weights.

``model`` (the network), ``train`` (fitting), ``data`` / ``batching`` / ``losses`` (inputs),
``checkpoint``, ``predict`` (:class:`GNNPredictor`, batched inference), ``evaluation`` /
``splits`` / ``baselines`` (scoring against a GBT baseline).
"""

from __future__ import annotations

from gpuscope.core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "DriplePredictorNet": ".model", "ModelConfig": ".model",
    "TrainConfig": ".train", "FitResult": ".train", "fit_predictor": ".train",
    "PredictorData": ".data", "load_dataset": ".data",
    "PredictorBundle": ".checkpoint", "load_checkpoint": ".checkpoint",
    "save_checkpoint": ".checkpoint", "GNNPredictor": ".predict", "evaluate": ".evaluation",
    "GBTBaseline": ".baselines", "make_splits": ".splits",
})
