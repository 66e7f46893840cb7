"""Shrunk corrections of the emulator on measured step times.

The learnt part of the measured predictor is a correction ĉ of the emulator's per-step
estimate, ``t_step = t_analytic × exp(ĉ)``. With a handful of measured models, a free
correction (the fine-tuned MLP of ``gavel_tl``) does worse on a held-out model than no
correction at all (CHANGELOG.md has the figures). Every corrector here is therefore *shrunk toward a
prior* — zero (the emulator alone) or what the emulated corpus says — by as much as
leave-group-out cross-validation on the **training** groups asks for; held-out rows are never
seen by any choice.

Correctors (``METHODS``):

* ``emulator``: ĉ = 0.
* ``ridge``: ridge regression of c on the standardised ``STEP_FEATURES`` with the intercept
  penalised too (Gaussian prior at 0 on every coefficient); λ from {10⁻³ … 10³, ∞} × rows
  by leave-one-group-out CV; λ = ∞ is the emulator alone.
* ``ridge-tl``: the same, with the prior centred on a ridge fitted to the emulated corpus's
  corrections (``source_prior``): transfer learning as a prior mean.
* ``gbt``: gradient-boosted trees on c (100 × depth ≤ 2, 4 leaves, ≥ 3 rows a leaf), the
  prediction scaled by s ∈ {0, ¼, ½, ¾, 1} chosen by the same CV (s = 0: the emulator).
* ``breakdown``: ``breakdown_tl.BreakdownRidge`` — the same shrunk ridge on model-agnostic
  inputs (the emulator's time shares, kernel size and rate, bottleneck, device specs, log
  batch), λ by a paired one-SE rule toward the emulator.
* ``auto``: whichever of emulator / ridge / ridge-tl / gbt / breakdown has the lowest
  leave-group-out MAPE on the training groups — but a corrector replaces the emulator only
  when it beats it by more than one standard error of the per-group differences
  (conservative: the tuned candidates' CV scores are slightly optimistic).
* ``scratch``: no emulator — gradient-boosted trees on log step time from the graph, device
  and context features only (``SCRATCH_FEATURES``), trained on the measured rows.

Protocol (``curve``): hold out one group (a model, or a model family) at a time; from the
other groups keep a seeded fraction f of the rows; fit; score the held-out group's step-time
MAPE. Summaries: per seed the mean over held-out groups, then mean ± 95 % Student-t interval
over seeds (``v2eval.ci95``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from gpuscope.core.errors import InputError
from gpuscope.predictor.physics.features import (
    CONTEXT_FEATURES,
    DEVICE_FEATURES,
    GRAPH_FEATURES,
    STEP_FEATURES,
    FeatureBuilder,
)
from research.measured_correctors.breakdown_tl import BreakdownRidge
from research.measured_correctors.correctors import (  # noqa: F401 - re-exported (tests, benchmarks)
    LAMBDAS,
    SHRINKS,
    Auto,
    Corrector,
    LinearPrior,
    Ridge,
    Scratch,
    ShrunkGBT,
    Zero,
    group_mape,
    logo_folds,
    one_thread,
    ridge_theta,
    source_prior,
)

SCRATCH_FEATURES: tuple[str, ...] = GRAPH_FEATURES + DEVICE_FEATURES + CONTEXT_FEATURES
METHODS: tuple[str, ...] = ("emulator", "ridge", "ridge-tl", "gbt", "breakdown", "auto",
                             "scratch")
H100_COLUMNS: tuple[str, ...] = ("model", "dataset", "optimizer", "batch_size", "precision",
                                 "status", "step_s")


@dataclass
class MeasuredSet:
    """Measured per-step times with their feature rows; ``group`` drives the held-out splits."""

    name: str
    rows: pd.DataFrame  # group, device, step_s (+ descriptive columns)
    frame: pd.DataFrame  # physics.FEATURES + ANALYTIC_COLUMNS, one row per measured row

    @property
    def correction(self) -> np.ndarray:
        return np.log(self.rows["step_s"].to_numpy(np.float64)
                      / self.frame["an_iter_s"].to_numpy(np.float64))


def gavel_set(builder: FeatureBuilder | None = None) -> MeasuredSet:
    """Gavel's measured k80/p100/v100 rows; one group per model (leave-model-out)."""
    from research.measured_correctors.gavel_tl import gavel_data, gavel_source

    gd = gavel_data(builder or FeatureBuilder(source=gavel_source))
    rows = gd.rows.assign(group=gd.rows["family"].astype(str))
    return MeasuredSet("gavel", rows, gd.frame)


def h100_set(path: str | Path, device: str = "h100",
             builder: FeatureBuilder | None = None) -> MeasuredSet:
    """Real step times of ``datasets/measured/h100-steps.csv`` (``status == ok`` rows) with
    the emulator's estimate on catalog device ``device``; one group per model family
    (``gpuscope.jobs.spec.MODEL_FAMILY``: leave-family-out)."""
    from gpuscope.jobs.spec import MODEL_FAMILY, JobSpec

    p = Path(path)
    try:
        df = pd.read_csv(p)
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read measured step times {p}: {type(e).__name__}") from None
    missing = [c for c in H100_COLUMNS if c not in df]
    if missing:
        raise InputError(f"{p}: missing column(s) {', '.join(missing)}")
    df = df[df["status"].astype(str) == "ok"].reset_index(drop=True)
    step = pd.to_numeric(df["step_s"], errors="coerce")
    if df.empty or not (np.isfinite(step) & (step > 0)).all():
        raise InputError(f"{p}: no rows, or a step_s that is not a positive number")
    jobs = [JobSpec(model=str(r.model), dataset=str(r.dataset), optimizer=str(r.optimizer),
                    batch_size=int(r.batch_size), precision=str(r.precision), epochs=1,
                    steps_per_epoch=1) for r in df.itertuples()]
    frame = (builder or FeatureBuilder()).frame(jobs, [device] * len(jobs))
    rows = df.assign(step_s=step, device=device,
                     group=[MODEL_FAMILY.get(m, m) for m in df["model"].astype(str)])
    return MeasuredSet("h100", rows, frame)


# -- the held-out protocol -----------------------------------------------------------------

def correctors(prior: LinearPrior | None, seed: int
               ) -> dict[str, Callable[[], Corrector | BreakdownRidge]]:
    """The shrunk candidates (``ridge-tl`` only with a source prior)."""
    out: dict[str, Callable[[], Corrector | BreakdownRidge]] = {
        "ridge": lambda: Ridge(), "gbt": lambda: ShrunkGBT(seed),
        "breakdown": lambda: BreakdownRidge()}
    if prior is not None:
        out["ridge-tl"] = lambda: Ridge(prior)
    return out


def curve(ms: MeasuredSet, prior: LinearPrior | None = None,
          fractions: Sequence[float] = (0.1, 0.25, 0.5, 1.0), seeds: Sequence[int] = (0, 1, 2),
          mlp_source: dict | None = None) -> pd.DataFrame:
    """Long table ``set, held_out, fraction, seed, method, mape_pct, train_rows, choice``
    (module docstring). ``mlp_source``: a ``gavel_tl.pretrain`` state, adds the previous
    protocol's ``scratch-mlp`` and ``tl-mlp`` (MLP fine-tuned with an L2 pull, anchor 1)."""
    with one_thread():
        return _curve(ms, prior, fractions, seeds, mlp_source)


def _curve(ms: MeasuredSet, prior: LinearPrior | None, fractions: Sequence[float],
           seeds: Sequence[int], mlp_source: dict | None) -> pd.DataFrame:
    X = ms.frame[list(STEP_FEATURES)].to_numpy(np.float64)
    Xs = ms.frame[list(SCRATCH_FEATURES)].to_numpy(np.float64)
    c = ms.correction
    logt = np.log(ms.rows["step_s"].to_numpy(np.float64))
    base = logt - c  # log analytic step time
    grp = ms.rows["group"].astype(str).to_numpy()
    out: list[dict] = []

    def add(held: str, f: float, s: int, method: str, pred_c: np.ndarray, te: np.ndarray,
            n: int, choice: str = "") -> None:
        err = np.abs(np.exp(pred_c - c[te]) - 1.0)
        out.append({"set": ms.name, "held_out": held, "fraction": f, "seed": s,
                    "method": method, "mape_pct": float(100 * err.mean()), "train_rows": n,
                    "choice": choice})

    for held in sorted(set(grp)):
        te = np.flatnonzero(grp == held)
        pool = np.flatnonzero(grp != held)
        add(held, 0.0, -1, "emulator", np.zeros(te.size), te, 0)
        for f in fractions:
            for s in seeds:
                rng = np.random.default_rng(1000 * s + int(round(f * 100)))
                k = min(pool.size, max(2, round(f * pool.size)))
                tr = np.sort(rng.choice(pool, size=k, replace=False))
                fitted = {name: make().fit(X[tr], c[tr], grp[tr])
                          for name, make in correctors(prior, s).items()}
                for name, m in fitted.items():
                    add(held, f, s, name, m.predict(X[te]), te, k, m.choice)
                a = Auto(fitted).fit(X[tr], c[tr], grp[tr])
                add(held, f, s, "auto", a.predict(X[te]), te, k, a.choice)
                sc = Scratch(s).fit(Xs[tr], logt[tr])
                add(held, f, s, "scratch", sc.predict(Xs[te]) - base[te], te, k)
                if mlp_source is not None:
                    from gpuscope.predictor.physics.mlp import MaskedMLP

                    m1 = MaskedMLP(random_state=s).fit(X[tr], c[tr, None])
                    add(held, f, s, "scratch-mlp", m1.predict(X[te])[:, 0], te, k)
                    m2 = MaskedMLP(epochs=100, lr=1e-3, l2_to_init=1.0, random_state=s)
                    m2.fit(X[tr], c[tr, None], init=mlp_source)
                    add(held, f, s, "tl-mlp", m2.predict(X[te])[:, 0], te, k)
    return pd.DataFrame(out)




def summarise(long: pd.DataFrame) -> pd.DataFrame:
    """Per (set, method, fraction): mean over held-out groups per seed, then mean ± 95 %
    interval over seeds (``emulator`` has no seed: its interval is NaN)."""
    from gpuscope.predictor.evaluation import ci95

    per_seed = long.groupby(["set", "method", "fraction", "seed"])["mape_pct"].mean()
    rows = []
    for (st, m, f), g in per_seed.groupby(level=[0, 1, 2]):
        mean, half = ci95(g.to_numpy())
        sub = long[(long["set"] == st) & (long["method"] == m) & (long["fraction"] == f)]
        rows.append({"set": st, "method": m, "fraction": f, "mape_pct": mean,
                     "ci95": half, "groups": int(sub["held_out"].nunique()),
                     "median_group_pct": float(sub.groupby("held_out")["mape_pct"].mean()
                                               .median())})
    return pd.DataFrame(rows)


def source_from(frame: pd.DataFrame, c: np.ndarray, groups: np.ndarray) -> LinearPrior:
    """``source_prior`` of emulated rows (finite corrections only)."""
    ok = np.isfinite(c)
    X = frame[list(STEP_FEATURES)].to_numpy(np.float64)[ok]
    return source_prior(X, c[ok], np.asarray(groups)[ok])
