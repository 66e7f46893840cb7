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
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'gpuscope.predictor' has no attribute {name!r}")
    return getattr(importlib.import_module(f"gpuscope.predictor.{_WHERE[name]}"), name)


def __dir__() -> list[str]:
    return __all__
