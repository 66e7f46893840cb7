"""Research (``benchmarks/predictor_multidevice.py``): one GNN for many devices, with the
device's spec as graph-level input. No shipped checkpoint is one; the CLI neither makes nor
scores one.

The MLP reads [readout ‖ u ‖ d], where d is the device's feature vector
(``gpuscope.predictor.physics.features.device_features``, the physics predictor's):

    d = (log10 FP32 TFLOP/s, log10 best tensor-core TFLOP/s (FP32 peak if none),
         log10 memory GB, log10 memory bandwidth GB/s, SM count / 100,
         log10 PCIe GB/s, host single-core speed, log2 input-pipeline cores)

appended to each row's context u, so the GNN standardises it with u on the training rows. Trained on several devices' datasets (label normalisation
fitted on the union of their training rows) and evaluated **leave-one-device-out**: the
held-out device's rows are predicted by a model that never saw that device.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import torch
from torch_geometric.data import Data

from gpuscope.core.errors import InputError
from gpuscope.predictor.evaluation import score
from gpuscope.predictor.gnn.data import PredictorData
from gpuscope.predictor.gnn.evaluation import bundle_predict
from gpuscope.predictor.gnn.splits import make_splits
from gpuscope.predictor.gnn.train import FitResult, TrainConfig, fit_predictor
from gpuscope.predictor.physics.features import device_features


def device_vector(name: str) -> torch.Tensor:
    """The device feature vector d of catalog device ``name`` (``physics.features.DEVICE_FEATURES`` order)."""
    from gpuscope.cluster.devices import get_device

    return torch.tensor(list(device_features(get_device(name)).values()), dtype=torch.float32)


def with_device(data: PredictorData, device: str) -> PredictorData:
    """``data`` with ``device``'s vector appended to every row's context."""
    dev = device_vector(device)[None].expand(len(data), -1)
    return replace(data, contexts=torch.cat([data.contexts, dev], dim=1))


def combine(datasets: list[PredictorData]) -> PredictorData:
    """One PredictorData over several devices (graphs shared by key when identical, else
    prefixed with the device), each row's context extended by its device's vector."""
    if not datasets:
        raise InputError("no datasets to combine")
    from gpuscope.core.provenance import one_provenance

    # several devices are the point here, several provenances never
    one_provenance((d.provenance for d in datasets), "multi-device training")
    graphs: dict[str, Data] = {}
    labels, ctx = [], []
    for d in datasets:
        lab = d.labels.copy()
        rename = {}
        for k in set(lab["graph_key"].astype(str)):
            g = d.graphs[k]
            if k in graphs and not (graphs[k].x.shape == g.x.shape and torch.equal(graphs[k].x, g.x)
                                    and torch.equal(graphs[k].edge_index, g.edge_index)):
                rename[k] = f"{d.device}/{k}"
            graphs[rename.get(k, k)] = g
        lab["graph_key"] = lab["graph_key"].astype(str).map(lambda k, r=rename: r.get(k, k))
        labels.append(lab)
        ctx.append(with_device(d, d.device).contexts)
    return PredictorData(pd.concat(labels, ignore_index=True), graphs, torch.cat(ctx),
                         "+".join(d.device for d in datasets), datasets[0].provenance,
                         datasets[0].vocab_json, "", datasets[0].encoding)


def fit_multidevice(datasets: list[PredictorData], config: TrainConfig | None = None
                    ) -> FitResult:
    """Train one model on all ``datasets`` (each split by its own seeded rule, then joined)."""
    cfg = config or TrainConfig()
    merged = combine(datasets)
    parts: dict[str, list[np.ndarray]] = {"train": [], "val": [], "test": [], "unseen": []}
    offset = 0
    for d in datasets:
        for k, v in make_splits(d.labels, cfg.split, cfg.seed).items():
            parts[k].append(v + offset)
        offset += len(d)
    splits = {k: np.concatenate(v) for k, v in parts.items()}
    return fit_predictor(merged, cfg, splits=splits)


def leave_one_device_out(datasets: list[PredictorData], config: TrainConfig | None = None,
                         holdout: list[str] | None = None) -> pd.DataFrame:
    """For each held-out device: train on the others, score the held-out device's trainable
    rows (nMSE in the held-out device's own min-max space, exec-time MAPE)."""
    cfg = config or TrainConfig()
    rows = []
    names = [d.device for d in datasets]
    for held in holdout or names:
        test = next(d for d in datasets if d.device == held)
        res = fit_multidevice([d for d in datasets if d.device != held],
                              replace(cfg, progress=False))
        pred = bundle_predict(res.bundle, with_device(test, held))
        parts = make_splits(test.labels, cfg.split, cfg.seed)
        # score in the held-out device's own label space (fitted on its train rows), the
        # space its per-device model is scored in
        from gpuscope.predictor.scaling import MinMaxLabels

        y = test.targets(res.bundle.targets)
        own = MinMaxLabels(res.bundle.targets).fit(y[parts["train"]])
        for split in ("test", "unseen"):
            r = parts[split]
            if r.size:
                rows.append({"device": held, "split": split, "seconds": res.seconds,
                             **score(pred[r], y[r], own, by="group")})
    return pd.DataFrame(rows)
