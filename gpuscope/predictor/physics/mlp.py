"""A small multi-output MLP on tabular features with masked targets (an "MLP on
totals" and the physics model's fine-tunable variant).

Inputs are standardised on the training rows (``scaling.Standardizer``); each target is
standardised too, so one MSE
weighs every target alike (seed 001 Eq. 1 on masked entries: a NaN label contributes neither
value nor gradient). Full-batch Adam for a fixed number of epochs — the tables are a few
thousand rows, so a deterministic fixed budget is cheaper than early stopping. Transfer
learning (``init`` = another fitted MLP's state): the network and its scalers are copied and
training continues on the new rows with ``l2_to_init`` pulling the weights toward the source
(a prior that keeps a handful of rows from undoing what the source learnt).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator
from torch import nn

from gpuscope.predictor.scaling import Standardizer
from gpuscope.predictor.threads import torch_threads

#: Inputs and targets whose training std is at most this are left unscaled (constant).
MIN_STD: float = 1e-9


def _net(n_in: int, n_out: int, hidden: int, layers: int) -> nn.Sequential:
    mods: list[nn.Module] = []
    d = n_in
    for _ in range(layers):
        mods += [nn.Linear(d, hidden), nn.ReLU()]
        d = hidden
    mods.append(nn.Linear(d, n_out))
    return nn.Sequential(*mods)


class MaskedMLP(BaseEstimator):
    """Multi-output regressor with NaN-masked targets (scikit-learn conventions).

    Args:
        hidden, layers: width and number of hidden layers.
        epochs, lr, weight_decay: full-batch Adam budget.
        l2_to_init: weight of ‖θ − θ_init‖² when fine-tuning from ``init``.
        random_state: seed (initialisation).
    """

    def __init__(self, hidden: int = 64, layers: int = 2, epochs: int = 400, lr: float = 3e-3,
                 weight_decay: float = 1e-4, l2_to_init: float = 1e-2,
                 random_state: int = 0) -> None:
        self.hidden = hidden
        self.layers = layers
        self.epochs = epochs
        self.lr = lr
        self.weight_decay = weight_decay
        self.l2_to_init = l2_to_init
        self.random_state = random_state

    def fit(self, X: np.ndarray, Z: np.ndarray, init: dict[str, Any] | None = None
            ) -> MaskedMLP:
        X = np.asarray(X, np.float64)
        Z = np.asarray(Z, np.float64).reshape(len(X), -1)
        with torch_threads(1):
            torch.manual_seed(self.random_state)
            anchor: list[torch.Tensor] | None = None
            if init is not None:
                self.set_state(init)
                anchor = [p.detach().clone() for p in self.net_.parameters()]
            else:
                self.x_scale_ = Standardizer(min_std=MIN_STD).fit(X)
                self.z_scale_ = Standardizer(min_std=MIN_STD).fit(Z)
                self.net_: nn.Sequential = _net(X.shape[1], Z.shape[1], self.hidden, self.layers)
            xt = torch.tensor(self._x(X), dtype=torch.float32)
            zt = torch.tensor(self.z_scale_.transform(Z), dtype=torch.float32)
            mask = torch.isfinite(zt)
            zt = torch.nan_to_num(zt)
            opt = torch.optim.Adam(self.net_.parameters(), lr=self.lr,
                                   weight_decay=self.weight_decay)
            n = mask.sum().clamp(min=1)
            self.net_.train()
            for _ in range(self.epochs):
                loss = (((self.net_(xt) - zt) ** 2) * mask).sum() / n
                if anchor is not None and self.l2_to_init:
                    loss = loss + self.l2_to_init * sum(
                        ((p - a) ** 2).sum() for p, a in zip(self.net_.parameters(), anchor,
                                                              strict=True))
                opt.zero_grad()
                loss.backward()
                opt.step()
            self.net_.eval()
        return self

    def _x(self, X: np.ndarray) -> np.ndarray:
        # clipped at ±5 σ: a feature nearly constant in training (a family's op share) must
        # not push an unseen family's row to hundreds of σ, where a ReLU net extrapolates
        # linearly without bound
        return np.clip(np.nan_to_num(self.x_scale_.transform(X)), -5.0, 5.0)

    def predict(self, X: np.ndarray) -> np.ndarray:
        with torch_threads(1), torch.no_grad():
            z = self.net_(torch.tensor(self._x(X), dtype=torch.float32)).double().numpy()
        return self.z_scale_.inverse(z)

    def get_state(self) -> dict[str, Any]:
        """Tensors and ints only (``torch.load(weights_only=True)``-safe)."""
        return {"state": {k: v.detach().clone() for k, v in self.net_.state_dict().items()},
                "x_mean": torch.as_tensor(self.x_scale_.mean_, dtype=torch.float64),
                "x_std": torch.as_tensor(self.x_scale_.std_, dtype=torch.float64),
                "z_mean": torch.as_tensor(self.z_scale_.mean_, dtype=torch.float64),
                "z_std": torch.as_tensor(self.z_scale_.std_, dtype=torch.float64),
                "hidden": int(self.hidden), "layers": int(self.layers)}

    def set_state(self, s: dict[str, Any]) -> MaskedMLP:
        self.hidden, self.layers = int(s["hidden"]), int(s["layers"])
        self.x_scale_, self.z_scale_ = (
            Standardizer(min_std=MIN_STD, mean_=np.asarray(s[f"{v}_mean"], np.float64).tolist(),
                         std_=np.asarray(s[f"{v}_std"], np.float64).tolist()) for v in "xz")
        self.net_ = _net(len(self.x_scale_.mean_), len(self.z_scale_.mean_), self.hidden,
                         self.layers)
        self.net_.load_state_dict({k: v.float() for k, v in copy.deepcopy(s["state"]).items()})
        self.net_.eval()
        return self
