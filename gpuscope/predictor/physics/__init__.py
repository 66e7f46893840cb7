"""The default predictor: learnt per-target corrections to the emulator's analytic estimate.

* ``features``: :class:`FeatureBuilder` (emulator estimate + graph totals per (job, device)),
  the device feature vector (``device_features``);
* ``analytic`` / ``run_stats``: closed-form labels from an estimate (and their run-length
  statistics);
* ``targets``: the label spaces the model learns in;
* ``hybrid``: :class:`HybridModel` (per target: analytic, GBT or MLP correction) and
  ``select_kinds`` (the per-target choice on held-out families);
* ``trees`` / ``mlp``: the learners, packed into arrays so checkpoints load ``weights_only``;
* ``dataset``: :class:`PhysicsData`, ``load_physics``;
* ``model``: ``fit_physics``, ``save_physics``, :class:`PhysicsPredictor`;
* ``ablation``: candidate models on the same leave-family-out splits
  (``gpuscope predictor ablation``);
* ``corpus``: the architecture corpus behind ``multi.pt`` (maintainer command).
"""

from __future__ import annotations

from gpuscope.core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "FeatureBuilder": ".features", "device_features": ".features",
    "HybridModel": ".hybrid", "select_kinds": ".hybrid",
    "PhysicsData": ".dataset", "load_physics": ".dataset",
    "PhysicsPredictor": ".model", "fit_physics": ".model", "save_physics": ".model",
    "run_ablation": ".ablation", "build_corpus": ".corpus", "architectures": ".corpus",
})
