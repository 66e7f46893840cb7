"""The physics-informed predictor: per target, a correction learnt on top of the emulator's
analytic estimate, by whichever model wins on held-out model families.

Label spaces (``target_space``):

* ``exec_time_s`` → ``step``: the per-step log-correction ĉ = log(t_step / t_step_analytic)
  (``physics.step_correction``); execution time is composed back with the analytic overhead
  and the job's total steps (``physics.compose_exec``), so it extrapolates in run length;
* percentage peaks → ``pct`` (value / 100), ``gpu_mem_peak`` → ``cap`` (MB / device memory):
  bounded shares, clipped to [0, 1] on output, so no peak exceeds its capacity;
* burst and idle durations → ``log1p`` seconds.

Every target has an analytic estimate (``analytic``: the label rules in closed form on the
run's phase structure; ĉ = 0 for execution time), and a learner predicts the label-space
**correction** to it.

Candidate models per target: ``analytic`` (the emulator alone),
``gbt`` (``HistGradientBoostingRegressor`` on the features), ``mlp`` (``MaskedMLP``, one
network per feature set). With ``kinds="auto"`` the winner per target is chosen by 3-fold
leave-family-out cross-validation on the training rows (``select_kinds``: MSE of the
label-space value; the analytic estimate unless a learner beats it by 10 %) and refitted on
all training rows. The per-step model never reads the run length
(``physics.STEP_FEATURES``); run-length targets do.

OOM: ``oom_prob`` from a boosted classifier when the training rows hold both outcomes; the
final ``oom`` is that prediction OR the emulator's memory model saying the job does not fit.
The training range of every input is kept (``domain_``) for the domain guard.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch
from sklearn.base import BaseEstimator
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from threadpoolctl import threadpool_limits

from gpuscope.core.targets import TARGETS
from gpuscope.predictor.guard import out_of_domain
from gpuscope.predictor.physics.features import FEATURES, STEP_FEATURES
from gpuscope.predictor.physics.mlp import MaskedMLP
from gpuscope.predictor.physics.targets import (
    LABEL_VERSION,
    analytic_z,
    decode_targets,
    encode_targets,
    has_analytic,
    target_space,
)
from gpuscope.predictor.physics.trees import pack_hgb, predict_packed

KINDS: tuple[str, ...] = ("analytic", "gbt", "mlp")
__all__ = ["KINDS", "LABEL_VERSION", "HybridModel", "analytic_z", "decode_targets",
           "encode_targets", "has_analytic", "target_space"]


class HybridModel(BaseEstimator):
    """Per-target correction models on physics features (module docstring).

    Args:
        targets: target names (``gpuscope.core.targets.TARGETS`` by default).
        kinds: ``"auto"`` or a model kind for every target, or a dict target → kind.
        gbt_iter, gbt_lr, gbt_leaves, gbt_min_leaf: the boosted trees.
        mlp_epochs, mlp_hidden: the MLP.
        min_labels: targets observed on fewer training rows get no learnt correction: they
            are predicted by their analytic label alone (kind ``analytic``, listed in
            ``few_labels_``); targets never observed (a CPU dataset's GPU targets) are NaN.
        random_state: seed of the inner split and the models.
    """

    def __init__(self, targets: tuple[str, ...] = TARGETS, kinds: Any = "auto",
                 gbt_iter: int = 200, gbt_lr: float = 0.05, gbt_leaves: int = 15,
                 gbt_min_leaf: int = 5, mlp_epochs: int = 400, mlp_hidden: int = 64,
                 min_labels: int = 10, random_state: int = 0) -> None:
        self.targets = targets
        self.kinds = kinds
        self.gbt_iter = gbt_iter
        self.gbt_lr = gbt_lr
        self.gbt_leaves = gbt_leaves
        self.gbt_min_leaf = gbt_min_leaf
        self.mlp_epochs = mlp_epochs
        self.mlp_hidden = mlp_hidden
        self.min_labels = min_labels
        self.random_state = random_state

    # -- fitting ---------------------------------------------------------------------------
    @staticmethod
    def feature_set(t: str) -> tuple[str, ...]:
        return STEP_FEATURES if t == "exec_time_s" else FEATURES

    def _gbt(self, X: np.ndarray, z: np.ndarray) -> dict[str, Any]:
        # early stopping on a seeded 15 % of the rows: easy targets keep a few trees
        m = HistGradientBoostingRegressor(
            max_iter=self.gbt_iter, learning_rate=self.gbt_lr, max_leaf_nodes=self.gbt_leaves,
            min_samples_leaf=self.gbt_min_leaf, random_state=self.random_state,
            early_stopping=len(z) >= 100, validation_fraction=0.15, n_iter_no_change=15)
        with threadpool_limits(1):
            return pack_hgb(m.fit(X, z))

    def _mlp(self, X: np.ndarray, Z: np.ndarray) -> MaskedMLP:
        return MaskedMLP(hidden=self.mlp_hidden, epochs=self.mlp_epochs,
                         random_state=self.random_state).fit(X, Z)

    def _fit_kind(self, kind: str, frame: pd.DataFrame, Z: np.ndarray, cols: list[int]
                  ) -> dict[int, Any]:
        """Fitted models of ``kind`` for target columns ``cols`` (index → model)."""
        out: dict[int, Any] = {}
        if kind == "analytic":
            return {j: None for j in cols}
        groups: dict[tuple[str, ...], list[int]] = {}
        for j in cols:
            groups.setdefault(self.feature_set(self.targets[j]), []).append(j)
        for fs, js in groups.items():
            X = frame[list(fs)].to_numpy(np.float64)
            if kind == "mlp":
                m = self._mlp(X, Z[:, js])
                for j in js:
                    out[j] = ("mlp", fs, m, js.index(j))
                continue
            for j in js:
                ok = np.isfinite(Z[:, j])
                out[j] = ("gbt", fs, self._gbt(X[ok], Z[ok, j]), 0)
        return out

    def _base(self, frame: pd.DataFrame, j: int) -> np.ndarray:
        """What a learner's output is added to: the analytic label."""
        return np.nan_to_num(analytic_z(frame, self.targets[j]), nan=0.0)

    def _predict_one(self, frame: pd.DataFrame, j: int, spec: Any,
                     cache: dict[int, np.ndarray]) -> np.ndarray:
        if spec is None:
            return analytic_z(frame, self.targets[j])
        kind, fs, m, col = spec
        base = self._base(frame, j)
        X = frame[list(fs)].to_numpy(np.float64)
        if kind == "gbt":
            return base + predict_packed(m, X)
        if id(m) not in cache:
            cache[id(m)] = m.predict(X)
        return base + cache[id(m)][:, col]

    def _kinds_for(self, seen: list[int]) -> dict[int, list[str]]:
        if isinstance(self.kinds, dict):
            return {j: [self.kinds.get(self.targets[j], "gbt")] for j in seen}
        if self.kinds != "auto":
            return {j: [str(self.kinds) if self.kinds != "analytic" or
                        has_analytic(self.targets[j]) else "gbt"] for j in seen}
        return {j: (["analytic", "gbt", "mlp"] if has_analytic(self.targets[j])
                    else ["gbt", "mlp"]) for j in seen}

    def fit(self, frame: pd.DataFrame, Y: np.ndarray, total_steps: np.ndarray,
            groups: np.ndarray | None = None, oom: np.ndarray | None = None) -> HybridModel:
        """Fit on feature ``frame`` (``FeatureBuilder.frame``), labels ``Y`` [n × T] (NaN:
        unobserved), run lengths, model families ``groups`` (inner split) and OOM outcomes."""
        frame = frame.reset_index(drop=True)
        self.label_version_ = LABEL_VERSION
        self.features_ = list(FEATURES)
        Z = encode_targets(frame, np.asarray(Y, np.float64), tuple(self.targets), total_steps)
        # what the learners fit: the label-space residual of the analytic label
        R = Z - np.column_stack([self._base(frame, j) for j in range(len(self.targets))])
        counts = np.isfinite(Z).sum(axis=0)
        seen = [j for j in range(len(self.targets)) if counts[j] >= self.min_labels]
        # observed, but too rarely to learn a correction from: the analytic label alone
        # (a small campaign on a new GPU still gets every target it measured)
        few = [j for j in range(len(self.targets)) if 0 < counts[j] < self.min_labels
               and has_analytic(self.targets[j])]
        self.few_labels_ = [self.targets[j] for j in few]
        cand = self._kinds_for(seen)
        chosen: dict[int, str] = {j: c[0] for j, c in cand.items()}
        self.val_mse_: dict[str, dict[str, float]] = {}
        if any(len(c) > 1 for c in cand.values()):
            chosen, self.val_mse_ = select_kinds(self, frame, Z, R, cand, groups)
        self.zmax_ = np.array([
            np.nanmax(Z[:, j]) + np.log(10.0) if target_space(t) == "log1p"
            and np.isfinite(Z[:, j]).any() else np.inf for j, t in enumerate(self.targets)])
        chosen.update({j: "analytic" for j in few})
        learnt = sorted(seen + few)
        self.models_: dict[int, Any] = {}
        for kind in KINDS:
            cols = [j for j in learnt if chosen[j] == kind]
            if cols:
                self.models_.update(self._fit_kind(kind, frame, R, cols))
        self.chosen_ = {self.targets[j]: chosen[j] for j in learnt}
        feats = frame[self.features_].to_numpy(np.float64)
        self.domain_ = {"min": np.nanmin(feats, 0), "max": np.nanmax(feats, 0)}
        self.oom_model_ = None
        if oom is not None and len(set(np.asarray(oom, int).tolist())) == 2:
            c = HistGradientBoostingClassifier(max_iter=100, learning_rate=0.1,
                                               max_leaf_nodes=7, random_state=self.random_state)
            with threadpool_limits(1):
                self.oom_model_ = pack_hgb(c.fit(feats, np.asarray(oom, int)))
        return self

    @staticmethod
    def _pick(mse: dict[str, float], folds: dict[str, list[float]] | None = None) -> str:
        """The lowest validation MSE; the analytic estimate (no learnt correction) unless a
        learner beats it by 10 % overall and on every inner fold of families (parsimony: on
        a few families a correction is mostly noise; a few rows where the analytic label
        takes the other side of a bistable k-means split dominate an overall MSE)."""
        best = min(mse.items(), key=lambda kv: kv[1])[0]
        if "analytic" in mse and best != "analytic":
            if mse[best] > 0.9 * mse["analytic"]:
                return "analytic"
            fb, fa = (folds or {}).get(best), (folds or {}).get("analytic")
            if fb and fa and len(fb) == len(fa) and any(b >= a for b, a in zip(fb, fa)):
                return "analytic"
        return best

    # -- inference -------------------------------------------------------------------------
    def predict_z(self, frame: pd.DataFrame) -> np.ndarray:
        frame = frame.reset_index(drop=True)
        Z = np.full((len(frame), len(self.targets)), np.nan)
        cache: dict[int, np.ndarray] = {}
        for j, spec in self.models_.items():
            Z[:, j] = self._predict_one(frame, j, spec, cache)
        return Z

    def predict(self, frame: pd.DataFrame, total_steps: np.ndarray) -> np.ndarray:
        """[n × T] predictions in label units (NaN for targets never learnt)."""
        frame = frame.reset_index(drop=True)
        return self.decode(frame, self.predict_z(frame), total_steps)

    def decode(self, frame: pd.DataFrame, Z: np.ndarray, total_steps: np.ndarray
               ) -> np.ndarray:
        """Label units from label-space predictions ``Z`` (``predict_z``) of ``frame``."""
        return decode_targets(frame, Z, tuple(self.targets), total_steps,
                              getattr(self, "zmax_", None))

    def step_time(self, frame: pd.DataFrame) -> np.ndarray:
        """Predicted seconds per training step (analytic × exp(ĉ))."""
        it = frame["an_iter_s"].to_numpy(np.float64)
        if "exec_time_s" not in self.targets:
            return it
        j = list(self.targets).index("exec_time_s")
        if j not in self.models_:
            return it
        return it * np.exp(np.clip(self._predict_one(frame.reset_index(drop=True), j,
                                                     self.models_[j], {}), -5, 5))

    def oom_proba(self, frame: pd.DataFrame) -> np.ndarray:
        """P(out of memory): the classifier, raised to 1 where the emulator's memory model
        says the job does not fit."""
        fits = frame["an_fits"].to_numpy(np.float64) > 0.5
        if self.oom_model_ is None:
            p = np.where(fits, 0.0, 1.0)
        else:
            logit = predict_packed(self.oom_model_, frame[self._features].to_numpy(np.float64))
            p = 1.0 / (1.0 + np.exp(-logit))
        return np.where(fits, p, 1.0)

    def domain(self, frame: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
        """(in_domain per row, reason per row): ``guard.out_of_domain`` of the inputs against
        their training ranges."""
        return out_of_domain(frame[self._features].to_numpy(np.float64), self._features,
                             self.domain_["min"], self.domain_["max"])

    @property
    def _features(self) -> list[str]:
        """The inputs of the domain guard and the OOM classifier (``FEATURES``, or a prefix of
        it for a checkpoint of an earlier gpuscope)."""
        return list(getattr(self, "features_", FEATURES))

    # -- storage (tensors, ints, strings only) -----------------------------------------------
    def get_state(self) -> dict[str, Any]:
        mlps: dict[int, Any] = {}
        models: dict[str, Any] = {}
        for j, spec in self.models_.items():
            t = self.targets[j]
            if spec is None:
                models[t] = {"kind": "analytic"}
                continue
            kind, fs, m, col = spec
            entry: dict[str, Any] = {"kind": kind, "features": list(fs), "col": int(col)}
            if kind == "gbt":
                entry["trees"] = m
            else:
                mlps.setdefault(id(m), m)
                entry["mlp"] = str(list(mlps).index(id(m)))
            models[t] = entry
        return {"targets": list(self.targets), "models": models,
                "mlps": {str(i): m.get_state() for i, m in enumerate(mlps.values())},
                "domain_min": torch.as_tensor(self.domain_["min"]),
                "domain_max": torch.as_tensor(self.domain_["max"]),
                "features": self._features, "oom": self.oom_model_,
                "label_version": int(getattr(self, "label_version_", LABEL_VERSION)),
                "residual": True,
                "zmax": torch.as_tensor(self.zmax_),
                "chosen": dict(self.chosen_),
                "few_labels": list(getattr(self, "few_labels_", [])), "params": {
                    k: v for k, v in self.get_params().items()
                    if isinstance(v, (int, float, str)) and not isinstance(v, bool)}}

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> HybridModel:
        feats = [str(f) for f in s["features"]]
        if feats != list(FEATURES)[:len(feats)]:
            raise ValueError("the checkpoint's feature list is not this gpuscope's")
        if int(s.get("label_version", 1)) < LABEL_VERSION or not s.get("residual", False):
            raise ValueError("its learners predict label-space values (label version 1, "
                             "before the analytic labels); retrain it")
        m = cls(targets=tuple(s["targets"]))
        m.label_version_ = int(s["label_version"])
        m.features_ = feats
        mlps = {k: MaskedMLP().set_state(v) for k, v in s["mlps"].items()}
        m.models_ = {}
        for t, e in s["models"].items():
            j = list(m.targets).index(t)
            if e["kind"] == "analytic":
                m.models_[j] = None
            elif e["kind"] == "gbt":
                m.models_[j] = ("gbt", tuple(e["features"]), e["trees"], 0)
            else:
                m.models_[j] = ("mlp", tuple(e["features"]), mlps[e["mlp"]], int(e["col"]))
        m.domain_ = {"min": np.asarray(s["domain_min"]), "max": np.asarray(s["domain_max"])}
        m.oom_model_ = s.get("oom")
        if s.get("zmax") is not None:
            m.zmax_ = np.asarray(s["zmax"], np.float64)
        m.chosen_ = dict(s.get("chosen", {}))
        m.few_labels_ = [str(t) for t in s.get("few_labels", [])]
        return m


def inner_folds(n: int, groups: np.ndarray | None, seed: int, k: int = 3
                ) -> list[tuple[np.ndarray, np.ndarray]]:
    """``k`` (train, validation) folds of ``n`` rows holding out whole families
    (``evaluation.family_folds``), or random folds (every row its own group) when there are
    fewer than ``2k`` families: the model choice is scored on every training row once, not
    on one lucky split."""
    from gpuscope.predictor.evaluation import family_folds

    g = np.asarray(groups).astype(str) if groups is not None and len(set(groups)) >= 2 * k \
        else np.arange(n)
    k = min(k, len(set(g.tolist())))
    if k < 2:
        return []
    rows = np.arange(n)
    return [(np.setdiff1d(rows, va), va) for va in family_folds(g, k, seed)]


def select_kinds(model: HybridModel, frame: pd.DataFrame, Z: np.ndarray, R: np.ndarray,
                 cand: dict[int, list[str]], groups: np.ndarray | None
                 ) -> tuple[dict[int, str], dict[str, dict[str, float]]]:
    """The model kind of every target column of ``cand`` (index → candidate kinds) and the
    validation MSE of each candidate: every candidate is fitted on the inner folds' training
    rows (label-space values ``Z``, learnt residuals ``R``) and scored on their held-out
    families; ``HybridModel._pick`` chooses (the analytic estimate unless a learner beats it
    by 10 % overall and on every fold)."""
    se: dict[tuple[int, str], list[float]] = {}
    fold_mse: dict[tuple[int, str], list[float]] = {}
    for tr, va in inner_folds(len(frame), groups, model.random_state + 101):
        sub, Rt = frame.iloc[tr].reset_index(drop=True), R[tr]
        vf = frame.iloc[va].reset_index(drop=True)
        for kind in KINDS:
            cols = [j for j in cand if kind in cand[j]]
            if kind != "analytic":
                cols = [j for j in cols if np.isfinite(Rt[:, j]).sum() >= 2]
            if not cols:
                continue
            cache: dict[int, np.ndarray] = {}
            for j, spec in model._fit_kind(kind, sub, Rt, cols).items():
                p = model._predict_one(vf, j, spec, cache)
                ok = np.isfinite(Z[va, j])
                p, zt = p[ok], Z[va, j][ok]
                if target_space(model.targets[j]) == "log1p":
                    # scored in seconds, as the nMSE that judges it (a log1p error on a long
                    # run outweighs many on short ones)
                    p, zt = np.expm1(np.clip(p, 0, 25)), np.expm1(zt)
                se.setdefault((j, kind), []).extend(((p - zt) ** 2).tolist())
                fold_mse.setdefault((j, kind), []).append(
                    float(np.mean((p - zt) ** 2)) if p.size else np.inf)
    val_mse: dict[str, dict[str, float]] = {}
    for (j, kind), v in se.items():
        val_mse.setdefault(model.targets[j], {})[kind] = float(np.mean(v)) if v else np.inf
    chosen = {j: HybridModel._pick(val_mse.get(model.targets[j], {c[0]: 0.0}),
                                   {k: v for (jj, k), v in fold_mse.items() if jj == j})
              for j, c in cand.items()}
    return chosen, val_mse
