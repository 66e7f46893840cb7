"""The GNN rows of the ablation: the Driple network trained on a leave-family-out
split with its op vocabulary fitted on the *training* graphs only.

The bundled datasets' ``graphs.parquet`` were encoded with a vocabulary fitted over every
graph (the held-out ones too), so the frequency column leaks. ``HonestEncoder`` re-encodes
each job's current OpGraph: the grouping (asynchronous fluid communities, K = 100, seed 0 —
vocabulary-independent) is computed once per graph and cached; per split, a vocabulary fitted
on the training rows' graphs gives the Driple node features (summed output-tensor size, op
count, summed op frequency; seed 001 §3.1).

``MeanReadoutNet`` is the ablation's "no graph structure" variant (``readout="mean"``): one
linear layer per node and a plain mean over the graph's nodes instead of message passing and
Set2Set.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch_geometric.data import Data

from gpuscope.jobs.spec import JobSpec
from gpuscope.predictor.gnn.model import DriplePredictorNet, ModelConfig
from gpuscope.predictor.physics.features import FeatureBuilder


class MeanReadoutNet(DriplePredictorNet):
    """The Driple network with r = mean over nodes of ReLU(x W + b) ∈ R^{2H} (no graph
    structure): the head is the network's own, on a readout of the same width."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.node = torch.nn.Linear(config.in_dim, 2 * config.hidden)

    def embed(self, x: torch.Tensor, edge_index: torch.Tensor, batch: torch.Tensor,
              num_graphs: int) -> torch.Tensor:
        h = torch.relu(self.node(x))
        s = torch.zeros(num_graphs, h.size(1), dtype=h.dtype).index_add_(0, batch, h)
        n = torch.bincount(batch, minlength=num_graphs).clamp(min=1).unsqueeze(1)
        return s / n


class HonestEncoder:
    """Driple encodings of jobs' graphs under a vocabulary fitted on given graphs."""

    def __init__(self, builder: FeatureBuilder, k: int = 100) -> None:
        self.builder = builder
        self.k = k
        self._groups: dict[str, tuple[Any, list[list[int]], np.ndarray]] = {}

    def _entry(self, job: JobSpec) -> tuple[Any, list[list[int]], np.ndarray]:
        key = job.graph_key
        if key not in self._groups:
            from gpuscope.graphs.encoding import group_nodes

            self.builder.graph_entry(job)
            assert self.builder.source is not None
            g = self.builder.source(job)
            groups = group_nodes(g, k=self.k)
            gid = {v: i for i, grp in enumerate(groups) for v in grp}
            pairs = set()
            for s, d in g.edges:
                a, b = gid.get(s), gid.get(d)
                if a is not None and b is not None and a != b:
                    pairs.update({(a, b), (b, a)})
            ei = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2).T
            self._groups[key] = (g, groups, ei)
        return self._groups[key]

    def encode(self, jobs: list[JobSpec], vocab_jobs: list[JobSpec]) -> tuple[dict[str, Data],
                                                                             str]:
        """``graph_key → Data`` for ``jobs`` and the vocabulary JSON, fitted on the graphs of
        ``vocab_jobs`` only."""
        from gpuscope.graphs import OpVocabulary

        seen: dict[str, JobSpec] = {}
        for j in vocab_jobs:
            seen.setdefault(j.graph_key, j)
        vocab = OpVocabulary().fit(self._entry(j)[0] for j in seen.values())
        out: dict[str, Data] = {}
        for j in jobs:
            if j.graph_key in out:
                continue
            g, groups, ei = self._entry(j)
            x = np.array([[float(sum(g.nodes[v].numel for v in grp)), float(len(grp)),
                           float(sum(vocab.frequency(g.nodes[v].op) for v in grp))]
                          for grp in groups], dtype=np.float32)
            out[j.graph_key] = Data(x=torch.from_numpy(x), edge_index=torch.from_numpy(ei),
                                    num_nodes=len(groups))
        import json

        return out, json.dumps(vocab.to_dict())


def gnn_candidate(labels: pd.DataFrame, jobs: list[JobSpec], device: str,
                  encoder: HonestEncoder, readout: str = "set2set", epochs: int = 100,
                  patience: int = 15) -> Callable[[dict[str, np.ndarray], int], np.ndarray]:
    """An ablation candidate: (split, seed) → predictions of the split's test rows [n × T]."""
    from gpuscope.predictor.gnn.data import PredictorData, contexts_for
    from gpuscope.predictor.gnn.predict import GNNPredictor
    from gpuscope.predictor.gnn.train import TrainConfig, fit_predictor

    lab = labels.reset_index(drop=True).copy()
    lab["split"] = "train"
    ctx = contexts_for(lab)

    def run(sp: dict[str, np.ndarray], seed: int) -> np.ndarray:
        graphs, vocab = encoder.encode(jobs, [jobs[i] for i in sp["train"]])
        data = PredictorData(lab, graphs, ctx, device, "emulated", vocab,
                             encoding={"k": encoder.k, "features": "driple"})
        splits = {"train": sp["train"], "val": sp["val"], "test": sp["test"],
                  "unseen": np.zeros(0, dtype=np.int64)}
        res = fit_predictor(data, TrainConfig(seed=seed, epochs=epochs, patience=patience,
                                              progress=False), splits=splits,
                            net=MeanReadoutNet if readout == "mean" else DriplePredictorNet)
        pred = GNNPredictor(res.bundle, graphs=graphs)
        y, _ = pred.predict_arrays([jobs[i] for i in sp["test"]])
        return y

    return run
