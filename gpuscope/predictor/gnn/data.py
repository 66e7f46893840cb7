"""A predictor dataset in memory: label rows, their encoded graphs and context vectors.

Read from a dataset folder ``datasets/<provenance>/<device>/`` (docs/design.md, Datasets):
``labels.parquet`` (one row per run), ``graphs.parquet`` (encoded graphs keyed by
``graph_key``, read with ``gpuscope.graphs.load_encoded``), ``vocab.json`` and
``manifest.json``. The context ``u`` of each row is ``gpuscope.graphs.context_vector(job)``
of the row's JobSpec (epochs and steps are not part of the graph).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import Tensor
from torch_geometric.data import Data

from gpuscope.core.errors import InputError
from gpuscope.core.io import read_bytes, read_parquet, read_text
from gpuscope.core.provenance import (
    LABEL_COLUMNS,
    check_folder_labels,
    check_label_rows,
    manifest_of,
)
from gpuscope.jobs.spec import JobSpec

#: Label columns that identify a run's job (design.md, Labels).
JOB_COLUMNS: tuple[str, ...] = ("model", "dataset", "optimizer", "batch_size", "epochs",
                                "steps_per_epoch")


@dataclass
class PredictorData:
    """Label rows + encoded graphs + raw (unscaled) context vectors of one device.

    Attributes:
        labels: label rows, index 0..n-1 (design.md Labels columns; ``split``, ``status``).
        graphs: graph_key → ``Data(x, edge_index)`` (raw features).
        contexts: [n × CONTEXT_DIM] raw context vectors, one per label row.
        device: device name; provenance: ``measured`` or ``emulated``.
        vocab_json: the dataset's op vocabulary (JSON text), stored in checkpoints.
        fingerprint: sha256 over the dataset's files (or the in-memory content).
    """

    labels: pd.DataFrame
    graphs: dict[str, Data]
    contexts: Tensor
    device: str
    provenance: str = "emulated"
    vocab_json: str = "{}"
    fingerprint: str = ""
    encoding: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self.labels = self.labels.reset_index(drop=True)
        if len(self.labels) != self.contexts.shape[0]:
            raise ValueError("one context vector per label row is needed")
        missing = sorted(set(self.labels["graph_key"]) - set(self.graphs))
        if missing:
            raise InputError(f"dataset {self.device}: no encoded graph for {missing[0]!r} "
                             f"(and {len(missing) - 1} more)" if len(missing) > 1 else
                             f"dataset {self.device}: no encoded graph for {missing[0]!r}")
        if not self.fingerprint:
            self.fingerprint = content_fingerprint(self.labels, self.graphs)
        if self.encoding is None:
            self.encoding = default_encoding(self.graphs)

    def __len__(self) -> int:
        return len(self.labels)

    def subset(self, rows: np.ndarray) -> PredictorData:
        rows = np.asarray(rows, dtype=np.int64)
        lab = self.labels.iloc[rows].reset_index(drop=True)
        keys = set(lab["graph_key"])
        return PredictorData(lab, {k: g for k, g in self.graphs.items() if k in keys},
                             self.contexts[torch.as_tensor(rows)], self.device,
                             self.provenance, self.vocab_json, self.fingerprint,
                             self.encoding)

    def targets(self, names: tuple[str, ...]) -> np.ndarray:
        """[n × T] labels of ``names``; NaN where absent, and for non-``ok`` runs (an OOM
        run's time to failure is not an execution time)."""
        y = np.full((len(self), len(names)), np.nan)
        for j, t in enumerate(names):
            if t in self.labels:
                y[:, j] = pd.to_numeric(self.labels[t], errors="coerce").to_numpy(np.float64)
        if "status" in self.labels:
            y[self.labels["status"].astype(str).to_numpy() != "ok"] = np.nan
        return y

    def total_steps(self) -> np.ndarray:
        """Training steps of each row's run (epochs × steps per epoch)."""
        return np.array([job_from_row(r).total_steps for _, r in self.labels.iterrows()],
                        dtype=np.float64)

    def oom_labels(self) -> tuple[np.ndarray, np.ndarray]:
        """(is_oom 0/1, usable) per row: the OOM head learns from ok and oom runs."""
        status = self.labels.get("status", pd.Series(["ok"] * len(self))).astype(str).to_numpy()
        return (status == "oom").astype(np.float64), np.isin(status, ("ok", "oom"))


def default_encoding(graphs: dict[str, Data]) -> dict[str, Any]:
    """How the graphs were encoded (``gpuscope.graphs.encoding``'s ``k`` and ``features``),
    when the manifest does not say: K = 100 (design.md) and the feature mode whose width
    matches ``x``."""
    from gpuscope.graphs.encoding import FEATURES

    width = next(iter(graphs.values())).x.shape[1] if graphs else 3
    mode = next((m for m, f in FEATURES.items() if len(f) == width), "driple")
    return {"k": 100, "features": mode}


def job_from_row(row: Any) -> JobSpec:
    """The JobSpec of a label row (``steps_per_epoch`` NaN → None)."""
    spe = row["steps_per_epoch"] if "steps_per_epoch" in row else None
    spe = None if spe is None or (isinstance(spe, float) and math.isnan(spe)) or pd.isna(spe) \
        else int(spe)
    make = partial(JobSpec, model=str(row["model"]), dataset=str(row["dataset"]),
                   optimizer=str(row["optimizer"]), batch_size=int(row["batch_size"]),
                   epochs=int(row["epochs"]), steps_per_epoch=spe)
    try:
        return make()
    except InputError:  # a user-supplied graph's run: the model name is the graph's stem
        return make(graph=f"{row['model']}.json")


def contexts_for(labels: pd.DataFrame) -> Tensor:
    """Context vectors of label rows, one ``context_vector`` call per distinct job."""
    from gpuscope.graphs.encoding import context_vector

    cache: dict[tuple, Tensor] = {}
    out = []
    for _, row in labels.iterrows():
        job = job_from_row(row)
        key = (job.model, job.dataset, job.optimizer, job.batch_size, job.epochs,
               job.steps_per_epoch)
        if key not in cache:
            cache[key] = torch.as_tensor(context_vector(job), dtype=torch.float32).flatten()
        out.append(cache[key])
    return torch.stack(out) if out else torch.zeros((0, 0))


def file_fingerprint(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.name.encode())
        h.update(read_bytes(p, "dataset file"))
    return h.hexdigest()[:16]


def content_fingerprint(labels: pd.DataFrame, graphs: dict[str, Data]) -> str:
    h = hashlib.sha256()
    h.update(pd.util.hash_pandas_object(labels.astype(str), index=False).to_numpy().tobytes())
    for k in sorted(graphs):
        h.update(k.encode())
        h.update(graphs[k].x.detach().numpy().tobytes())
    return h.hexdigest()[:16]


def load_dataset(path: str | Path) -> PredictorData:
    """Read a dataset folder into :class:`PredictorData` (InputError naming what is wrong)."""
    from gpuscope.graphs import load_encoded

    path = Path(path)
    labels_p, graphs_p = path / "labels.parquet", path / "graphs.parquet"
    for p in (labels_p, graphs_p):
        if not p.exists():
            raise InputError(f"dataset {path}: {p.name} is missing")
    labels = read_parquet(labels_p, "labels", schema=LABEL_COLUMNS)
    need = {"graph_key", "device", "status", *JOB_COLUMNS[:5]}
    missing = sorted(need - set(labels.columns))
    if missing:
        raise InputError(f"dataset {path}: labels.parquet lacks column(s) {', '.join(missing)}")
    if labels.empty:
        raise InputError(f"dataset {path}: labels.parquet holds no rows")
    if "split" not in labels:
        labels["split"] = "train"
    graphs = load_encoded(graphs_p)
    manifest = manifest_of(path)
    vocab_json = "{}"
    if (path / "vocab.json").is_file():
        from gpuscope.graphs import OpVocabulary

        OpVocabulary.load(path / "vocab.json")  # a corrupt one is one line now, not in predict
        vocab_json = read_text(path / "vocab.json", "op vocabulary")
    # Every row's device and provenance, never row 0's (one line when mixed).
    device, provenance = check_folder_labels(labels, path)
    check_label_rows(labels, f"dataset {path}")
    encoding = default_encoding(graphs)
    enc_raw = manifest.get("encoding")
    enc: dict[str, Any] = enc_raw if isinstance(enc_raw, dict) else manifest
    for key in ("k", "features", "grouping"):
        if key in enc and isinstance(enc[key], (int, str)):
            encoding[key] = enc[key]
    return PredictorData(labels, graphs, contexts_for(labels), device, provenance, vocab_json,
                         file_fingerprint([labels_p, graphs_p]), encoding)
