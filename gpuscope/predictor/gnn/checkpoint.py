"""Checkpoints: one file per trained predictor (docs/design.md, Checkpoint).

``torch.save`` of a dict holding only tensors, str, int, float, bool, lists and dicts, so
``torch.load(path, weights_only=True)`` reads it safely:

``format`` ("gpuscope-predictor"), ``format_version``, ``gpuscope_version``, ``state_dict``
(weights, float32 or float16 — ``dtype`` says which; loaded back as float32), ``config``
(ModelConfig), ``targets`` and ``target_set``, ``labels`` (min-max normalisation),
``features``/``contexts``/``gstats`` (input standardisers), ``vocab`` (op vocabulary JSON),
``device``, ``provenance``, ``dataset_fingerprint``, ``split`` (kind, seed), ``train``
(epochs run, best validation loss, seconds), ``encoding`` (the graph encoding's ``k`` and
``features``, to encode new jobs' graphs alike), ``domain`` (the training rows' ranges of
``gnn.domain``'s features; absent in checkpoints written before it was recorded).

A file of another format version, a different target set than expected, or a corrupt file
raises :class:`gpuscope.core.errors.CheckpointError` with one line naming the problem.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from gpuscope import __version__
from gpuscope.core.errors import CheckpointError
from gpuscope.core.io import check_keys
from gpuscope.core.targets import TARGET_SETS
from gpuscope.predictor.checkpoint import FORMAT, read_checkpoint_dict, save_checkpoint_dict
from gpuscope.predictor.gnn.model import DriplePredictorNet, ModelConfig
from gpuscope.predictor.scaling import MinMaxLabels, Standardizer

FORMAT_VERSION = 1
#: The keys (and types) of a version-1 checkpoint, checked before the network is built.
GNN_KEYS: dict[str, Any] = {"state_dict": dict, "config": dict, "labels": dict,
                            "features": dict, "contexts": dict, "vocab": str}


@dataclass
class PredictorBundle:
    """A trained network and everything needed to use it (what a checkpoint holds)."""

    net: DriplePredictorNet
    targets: tuple[str, ...]
    labels: MinMaxLabels
    features: Standardizer
    contexts: Standardizer
    device: str
    provenance: str = "emulated"
    vocab_json: str = "{}"
    dataset_fingerprint: str = ""
    gstats: Standardizer | None = None
    split: dict[str, Any] = field(default_factory=dict)
    train: dict[str, Any] = field(default_factory=dict)
    encoding: dict[str, Any] = field(default_factory=lambda: {"k": 100, "features": "driple"})
    domain: dict[str, Any] | None = None

    @property
    def config(self) -> ModelConfig:
        return self.net.config

    @property
    def target_set(self) -> str:
        for name, ts in TARGET_SETS.items():
            if tuple(ts) == tuple(self.targets):
                return name
        return "custom"


def save_checkpoint(bundle: PredictorBundle, path: str | Path, half: bool = False) -> Path:
    """Write ``bundle`` to ``path``; ``half`` stores the weights as float16 (bundled files)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    dtype = torch.float16 if half else torch.float32
    state = {k: (v.detach().to(dtype) if v.is_floating_point() else v.detach()).clone()
             for k, v in bundle.net.state_dict().items()}
    obj = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "gpuscope_version": __version__,
        "state_dict": state, "dtype": "float16" if half else "float32",
        "config": bundle.config.to_dict(), "targets": list(bundle.targets),
        "target_set": bundle.target_set, "labels": bundle.labels.to_dict(),
        "features": bundle.features.to_dict(), "contexts": bundle.contexts.to_dict(),
        "gstats": bundle.gstats.to_dict() if bundle.gstats is not None else None,
        "vocab": bundle.vocab_json,
        "device": bundle.device, "provenance": bundle.provenance,
        "dataset_fingerprint": bundle.dataset_fingerprint, "split": dict(bundle.split),
        "train": dict(bundle.train), "encoding": dict(bundle.encoding),
    }
    if bundle.domain is not None:
        obj["domain"] = {"features": [str(f) for f in bundle.domain["features"]],
                         "min": [float(v) for v in bundle.domain["min"]],
                         "max": [float(v) for v in bundle.domain["max"]]}
    return save_checkpoint_dict(obj, path)


def load_checkpoint(path: str | Path, targets: str | tuple[str, ...] | None = None
                    ) -> PredictorBundle:
    """Read a checkpoint; ``targets`` (a set name or tuple) must match if given."""
    path = Path(path)
    obj = read_checkpoint_dict(path)
    if obj.get("format_version") == 2:
        raise CheckpointError(f"checkpoint {path} is a physics (format 2) checkpoint; load it "
                              "with gpuscope.predictor.load_predictor")
    if obj.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(
            f"checkpoint {path} has format version {obj.get('format_version')!r} "
            f"(written by gpuscope {obj.get('gpuscope_version')}); this gpuscope reads "
            f"version {FORMAT_VERSION}: retrain it with `gpuscope train`")
    check_keys(obj, GNN_KEYS, f"checkpoint {path}")
    got = tuple(obj.get("targets", ()))
    if targets is not None:
        want = tuple(TARGET_SETS[targets]) if isinstance(targets, str) else tuple(targets)
        if got != want:
            raise CheckpointError(
                f"checkpoint {path} predicts the {obj.get('target_set')!r} target set "
                f"({len(got)} targets), expected {len(want)} targets")
    for key, what in (("exec_per_step", "a per-step execution-time output"),
                      ("devices", "a device-spec input (multi-device)")):
        if obj.get(key):
            raise CheckpointError(f"checkpoint {path} was trained with {what}, a switch this "
                                  "gpuscope no longer has; retrain it")
    try:
        config = ModelConfig.from_dict(dict(obj["config"]))
        if config.n_targets != len(got):
            raise ValueError("config and target list disagree")
        net = DriplePredictorNet(config)
        state = {k: v.float() if v.is_floating_point() else v
                 for k, v in obj["state_dict"].items()}
        net.load_state_dict(state)
        gstats = obj.get("gstats")
        bundle = PredictorBundle(
            net=net, targets=got, labels=MinMaxLabels.from_dict(obj["labels"]),
            features=Standardizer.from_dict(obj["features"]),
            contexts=Standardizer.from_dict(obj["contexts"]), device=str(obj["device"]),
            provenance=str(obj.get("provenance", "emulated")), vocab_json=str(obj["vocab"]),
            dataset_fingerprint=str(obj.get("dataset_fingerprint", "")),
            gstats=Standardizer.from_dict(gstats) if gstats else None,
            split=dict(obj.get("split", {})),
            train=dict(obj.get("train", {})),
            encoding=dict(obj.get("encoding", {"k": 100, "features": "driple"})),
            domain=dict(obj["domain"]) if obj.get("domain") else None)
    except (KeyError, TypeError, ValueError, RuntimeError, AttributeError, IndexError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CheckpointError(f"checkpoint {path} is corrupt ({first[:120]})") from None
    net.eval()
    return bundle
