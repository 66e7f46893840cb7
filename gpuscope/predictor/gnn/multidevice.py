"""Beyond the seed: one model for many devices, with the device's spec as graph-level input.

The MLP reads [readout ‖ u ‖ d], where d is the device's catalog spec (``gpuscope.cluster.devices``):

    d = (log10 FP32 TFLOP/s, log10 best tensor-core TFLOP/s (FP32 peak if none),
         log10 memory GB, log10 memory bandwidth GB/s, SM count / 100,
         log10 PCIe GB/s, host single-core speed, log2 input-pipeline cores)

standardised on the training rows. Trained on several devices' datasets (label normalisation
fitted on the union of their training rows) and evaluated **leave-one-device-out**: the
held-out device's rows are predicted by a model that never saw that device.
"""

from __future__ import annotations

import math
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

DEVICE_FEATURES: tuple[str, ...] = (
    "log10_fp32_tflops", "log10_tensor_tflops", "log10_mem_gb", "log10_mem_bw_gbs",
    "sm_count_per_100", "log10_pcie_gbs", "host_single_core", "log2_pipeline_cores",
)


def device_vector(name: str) -> torch.Tensor:
    """The spec vector d of catalog device ``name`` (``DEVICE_FEATURES`` order)."""
    from gpuscope.cluster.devices import get_device

    s = get_device(name)
    best = max(s.fp32_tflops, s.tensor_tflops, s.tf32_tflops)
    vals = [math.log10(s.fp32_tflops), math.log10(best), math.log10(s.mem_gb),
            math.log10(s.mem_bw_gbs), s.sm_count / 100.0, math.log10(s.pcie_gbs),
            s.host_single_core, math.log2(max(s.host_pipeline_cores, 1e-3))]
    return torch.tensor(vals, dtype=torch.float32)


def combine(datasets: list[PredictorData]) -> tuple[PredictorData, torch.Tensor]:
    """One PredictorData over several devices (graphs shared by key when identical, else
    prefixed with the device) and the per-row device vectors."""
    if not datasets:
        raise InputError("no datasets to combine")
    from gpuscope.core.provenance import one_provenance

    # several devices are the point here, several provenances never
    one_provenance((d.provenance for d in datasets), "multi-device training")
    graphs: dict[str, Data] = {}
    labels, ctx, dev = [], [], []
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
        ctx.append(d.contexts)
        dev.append(device_vector(d.device)[None].expand(len(d), -1))
    merged = PredictorData(pd.concat(labels, ignore_index=True), graphs, torch.cat(ctx),
                           "+".join(d.device for d in datasets), datasets[0].provenance,
                           datasets[0].vocab_json, "", datasets[0].encoding)
    return merged, torch.cat(dev)


def fit_multidevice(datasets: list[PredictorData], config: TrainConfig | None = None
                    ) -> FitResult:
    """Train one model on all ``datasets`` (each split by its own seeded rule, then joined)."""
    cfg = config or TrainConfig()
    merged, dev = combine(datasets)
    parts: dict[str, list[np.ndarray]] = {"train": [], "val": [], "test": [], "unseen": []}
    offset = 0
    for d in datasets:
        for k, v in make_splits(d.labels, cfg.split, cfg.seed).items():
            parts[k].append(v + offset)
        offset += len(d)
    splits = {k: np.concatenate(v) for k, v in parts.items()}
    res = fit_predictor(merged, cfg, device_vectors=dev, splits=splits)
    res.bundle.device_names = [d.device for d in datasets]
    return res


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
        dev = device_vector(held)[None].expand(len(test), -1)
        pred = bundle_predict(res.bundle, test, dev)
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
