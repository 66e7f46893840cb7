"""Training tables of the physics-informed predictor: label rows + their feature rows.

``load_physics([folder, ...])`` reads dataset folders (``labels.parquet``, design.md Labels;
``graphs.parquet`` is not needed: the features come from the job's OpGraph through
``GraphCache`` and the emulator) or corpus files (``corpus.parquet``, written by
``gpuscope.predictor.physics.corpus``, which already hold the feature columns) and returns a
:class:`PhysicsData`. Families (``gpuscope.jobs.spec.MODEL_FAMILY``, or the corpus's ``family``
column) drive the leave-family-out splits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gpuscope.core.errors import InputError
from gpuscope.core.provenance import (
    check_folder_labels,
    check_label_rows,
    check_labels,
    labels_file,
    one_provenance,
)
from gpuscope.core.targets import TARGETS
from gpuscope.jobs.spec import MODEL_FAMILY, JobSpec
from gpuscope.predictor.physics.analytic import LABEL_TARGETS
from gpuscope.predictor.physics.features import (
    ANALYTIC_COLUMNS,
    FEATURES,
    LABEL_FEATURES,
    FeatureBuilder,
)

_JOB_FIELDS = {f.name for f in fields(JobSpec)}
_EXTRA = ("precision", "grad_accum", "hf", "module", "graph")


def job_of(row: Any) -> JobSpec:
    """The JobSpec of a label row (tolerates columns this gpuscope's JobSpec lacks)."""
    kw: dict[str, Any] = {"model": str(row["model"]), "dataset": str(row["dataset"]),
                          "optimizer": str(row["optimizer"]),
                          "batch_size": int(row["batch_size"]), "epochs": int(row["epochs"])}
    spe = row.get("steps_per_epoch") if hasattr(row, "get") else None
    if spe is not None and not (isinstance(spe, float) and math.isnan(spe)) and not pd.isna(spe):
        kw["steps_per_epoch"] = int(spe)
    for k in _EXTRA:
        v = row.get(k) if hasattr(row, "get") else None
        if k in _JOB_FIELDS and v is not None and not (isinstance(v, float) and math.isnan(v)) \
                and str(v) != "":
            kw[k] = int(v) if k == "grad_accum" else str(v)
    return JobSpec(**kw)


def family_of(model: str) -> str:
    return MODEL_FAMILY.get(model, model)


@dataclass
class PhysicsData:
    """Label rows (``labels``: model, device, split, status, family, provenance, targets),
    their jobs and feature rows (``frame``: ``FEATURES`` + ``ANALYTIC_COLUMNS``)."""

    labels: pd.DataFrame
    jobs: list[JobSpec]
    frame: pd.DataFrame
    targets: tuple[str, ...] = TARGETS

    def __post_init__(self) -> None:
        self.labels = self.labels.reset_index(drop=True)
        self.frame = self.frame.reset_index(drop=True)
        if not (len(self.labels) == len(self.frame) == len(self.jobs)):
            raise ValueError("labels, jobs and features must have one row each")

    def __len__(self) -> int:
        return len(self.labels)

    def subset(self, rows: np.ndarray) -> PhysicsData:
        rows = np.asarray(rows, dtype=np.int64)
        return PhysicsData(self.labels.iloc[rows], [self.jobs[i] for i in rows],
                           self.frame.iloc[rows], self.targets)

    def Y(self) -> np.ndarray:
        """[n × T] labels; NaN where absent and for non-``ok`` runs."""
        y = np.full((len(self), len(self.targets)), np.nan)
        for j, t in enumerate(self.targets):
            if t in self.labels:
                y[:, j] = pd.to_numeric(self.labels[t], errors="coerce").to_numpy(np.float64)
        y[self.labels["status"].astype(str).to_numpy() != "ok"] = np.nan
        return y

    def total_steps(self) -> np.ndarray:
        return np.array([j.total_steps for j in self.jobs], dtype=np.float64)

    def groups(self) -> np.ndarray:
        return self.labels["family"].astype(str).to_numpy()

    def oom(self) -> np.ndarray:
        return (self.labels["status"].astype(str).to_numpy() == "oom").astype(int)

    def usable(self) -> np.ndarray:
        return self.labels["status"].astype(str).isin(("ok", "oom")).to_numpy()


def concat(parts: Sequence[PhysicsData]) -> PhysicsData:
    return PhysicsData(pd.concat([p.labels for p in parts], ignore_index=True),
                       [j for p in parts for j in p.jobs],
                       pd.concat([p.frame for p in parts], ignore_index=True),
                       parts[0].targets)


def from_labels(labels: pd.DataFrame, builder: FeatureBuilder | None = None,
                progress: bool = False) -> PhysicsData:
    """Feature rows for label rows (each job on its row's ``device``)."""
    builder = builder or FeatureBuilder()
    labels = labels.reset_index(drop=True).copy()
    jobs = [job_of(r) for r in labels.to_dict("records")]
    if "family" not in labels:
        labels["family"] = [family_of(m) for m in labels["model"].astype(str)]
    if "split" not in labels:
        labels["split"] = "train"
    frame = builder.frame(jobs, labels["device"].astype(str).tolist(), progress=progress)
    return PhysicsData(labels, jobs, frame)


def load_physics(paths: Sequence[str | Path], builder: FeatureBuilder | None = None,
                 progress: bool = False) -> PhysicsData:
    """Dataset folders and/or corpus parquet files → one :class:`PhysicsData`."""
    builder = builder or FeatureBuilder()
    parts, provs = [], []
    for p in map(Path, paths):
        corpus = labels_file(p)
        if corpus == p or corpus.name == "corpus.parquet":
            df = _read_parquet(corpus)
            # A corpus spans devices (multi-device by design), never provenances.
            _, prov = check_labels(df, f"corpus {corpus}", multi_device=True,
                                   provenance=None if "provenance" in df else "emulated")
            check_label_rows(df, f"corpus {corpus}", targets=("exec_time_s",))
            parts.append(from_corpus(df))
            provs.append(prov)
            continue
        labels = _read_parquet(corpus)
        # A dataset folder holds one device and one provenance (every row checked);
        # several folders make a multi-device model, of one provenance.
        _, prov = check_folder_labels(labels, p)
        check_label_rows(labels, f"dataset {p}")
        if (p / "vocab.json").is_file():  # a corrupt vocabulary is one line
            from gpuscope.graphs.vocab import OpVocabulary

            OpVocabulary.load(p / "vocab.json")
        labels["provenance"] = prov
        provs.append(prov)
        parts.append(from_labels(labels, builder, progress))
    if not parts:
        raise InputError("no dataset given")
    one_provenance(provs, ", ".join(map(str, paths)))
    return concat(parts)


def _read_parquet(path: Path) -> pd.DataFrame:
    """Labels (or a corpus) through the bounded reader, checked against the labels'
    columns (targets >= 0 and never infinite, counts positive)."""
    from gpuscope.core.io import read_parquet
    from gpuscope.core.provenance import LABEL_COLUMNS

    return read_parquet(path, "labels", schema=LABEL_COLUMNS)


def from_corpus(df: pd.DataFrame) -> PhysicsData:
    """Rows of a corpus file: label columns + stored feature columns (no graph export)."""
    df = df.copy()
    # A corpus built before the analytic labels lacks their columns; it labels
    # execution time only, whose model reads none of them: 0 as features (``l_*``), NaN as
    # analytic labels (``an_*``). Rebuilding the corpus fills them.
    late = [c for c in (*LABEL_FEATURES, *(f"an_{t}" for t in LABEL_TARGETS)) if c not in df]
    labelled = [t for t in LABEL_TARGETS if t in df and df[t].notna().any()]
    if late and not labelled:
        df = pd.concat([df, pd.DataFrame({c: 0.0 if c.startswith("l_") else np.nan
                                          for c in late}, index=df.index)], axis=1)
    missing = [c for c in (*FEATURES, *ANALYTIC_COLUMNS) if c not in df]
    if missing:
        raise InputError(f"corpus lacks feature column(s) {', '.join(missing[:3])}; rebuild it "
                         "with this gpuscope (`gpuscope predictor corpus`)")
    df = df.reset_index(drop=True)
    jobs = [job_of(r) for r in df.to_dict("records")]
    labels = df.drop(columns=[*FEATURES, *ANALYTIC_COLUMNS])
    return PhysicsData(labels, jobs, df[[*FEATURES, *ANALYTIC_COLUMNS]])
