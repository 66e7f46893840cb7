"""Physics-informed checkpoints (format version 2) and batched inference with a domain guard.

A v2 checkpoint is ``torch.save`` of a dict of tensors/str/int/float/bool/lists/dicts
(``torch.load(weights_only=True)``-safe): ``format`` "gpuscope-predictor",
``format_version`` 2, ``kind`` "physics", ``model`` (``HybridModel.get_state``: per-target
model kind, packed trees / MLP weights, the training range of every input feature, the OOM
classifier), ``targets``, ``targets_seen``, ``device`` (a device name, or ``multi``),
``devices`` (trained on), ``provenance``, ``emulator_version``, ``dataset_fingerprint``,
``train`` (rows, seconds, chosen model per target).

``PhysicsPredictor.predict(jobs)`` returns one row per job: ``job_id, device``, the targets
(NaN for a target the checkpoint never saw; peaks clipped to capacity), ``step_s`` (predicted
seconds per training step), ``oom_prob``, ``oom`` (= oom_prob > 0.5 OR the emulator's memory
model says the job does not fit), ``in_domain`` and ``domain_reason`` (the inputs outside the
checkpoint's training range). Feature rows are cached per (graph, device, run length), so a
long-lived predictor re-predicts a queue without touching the graphs again.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from gpuscope import __version__
from gpuscope.core.errors import CheckpointError, InputError
from gpuscope.core.io import check_keys
from gpuscope.core.targets import TARGETS
from gpuscope.jobs.spec import JobSpec
from gpuscope.predictor.base import PREDICTION_COLUMNS
from gpuscope.predictor.checkpoint import FORMAT, read_checkpoint_dict, save_checkpoint_dict
from gpuscope.predictor.guard import join_reasons, limit
from gpuscope.predictor.physics.dataset import PhysicsData
from gpuscope.predictor.physics.features import FeatureBuilder
from gpuscope.predictor.physics.hybrid import HybridModel, target_space

FORMAT_VERSION = 2
#: The keys (and types) of a version-2 checkpoint, checked before the model is built.
PHYSICS_KEYS: dict[str, Any] = {
    "kind": str, "targets_seen": list, "devices": list, "provenance": str, "train": dict,
    "model": {"targets": list, "models": dict, "mlps": dict, "features": list,
              "domain_min": torch.Tensor, "domain_max": torch.Tensor},
}


def emulator_version() -> str:
    try:
        from gpuscope.emulator.params import EMULATOR_VERSION
    except ImportError:  # an emulator before version constants
        return "1"
    return str(EMULATOR_VERSION)


def data_fingerprint(data: PhysicsData) -> str:
    h = hashlib.sha256()
    h.update(pd.util.hash_pandas_object(data.labels.astype(str), index=False).to_numpy()
             .tobytes())
    return h.hexdigest()[:16]


def fit_physics(data: PhysicsData, rows: np.ndarray | None = None, kinds: Any = "auto",
                seed: int = 0, device: str | None = None, **params: Any) -> dict[str, Any]:
    """Fit a :class:`HybridModel` on ``rows`` of ``data`` (default: rows not held out as
    ``unseen``) and return the checkpoint dict."""
    if rows is None:
        rows = np.flatnonzero(data.labels["split"].astype(str).to_numpy() != "unseen")
    sub = data.subset(rows)
    use = sub.usable()
    sub = sub.subset(np.flatnonzero(use))
    if len(sub) == 0:
        raise InputError("no usable (ok or oom) training rows")
    t0 = time.perf_counter()
    m = HybridModel(targets=data.targets, kinds=kinds, random_state=seed, **params)
    m.fit(sub.frame, sub.Y(), sub.total_steps(), sub.groups(), sub.oom())
    devs = sorted(set(sub.labels["device"].astype(str)))
    prov = sorted(set(sub.labels.get("provenance", pd.Series(["emulated"])).astype(str)))
    return {
        "format": FORMAT, "format_version": FORMAT_VERSION, "kind": "physics",
        "gpuscope_version": __version__, "model": m.get_state(), "targets": list(data.targets),
        "targets_seen": list(m.chosen_), "device": device or (devs[0] if len(devs) == 1
                                                              else "multi"),
        "devices": devs, "provenance": "+".join(prov), "emulator_version": emulator_version(),
        "dataset_fingerprint": data_fingerprint(sub),
        "train": {"rows": len(sub), "seconds": time.perf_counter() - t0, "seed": seed,
                  "chosen": dict(m.chosen_), "few_labels": list(m.few_labels_),
                  "families": sorted(set(sub.groups().tolist()))},
    }


def save_physics(ckpt: dict[str, Any], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return save_checkpoint_dict(ckpt, path)  # atomic: a reader never sees half a checkpoint


_BUILDERS: dict[str, FeatureBuilder] = {}


def shared_builder(cache_dir: str | Path | None = None) -> FeatureBuilder:
    """One :class:`FeatureBuilder` per graph-cache directory for the process: predictors of
    several devices share the graphs read or exported once."""
    key = str(cache_dir)
    if key not in _BUILDERS:
        _BUILDERS[key] = FeatureBuilder(cache_dir=cache_dir)
    return _BUILDERS[key]


def physics_model(ckpt: dict[str, Any]) -> HybridModel:
    """The model of a version-2 checkpoint, its keys checked one by one first (a missing or
    wrongly typed key, a domain that does not fit the features: one ``CheckpointError``)."""
    if ckpt.get("format_version") != FORMAT_VERSION:
        raise CheckpointError("not a version-2 (physics) checkpoint")
    check_keys(ckpt, PHYSICS_KEYS, "physics checkpoint")
    try:
        model = HybridModel.from_state(ckpt["model"])
        n = len(model.features_)
        if model.domain_["min"].shape != (n,) or model.domain_["max"].shape != (n,):
            raise ValueError("its training domain does not match its features")
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RuntimeError) as e:
        raise CheckpointError(f"physics checkpoint is corrupt ({str(e)[:120]})") from None
    return model


class PhysicsPredictor:
    """Batched predictions of a v2 checkpoint (module docstring).

    Args:
        ckpt: the checkpoint dict (``read_checkpoint_dict``) or a path.
        device: the device to predict on (default: the checkpoint's; required for ``multi``).
        builder: a shared :class:`FeatureBuilder` (graph and feature caches).
    """

    def __init__(self, ckpt: dict[str, Any] | str | Path, device: str | None = None,
                 builder: FeatureBuilder | None = None,
                 cache_dir: str | Path | None = None) -> None:
        if not isinstance(ckpt, dict):
            ckpt = read_checkpoint_dict(ckpt)
        self.model = physics_model(ckpt)
        self.ckpt = ckpt
        self.device = device or str(ckpt["device"])
        if self.device == "multi":
            raise InputError("a multi-device checkpoint needs --device NAME")
        from gpuscope.cluster.devices import get_device

        get_device(self.device)  # InputError for an unknown device
        trained = [str(d) for d in ckpt.get("devices", [ckpt["device"]])]
        if str(ckpt["device"]) != "multi" and self.device not in trained:
            raise InputError(f"the checkpoint was trained on {', '.join(trained)}, not "
                             f"{self.device!r}; give no --device or a checkpoint of that device")
        self.builder = builder or shared_builder(cache_dir)
        self._cache: dict[str, dict[str, Any]] = {}

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(self.ckpt["targets"])

    @property
    def device_kind(self) -> str:
        prov = str(self.ckpt.get("provenance", ""))
        return str(self.ckpt.get("device_kind") or ("emulated" if prov == "emulated"
                                                    else "unknown"))

    def _cached(self, jobs: Sequence[JobSpec], keys: list[tuple], device: str) -> np.ndarray:
        """Row indices into this device's prediction cache for ``keys`` (computing the
        missing ones: a long-lived predictor re-predicts a queue without the models)."""
        c = self._cache.setdefault(device, {"index": {}, "parts": []})
        index: dict[tuple, int] = c["index"]
        todo: dict[tuple, int] = {}
        for i, k in enumerate(keys):
            if k not in index and k not in todo:
                todo[k] = i
        if todo:
            ujobs = [jobs[i] for i in todo.values()]
            frame = self.builder.frame(ujobs, [device] * len(ujobs))
            c["parts"].append(self._guarded(frame, np.array([j.total_steps for j in ujobs],
                                                            dtype=np.float64)))
            base = len(index)
            for n, k in enumerate(todo):
                index[k] = base + n
            c.pop("arrays", None)
        if "arrays" not in c:
            parts = c["parts"]
            c["arrays"] = tuple(np.concatenate([pt[m] for pt in parts]) for m in range(5)) + \
                (np.array([r for pt in parts for r in pt[5]], dtype=object),)
        return np.fromiter((index[k] for k in keys), dtype=np.int64, count=len(keys))

    def _guarded(self, frame: pd.DataFrame, steps: np.ndarray) -> tuple[Any, ...]:
        """(targets, step_s, oom_prob, oom, in_domain, domain_reason) of feature rows, within
        ``guard``'s limits: a peak above capacity is clipped and flagged (the learnt share
        before its clip to [0, 1] decides), one above the device's memory is out of memory."""
        Z = self.model.predict_z(frame)
        y = self.model.decode(frame, Z, steps)
        capacity = frame["an_capacity_mb"].to_numpy(np.float64)
        raw = y.copy()
        for j, t in enumerate(self.targets):
            if target_space(t) in ("pct", "cap"):
                raw[:, j] = Z[:, j] * (capacity if target_space(t) == "cap" else 100.0)
        over, flagged, lim = limit(y, self.targets, capacity, raw)
        p = np.where(over, 1.0, self.model.oom_proba(frame))
        ok, why = self.model.domain(frame)
        fits = frame["an_fits"].to_numpy(np.float64) > 0.5
        return (y, self.model.step_time(frame), p, (p > 0.5) | ~fits, ok & ~flagged,
                join_reasons(lim, why))

    def _frame(self, ids: list[str], device: str, rows: np.ndarray) -> pd.DataFrame:
        y, step_s, p, oom, ok, why = self._cache[device]["arrays"]
        # the fixed column contract: a target the checkpoint does not predict is NaN
        df = pd.DataFrame(y[rows], columns=list(self.targets)).reindex(columns=list(TARGETS))
        df.insert(0, "device", device)
        df.insert(0, "job_id", ids)
        df["step_s"] = step_s[rows]
        df["oom_prob"] = p[rows]
        df["oom"] = oom[rows]
        df["in_domain"] = ok[rows]
        df["domain_reason"] = why[rows]
        return df

    def predict(self, jobs: Sequence[JobSpec], devices: Sequence[str] | None = None
                ) -> pd.DataFrame:
        """One row per job, on this predictor's device (``base.PREDICTION_COLUMNS``);
        ``devices``: every job on each of these devices (a multi-device checkpoint),
        device-major."""
        if not jobs:
            return pd.DataFrame(columns=list(PREDICTION_COLUMNS))
        keys = [(self.builder.graph_id(j), j.epochs, j.steps) for j in jobs]
        ids = [j.job_id if j.job_id is not None else j.key for j in jobs]
        frames = [self._frame(ids, d, self._cached(jobs, keys, d))
                  for d in (devices if devices is not None else [self.device])]
        return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)

    def save(self, path: str | Path) -> Path:
        """Write the checkpoint (``save_physics``)."""
        return save_physics(self.ckpt, path)


def evaluate_physics(model: str | Path, dataset: str | Path, progress: bool = False
                     ) -> pd.DataFrame:
    """``evaluation.evaluate`` of a physics checkpoint file on one device's dataset folder:
    per split of the dataset's rows (``train``/``unseen``...), ``evaluation.score`` per target
    in the plain min-max space of the rows not held out as ``unseen``."""
    from gpuscope.predictor.evaluation import score
    from gpuscope.predictor.physics.dataset import load_physics
    from gpuscope.predictor.scaling import MinMaxLabels

    ck = read_checkpoint_dict(model)
    physics_model(ck)  # a broken checkpoint fails before the dataset's features are built
    data = load_physics([dataset], progress=progress)
    devs = sorted(set(data.labels["device"].astype(str)))
    if len(devs) != 1:  # every row is predicted on one device, never row 0's
        raise InputError(f"{dataset}: rows of {len(devs)} devices ({', '.join(devs[:4])}); "
                         "evaluate one device's dataset at a time")
    dev = devs[0]
    pred = PhysicsPredictor(ck, device=dev if ck["device"] == "multi" else None)
    y_hat = pred.model.predict(data.frame, data.total_steps())
    y = data.Y()
    split = data.labels["split"].astype(str).to_numpy()
    ranges = MinMaxLabels(data.targets).fit(y[split != "unseen"] if (split != "unseen").any()
                                            else y)
    rows = []
    for name in sorted(set(split)):
        m = split == name
        rows.append({"model": f"physics ({ck['device']})", "split": name, "rows": int(m.sum()),
                     **score(y_hat[m], y[m], ranges)})
    table = pd.DataFrame(rows)
    fams = set(ck["train"].get("families", []))
    seen = np.isin(data.groups(), list(fams)).mean() if fams else float("nan")
    cols = ["model", "split", "rows", "nmse", "mape_exec_pct"] + \
        [f"nmse_{t}" for t in data.targets]
    with pd.option_context("display.width", 250):
        text = table[cols].to_string(index=False, float_format=lambda v: f"{v:.4f}")
    table.attrs["report"] = (
        f"{dev}; physics checkpoint {Path(model).name} trained on "
        f"{', '.join(ck['devices'])} ({ck['train']['rows']} rows); {100 * seen:.0f} % of these "
        "rows belong to families it was trained on (for held-out figures use "
        "`gpuscope predictor ablation`); nMSE in the plain min-max space of the non-unseen "
        f"rows\n{text}")
    return table


__all__ = ["FORMAT_VERSION", "PhysicsPredictor", "evaluate_physics", "fit_physics",
           "read_checkpoint_dict", "save_physics"]
