"""Predictor: a job's resource use and execution time on a GPU type, from its graph.

Two kinds, one room:

* **physics** (the default of ``train``, ``predict``, ``evaluate``, ``allocate`` and the bundled
  ``<device>.pt`` / ``multi.pt``): learnt corrections to the emulator's analytic estimate, per
  target, with a domain guard (:mod:`gpuscope.predictor.physics`): ``FeatureBuilder``,
  ``HybridModel``, ``load_physics``, ``fit_physics``, ``save_physics``, ``PhysicsPredictor``;
* **gnn**: seed 001's Driple GNN with transfer learning (:mod:`gpuscope.predictor.gnn`,
  ``--arch gnn``, the bundled ``*-driple.pt``): ``DriplePredictorNet``, ``fit_predictor``,
  ``load_dataset``, ``GBTBaseline``.

``load_predictor(path)`` opens either kind; ``run_ablation`` / ``family_split`` evaluate
leave-family-out with seeds and 95 % intervals (:mod:`gpuscope.predictor.evaluation`).
"""

from __future__ import annotations

from gpuscope.core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "FeatureBuilder": ".physics.features", "HybridModel": ".physics.hybrid",
    "load_physics": ".physics.dataset", "PhysicsData": ".physics.dataset",
    "PhysicsPredictor": ".physics.model", "fit_physics": ".physics.model",
    "save_physics": ".physics.model", "build_corpus": ".physics.corpus",
    "architectures": ".physics.corpus",
    "run_ablation": ".evaluation", "family_split": ".evaluation",
    "Predictor": ".gnn.predict", "load_predictor": ".gnn.predict",
    "GBTBaseline": ".gnn.baselines",
    "PredictorBundle": ".gnn.checkpoint", "load_checkpoint": ".gnn.checkpoint",
    "save_checkpoint": ".gnn.checkpoint",
    "PredictorData": ".gnn.data", "load_dataset": ".gnn.data",
    "evaluate": ".gnn.evaluation",
    "DriplePredictorNet": ".gnn.model", "ModelConfig": ".gnn.model",
    "fit_multidevice": ".gnn.multidevice", "leave_one_device_out": ".gnn.multidevice",
    "make_splits": ".gnn.splits",
    "FitResult": ".gnn.train", "TrainConfig": ".gnn.train", "fit_predictor": ".gnn.train",
})
