"""Losses: masked MSE (seed 001 Eq. 1) and the OOM head's masked binary cross-entropy.

Seed 001 Eq. 1, MSE = (1/N) Σ_i (y_i − ŷ_i)², taken here over the *observed* entries only:
with mask m_ij = 1 where label y_ij exists (not NaN),

    L = Σ_ij m_ij (y_ij − ŷ_ij)² / Σ_ij m_ij

so a target a device does not have (a CPU-only dataset's GPU targets) or a failed run's
targets contribute nothing, neither to the value nor to the gradient (never imputed).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def masked_mse(pred: Tensor, target: Tensor) -> Tensor:
    """Mean squared error over the entries of ``target`` that are not NaN (0 if none)."""
    mask = ~torch.isnan(target)
    diff = torch.where(mask, pred - torch.nan_to_num(target), torch.zeros_like(pred))
    n = mask.sum()
    return (diff * diff).sum() / n.clamp(min=1)


def masked_bce(logit: Tensor, label: Tensor, usable: Tensor) -> Tensor:
    """Binary cross-entropy with logits over rows where ``usable`` (0 if none)."""
    if not bool(usable.any()):
        return logit.sum() * 0.0
    return F.binary_cross_entropy_with_logits(logit[usable], label[usable])
