"""Predictor: Driple-style GNN (seed 001 §3.1, §4.3–4.4) with transfer learning, GBT baselines,
checkpoints and batched inference.

Public API:

* ``DriplePredictorNet`` / ``ModelConfig``: GCN → shared GCN ×L + GRU → Set2Set → MLP (+ OOM);
* ``load_dataset(path) -> PredictorData``; ``make_splits`` (random 60/20/20, family hold-out);
* ``fit_predictor(data, TrainConfig(...), init_from=bundle)`` → ``FitResult`` (``.bundle``);
* ``save_checkpoint`` / ``load_checkpoint`` (``CheckpointError`` on a bad file);
* ``load_predictor(path, graphs=...) -> Predictor``; ``Predictor.predict(jobs) -> DataFrame``
  (``job_id, device, <targets>, oom_prob``);
* ``evaluate(bundle, data, baseline="gbt")``; ``GBTBaseline``;
* ``fit_multidevice`` / ``leave_one_device_out`` (device spec as input, beyond the seed).

Physics-informed v2 (issue 13; the bundled ``<device>.pt`` and ``multi.pt``):

* ``FeatureBuilder`` (emulator estimate + graph totals per (job, device)); ``load_physics``;
* ``HybridModel`` (per-target corrections: analytic / GBT / MLP); ``fit_physics`` →
  checkpoint dict, ``save_physics``; ``PhysicsPredictor.predict(jobs)`` with ``in_domain``,
  ``domain_reason``, ``oom``; ``load_predictor`` opens either format;
* ``run_ablation`` / ``family_split`` (leave-family-out, seeds, 95 % intervals);
* ``build_corpus`` / ``architectures``; ``measured_curve`` (shrunk corrections of the emulator
  on measured step times, Gavel and real H100: ``residual_tl``; the correctors in
  ``correctors`` and ``breakdown_tl``).
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE: dict[str, str] = {
    "GBTBaseline": "baselines",
    "PredictorBundle": "checkpoint", "load_checkpoint": "checkpoint",
    "save_checkpoint": "checkpoint",
    "PredictorData": "data", "load_dataset": "data",
    "evaluate": "evaluation",
    "DriplePredictorNet": "model", "ModelConfig": "model",
    "fit_multidevice": "multidevice", "leave_one_device_out": "multidevice",
    "Predictor": "predict", "load_predictor": "predict",
    "make_splits": "splits",
    "FitResult": "train", "TrainConfig": "train", "fit_predictor": "train",
    "FeatureBuilder": "physics", "HybridModel": "hybrid", "load_physics": "v2data",
    "PhysicsData": "v2data", "PhysicsPredictor": "physpredict", "fit_physics": "physpredict",
    "save_physics": "physpredict", "run_ablation": "v2eval", "family_split": "v2eval",
    "build_corpus": "corpus", "architectures": "corpus", "measured_curve": "residual_tl",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'gpuscope.predictor' has no attribute {name!r}")
    return getattr(importlib.import_module(f"gpuscope.predictor.{_WHERE[name]}"), name)


def __dir__() -> list[str]:
    return __all__
