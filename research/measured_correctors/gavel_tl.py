"""Transfer learning emulated → measured on Gavel's throughputs.

Gavel (Narayanan et al., OSDI 2020; MIT licence; ``datasets/measured/gavel-throughputs.csv``) measured the
steps per second of its job types running alone on one K80, P100 and V100. A job's measured
seconds per step is the inverse; its execution time is total steps × that, so the MAPE of the
step time *is* the execution-time MAPE of any Gavel job of that type.

Rows: every (job type, batch size) whose model is in gpuscope's catalog (``GAVEL_MODELS``),
on each Gavel GPU. Label: the per-step log-correction c = log(t_measured / t_analytic) of the
emulator's estimate (``physics.STEP_FEATURES`` are the inputs).

The held-out protocol and the correctors (shrunk toward the emulator, and the MLP pretrained
here by ``pretrain`` and fine-tuned with an L2 pull, anchor 1.0) are in
``research.measured_correctors.residual_tl``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gpuscope.core.data import gavel_entries, gavel_throughputs, parse_job_type
from gpuscope.core.errors import InputError
from gpuscope.emulator.calibration.fidelity import GAVEL_FAMILIES, GavelJob, gavel_graph
from gpuscope.jobs.spec import JobSpec
from gpuscope.predictor.physics.features import STEP_FEATURES, FeatureBuilder
from gpuscope.predictor.physics.mlp import MaskedMLP


def load_gavel(path: str | Path | None = None) -> pd.DataFrame:
    """``job_type, family, device, batch_size, step_s`` (measured, one GPU, running alone)."""
    raw = gavel_throughputs(path)
    rows = []
    for dev, jt, n, val in gavel_entries(raw):
        if n != 1 or not val.get("null"):
            continue
        fam, bs = parse_job_type(jt)
        rows.append({"job_type": jt, "family": fam, "device": dev, "batch_size": bs,
                     "step_s": 1.0 / float(val["null"]), "provenance": "measured"})
    return pd.DataFrame(rows)


def gavel_job(family: str, batch_size: int) -> JobSpec | GavelJob | None:
    """The job of a Gavel job type (``GAVEL_FAMILIES``; batch 1 where Gavel names none: CycleGAN,
    A3C), or None when gpuscope has no model for it."""
    if family not in GAVEL_FAMILIES:
        return None
    model, dataset, opt = GAVEL_FAMILIES[family]
    b = batch_size or 1
    if model == "resnet50":
        return JobSpec(model=model, dataset=dataset, optimizer=opt, batch_size=b, epochs=1,
                       steps_per_epoch=1)
    return GavelJob(model, dataset, opt, b)


def gavel_source(job: Any) -> Any:
    """OpGraph of a Gavel job: the catalog's export (ResNet-50) or the traced Gavel step."""
    if not isinstance(job, GavelJob):
        from gpuscope.graphs import GraphCache

        return GraphCache().get_or_export(job)
    return gavel_graph(job.model, job.batch_size, name=job.graph_key)


@dataclass
class GavelData:
    """Measured Gavel rows gpuscope can represent, with their feature rows."""

    rows: pd.DataFrame
    frame: pd.DataFrame

    @property
    def correction(self) -> np.ndarray:
        return np.log(self.rows["step_s"].to_numpy() / self.frame["an_iter_s"].to_numpy())


def gavel_data(builder: FeatureBuilder | None = None, path: str | Path | None = None
               ) -> GavelData:
    """Measured rows and their features (graphs traced by ``gavel_source``)."""
    builder = builder or FeatureBuilder(source=gavel_source)
    df = load_gavel(path)
    keep, jobs = [], []
    for i, r in df.iterrows():
        j = gavel_job(str(r["family"]), int(r["batch_size"]))
        if j is not None:
            keep.append(i)
            jobs.append(j)
    rows = df.loc[keep].reset_index(drop=True)
    if rows.empty:
        raise InputError("no Gavel job type maps to a catalog model")
    frame = builder.frame(jobs, rows["device"].tolist())  # type: ignore[arg-type]
    return GavelData(rows, frame)


def pretrain(frame: pd.DataFrame, correction: np.ndarray, seed: int = 0,
             epochs: int = 400) -> dict[str, Any]:
    """An MLP on emulated rows' per-step corrections (its state: the ``tl-mlp`` source of ``residual_tl.curve``)."""
    X = frame[list(STEP_FEATURES)].to_numpy(np.float64)
    return MaskedMLP(epochs=epochs, random_state=seed).fit(X, correction[:, None]).get_state()
