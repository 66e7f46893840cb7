"""The GNN's batched inference: ``GNNPredictor(bundle).predict(jobs) -> DataFrame``, the
columns of ``base.PREDICTION_COLUMNS`` (``gpuscope.predictor.load_predictor`` opens a file).

One pass per call: the distinct graphs of the jobs are embedded once each (readouts are cached
by ``graph_key`` for the life of the Predictor, since they depend only on the graph and the
weights), then the MLP runs over every job's [readout ‖ u ‖ g] in one matrix product.

Encoded graphs come from ``graphs`` (a dataset's ``graphs.parquet``, or a dict) when they hold
the job's ``graph_key``; otherwise the job's graph is exported through ``GraphCache`` and
encoded with the checkpoint's op vocabulary, ``k`` and feature mode. A dataset folder whose
``vocab.json`` is not the checkpoint's vocabulary is not used (its encodings would be other
inputs than the network was trained on).

Targets come in label units (negative values, which no target can take, are clipped to 0;
the targets a checkpoint does not predict are NaN), ``oom_prob`` = σ(OOM logit), ``oom`` =
``oom_prob > 0.5``; the GNN models no step time (``step_s`` NaN).

Guards (``guard``; the network extrapolates without bound):

* a job whose epochs or steps per epoch lie outside the training rows' (``gnn.domain``) is
  fed to the network with its run clamped into them; its execution time is the clamped
  run's scaled by total steps / clamped total steps (so more epochs or steps never predict
  less time), and its OOM probability the clamped run's (memory does not grow with run
  length). Inside the trained run lengths the network's outputs are used as they are;
* ``in_domain``/``domain_reason`` as the physics predictor's: graph size, tensor volume,
  batch size and run length against the training rows' ranges;
* peaks are clipped to their capacity and flagged; a memory peak above the device's memory
  makes the job out of memory (``oom_prob`` 1).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch
from torch import Tensor
from torch_geometric.data import Batch, Data

from gpuscope.core.errors import InputError
from gpuscope.core.targets import TARGETS
from gpuscope.jobs.spec import JobSpec
from gpuscope.predictor.gnn.batching import graph_stats, scale_graph
from gpuscope.predictor.gnn.checkpoint import PredictorBundle, save_checkpoint
from gpuscope.predictor.gnn.domain import domain_features, recorded_domain
from gpuscope.predictor.guard import NO_DOMAIN, join_reasons, limit, out_of_domain
from gpuscope.predictor.threads import torch_threads

if TYPE_CHECKING:
    from gpuscope.graphs import OpVocabulary


class GNNPredictor:
    """A trained GNN for one device (``base.Predictor``)."""

    def __init__(self, bundle: PredictorBundle, graphs: dict[str, Data] | str | Path | None = None,
                 cache_dir: str | Path | None = None, device: str | None = None,
                 threads: int | None = 1) -> None:
        self.bundle = bundle
        self.threads = threads
        self.graphs: dict[str, Data] = {}
        if graphs is not None:
            self.add_graphs(graphs)
        self.cache_dir = cache_dir
        if device is not None and device != bundle.device:
            # a one-device model never labels its rows with another device
            raise InputError(f"this checkpoint predicts {bundle.device!r} only; --device "
                             f"{device!r} applies to multi-device checkpoints")
        self.device = bundle.device
        self.domain = recorded_domain(bundle)
        self._capacity_mb = device_memory_mb(bundle.device)
        self._readouts: dict[str, Tensor] = {}
        self._gstats: dict[str, Tensor] = {}
        self._vocab: OpVocabulary | None = None

    @property
    def targets(self) -> tuple[str, ...]:
        return self.bundle.targets

    @property
    def device_kind(self) -> str:
        return "emulated" if self.bundle.provenance == "emulated" else "unknown"

    def add_graphs(self, graphs: dict[str, Data] | str | Path) -> bool:
        """Add encoded graphs (a dict, a ``graphs.parquet`` file or a dataset folder); False
        (nothing added) for a folder whose ``vocab.json`` is not the checkpoint's."""
        if isinstance(graphs, dict):
            self.graphs.update(graphs)
            return True
        from gpuscope.graphs import load_encoded

        p = Path(graphs)
        vocab = p / "vocab.json"
        if p.is_dir() and vocab.exists():
            from gpuscope.core.io import read_json

            try:
                same = read_json(vocab, "op vocabulary") == json.loads(self.bundle.vocab_json)
            except ValueError:  # InputError too: a special or malformed vocabulary file
                same = False
            if not same:
                return False
        self.graphs.update(load_encoded(p / "graphs.parquet" if p.is_dir() else p))
        return True

    def _encode(self, job: JobSpec) -> Data:
        from gpuscope.graphs import GraphCache, OpVocabulary, encode

        if self._vocab is None:
            with tempfile.TemporaryDirectory() as d:
                p = Path(d) / "vocab.json"
                p.write_text(self.bundle.vocab_json)
                self._vocab = OpVocabulary.load(p)
        enc = self.bundle.encoding
        graph = GraphCache(self.cache_dir).get_or_export(job)
        kw = {k: enc[k] for k in ("grouping",) if k in enc}
        return encode(graph, self._vocab, k=int(enc.get("k", 100)),
                      features=str(enc.get("features", "driple")), **kw)

    def _readouts_for(self, jobs: Sequence[JobSpec]) -> tuple[Tensor, Tensor | None]:
        keys = [j.graph_key for j in jobs]
        todo = sorted({k for k in keys if k not in self._readouts})
        if todo:
            from tqdm.auto import tqdm

            by_key = {j.graph_key: j for j in jobs}
            data = []
            # a cold graph cache exports each graph: a bar (terminal only) past 2 s
            for k in tqdm(todo, desc="graphs", unit="graph", delay=2.0, disable=None):
                g = self.graphs.get(k)
                if g is None:
                    g = self._encode(by_key[k])
                    self.graphs[k] = g
                if g.x.shape[1] != self.bundle.config.in_dim:
                    raise InputError(f"graph {k!r} has {g.x.shape[1]} node features, the model "
                                     f"expects {self.bundle.config.in_dim}")
                data.append(scale_graph(g, self.bundle.features))
                if self.bundle.gstats is not None:
                    gstd = self.bundle.gstats
                    self._gstats[k] = gstd.transform(graph_stats(g, len(gstd.mean_))[None])[0]
            net = self.bundle.net
            net.eval()
            with torch.no_grad():
                for s in range(0, len(data), 256):
                    b = Batch.from_data_list(data[s:s + 256])
                    ro = net.embed(b.x, b.edge_index, b.batch, b.num_graphs)
                    for i, k in enumerate(todo[s:s + 256]):
                        self._readouts[k] = ro[i]
        gs = torch.stack([self._gstats[k] for k in keys]) if self.bundle.gstats is not None \
            else None
        return torch.stack([self._readouts[k] for k in keys]), gs

    def predict_arrays(self, jobs: Sequence[JobSpec]) -> tuple[np.ndarray, np.ndarray]:
        """(targets [n × T] in label units, oom_prob [n]) for ``jobs`` in one batched pass
        (before ``guard.limit``; run lengths outside the training domain as ``predict``)."""
        with torch_threads(self.threads):
            return self._predict_arrays(jobs)

    def _run_box(self) -> tuple[float, float, float, float] | None:
        """The training rows' (min, max) epochs and steps per epoch, if recorded."""
        if self.domain is None:
            return None
        names = list(self.domain["features"])
        lo, hi = self.domain["min"], self.domain["max"]
        e, s = names.index("log10_epochs"), names.index("log10_steps_per_epoch")
        return tuple(round(10 ** float(v), 6) for v in (lo[e], hi[e], lo[s], hi[s]))  # type: ignore[return-value]

    def _head(self, ro: Tensor, raw: Tensor, gs: Tensor | None) -> tuple[np.ndarray, np.ndarray]:
        """(targets in label units, clipped at 0; oom_prob) of readouts and raw contexts."""
        if self.bundle.train.get("steps_in_u") is False:
            from gpuscope.predictor.gnn.train import steps_out_of_u

            raw = steps_out_of_u(raw)
        with torch.no_grad():
            pred, logit = self.bundle.net.head_forward(ro, self.bundle.contexts.transform(raw),
                                                       gs)
        y = np.clip(self.bundle.labels.inverse(pred.double().numpy()), 0.0, None)
        return y, torch.sigmoid(logit).double().numpy()

    def _predict_arrays(self, jobs: Sequence[JobSpec]) -> tuple[np.ndarray, np.ndarray]:
        if not jobs:
            return np.zeros((0, len(self.targets))), np.zeros(0)
        from gpuscope.graphs import context_vector

        ctx_cache: dict[tuple, Tensor] = {}
        rows = []
        for j in jobs:
            key = (j.model, j.dataset, j.optimizer, j.batch_size, j.epochs, j.steps_per_epoch,
                   j.graph)
            if key not in ctx_cache:
                ctx_cache[key] = context_vector(j)
            rows.append(ctx_cache[key])
        raw = torch.stack(rows)
        ro, gs = self._readouts_for(jobs)
        y, p = self._head(ro, raw, gs)
        box = self._run_box()
        if box is not None:  # a run outside the trained run lengths: clamp it, then scale
            E = np.array([j.epochs for j in jobs], np.float64)
            P = np.array([j.steps for j in jobs], np.float64)
            Ec, Pc = np.clip(E, box[0], box[1]), np.clip(P, box[2], box[3])
            out = np.flatnonzero((Ec != E) | (Pc != P))
            if out.size:
                rc = raw[out].clone()
                rc[:, 1] = torch.as_tensor(Ec[out], dtype=rc.dtype)
                rc[:, 2] = torch.as_tensor(np.log10(Pc[out]), dtype=rc.dtype)
                rc[:, 3] = torch.as_tensor(np.log10(Ec[out] * Pc[out]), dtype=rc.dtype)
                yc, p[out] = self._head(ro[out], rc, gs[out] if gs is not None else None)
                if "exec_time_s" in self.targets:
                    k = self.targets.index("exec_time_s")
                    y[out, k] = yc[:, k] * (E[out] * P[out]) / (Ec[out] * Pc[out])
        seen = self.bundle.train.get("targets_seen")
        if seen is not None:  # a target never observed in training is not predicted
            y[:, [t not in seen for t in self.targets]] = np.nan
        return y, p

    def predict(self, jobs: Sequence[JobSpec]) -> pd.DataFrame:
        """One row per job, the columns of ``base.PREDICTION_COLUMNS`` (module docstring)."""
        y, p = self.predict_arrays(jobs)
        if self.domain is None:
            ok, why = np.ones(len(jobs), dtype=bool), [NO_DOMAIN] * len(jobs)
        else:
            X = domain_features([self.graphs[j.graph_key] for j in jobs], jobs,
                                str(self.bundle.encoding.get("features", "driple")))
            ok, why = out_of_domain(X, self.domain["features"], self.domain["min"],
                                    self.domain["max"])
        over, flagged, lim = limit(y, self.targets, self._capacity_mb)
        p = np.where(over, 1.0, p)
        df = pd.DataFrame(y, columns=list(self.targets)).reindex(columns=list(TARGETS))
        df.insert(0, "device", self.device)
        df.insert(0, "job_id", [j.job_id if j.job_id is not None else j.key for j in jobs])
        df["step_s"] = np.nan
        df["oom_prob"] = p
        df["oom"] = p > 0.5
        df["in_domain"] = ok & ~flagged
        df["domain_reason"] = join_reasons(lim, why)
        return df

    def save(self, path: str | Path, half: bool = False) -> Path:
        """Write the checkpoint (``save_checkpoint``; ``half``: float16 weights)."""
        return save_checkpoint(self.bundle, path, half=half)


def device_memory_mb(name: str) -> float | None:
    """The catalog device's memory in MB, None for a device the catalog lacks (a CPU)."""
    from gpuscope.cluster.devices import get_device

    try:
        return float(get_device(name).mem_mb)
    except InputError:
        return None
