"""Training (seed 001 §3.1, §4.3–4.4): masked MSE on min-max labels, Adam, early stopping,
transfer learning from another device's checkpoint.

``fit_predictor(data, TrainConfig(...))`` splits the dataset (``gpuscope.predictor.gnn.splits``),
fits the label normalisation and the input standardisers on the training rows, trains with
Adam on the masked MSE plus ``oom_weight`` × the OOM head's BCE, evaluates the validation
MSE after every epoch (halving the learning rate after ``lr_patience`` epochs without
improvement) and keeps the weights of the best epoch; it stops after ``patience`` epochs
without improvement. Deterministic under ``seed`` (seeded init and shuffling,
``torch.use_deterministic_algorithms`` while training).

Transfer learning (seed 001 §4.4): ``init_from`` is a source device's trained bundle; its
weights and input standardisers are copied (the network then sees inputs on the scale it was
trained on), the labels are re-normalised on the target device's training split, and either
all weights are fine-tuned (``finetune="all"``) or only the MLP head (``"head"``).

Defaults beyond the seed (switches give the paper-literal behaviour): ``steps=8`` fixed
shared-GCN steps (the seed applies the shared layer N/2 times); ``graph_stats=True`` feeds
whole-graph totals to the MLP beside u (``False``: the seed's input ``[r ‖ u]``); execution
time is min-max normalised in log space (``log_targets``; ``()``: the seed's plain min-max).

The checkpoint records its training domain (``gnn.domain``: the training rows' ranges of
graph size, tensor volume, batch size and run length), which ``GNNPredictor`` guards.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor
from tqdm.auto import tqdm

from gpuscope.core.errors import CheckpointError, InputError
from gpuscope.core.targets import TARGET_SETS
from gpuscope.predictor.gnn.batching import (
    NetInputs,
    build_inputs,
    forward_rows,
    graph_stats,
    iter_batches,
)
from gpuscope.predictor.gnn.checkpoint import PredictorBundle
from gpuscope.predictor.gnn.data import PredictorData
from gpuscope.predictor.gnn.domain import fit_domain
from gpuscope.predictor.gnn.losses import masked_bce, masked_mse
from gpuscope.predictor.gnn.model import DriplePredictorNet, ModelConfig
from gpuscope.predictor.gnn.splits import make_splits, subsample
from gpuscope.predictor.scaling import MinMaxLabels, Standardizer
from gpuscope.predictor.threads import torch_threads

FINETUNE_MODES: tuple[str, ...] = ("all", "head")

#: Default fixed number of shared-GCN steps L. Seed 001 applies the shared layer N/2 times
#: (≈ 50 on K = 100 groups), but on titanx L = 8 reached a lower validation loss (0.0157 vs
#: 0.0178 at 40 epochs) at ~5× less CPU per epoch (CHANGELOG.md, "Driple GNN results").
DEFAULT_STEPS: int = 8


@dataclass
class TrainConfig:
    """Training hyperparameters (stored as given; see the module docstring)."""

    targets: str = "full"
    split: str = "random"
    seed: int = 0
    epochs: int = 150
    patience: int = 20
    batch_size: int = 32
    lr: float = 3e-3
    lr_patience: int = 6
    weight_decay: float = 0.0
    oom_weight: float = 0.2
    hidden: int = 64
    steps: int = DEFAULT_STEPS
    log_targets: tuple[str, ...] = ("exec_time_s",)
    graph_stats: bool = True
    #: False: the steps-per-epoch and total-steps entries of u are zeroed (a campaign that
    #: tunes steps per model leaks the model's speed through them; ``amd-epyc.pt``).
    steps_in_u: bool = True
    fraction: float = 1.0
    finetune: str = "all"
    progress: bool = True
    threads: int | None = 1

    def target_names(self) -> tuple[str, ...]:
        if self.targets not in TARGET_SETS:
            raise InputError(f"unknown target set {self.targets!r}; expected "
                             f"{' or '.join(TARGET_SETS)}")
        return tuple(TARGET_SETS[self.targets])


@dataclass
class FitResult:
    """A trained bundle, the split it was trained on, and its learning curve."""

    bundle: PredictorBundle
    splits: dict[str, np.ndarray]
    inputs: NetInputs
    history: list[dict[str, float]] = field(default_factory=list)
    best_val: float = float("nan")
    seconds: float = 0.0


#: Indices of ``log10_steps_per_epoch`` and ``log10_total_steps`` in u (graphs.CONTEXT_FEATURES).
STEP_CONTEXT = (2, 3)


def steps_out_of_u(ctx: Tensor) -> Tensor:
    """u with its steps entries zeroed (``TrainConfig.steps_in_u=False``)."""
    ctx = ctx.clone()
    ctx[:, list(STEP_CONTEXT)] = 0.0
    return ctx


def _epoch_loss(net: DriplePredictorNet, inp: NetInputs, rows: np.ndarray, y: Tensor,
                batch_size: int) -> float:
    """Masked MSE over ``rows`` in eval mode (entries weighted equally, as Eq. 1)."""
    if rows.size == 0:
        return float("nan")
    net.eval()
    se, n = 0.0, 0
    with torch.no_grad():
        for r, batch, local in iter_batches(inp, rows, max(batch_size, 256), shuffle=False):
            pred, _ = forward_rows(net, inp, r, batch, local)
            t = y[torch.as_tensor(r)]
            mask = ~torch.isnan(t)
            se += float(((pred - torch.nan_to_num(t)) ** 2)[mask].sum())
            n += int(mask.sum())
    return se / n if n else float("nan")


def _check_transfer(src: PredictorBundle, cfg: ModelConfig, targets: tuple[str, ...]) -> None:
    s = src.config
    if tuple(src.targets) != targets:
        raise CheckpointError(f"--init-from checkpoint predicts {len(src.targets)} targets "
                              f"({src.target_set}), this run {len(targets)}")
    for name in ("in_dim", "context_dim", "graph_dim", "hidden"):
        if getattr(s, name) != getattr(cfg, name):
            raise CheckpointError(f"--init-from checkpoint has {name}={getattr(s, name)}, "
                                  f"this dataset needs {getattr(cfg, name)}")


def fit_predictor(data: PredictorData, config: TrainConfig | None = None,
                  init_from: PredictorBundle | None = None,
                  splits: dict[str, np.ndarray] | None = None,
                  net: Callable[[ModelConfig], DriplePredictorNet] = DriplePredictorNet
                  ) -> FitResult:
    """Train a predictor on ``data`` (see the module docstring). ``splits`` overrides the
    configured split; ``net`` builds the network from its config (a research variant may
    subclass :class:`DriplePredictorNet`)."""
    cfg = config or TrainConfig()
    with torch_threads(cfg.threads):
        return _fit(data, cfg, init_from, splits, net)


def _scalers(data: PredictorData, cfg: TrainConfig, ctx: Tensor, train_rows: np.ndarray,
             keys: list[str], init_from: PredictorBundle | None
             ) -> tuple[Standardizer, Standardizer, Standardizer | None]:
    """(node features, contexts, graph statistics) standardisers: the source's when
    transferring (the network then sees inputs on the scale it was trained on), else fitted
    on the training rows."""
    if init_from is not None:
        return init_from.features, init_from.contexts, init_from.gstats
    train_keys = sorted({keys[i] for i in train_rows})
    gstats = None
    if cfg.graph_stats:
        gstats = Standardizer(log=False).fit(torch.stack([graph_stats(data.graphs[k])
                                                          for k in train_keys]))
    features = Standardizer(log=True).fit(torch.cat([data.graphs[k].x.float()
                                                     for k in train_keys]))
    return features, Standardizer(log=False).fit(ctx[torch.as_tensor(train_rows)]), gstats


def _train_loop(net: DriplePredictorNet, inp: NetInputs, y: Tensor, oom: Tensor,
                usable: Tensor, train_rows: np.ndarray, val_rows: np.ndarray,
                cfg: TrainConfig, desc: str) -> tuple[list[dict[str, float]], float]:
    """Adam epochs with early stopping on the validation MSE; ``net`` ends with the best
    epoch's weights. Returns (history, best validation MSE)."""
    params = [p for n, p in net.named_parameters()
              if cfg.finetune == "all" or n.startswith(DriplePredictorNet.HEAD_PREFIXES)]
    if cfg.finetune == "head":
        for n, p in net.named_parameters():
            p.requires_grad_(n.startswith(DriplePredictorNet.HEAD_PREFIXES))
    opt = torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    # halve the step size when validation stalls (the noisy late epochs of a 260-row set)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5,
                                                       patience=cfg.lr_patience)
    gen = torch.Generator().manual_seed(cfg.seed)
    prev_det = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    history: list[dict[str, float]] = []
    best, best_state, since = float("inf"), copy.deepcopy(net.state_dict()), 0
    bar = tqdm(range(cfg.epochs), desc=desc, unit="epoch", disable=not cfg.progress,
               leave=False)
    try:
        for epoch in bar:
            net.train()
            tot, nb = 0.0, 0
            for r, batch, local in iter_batches(inp, train_rows, cfg.batch_size, True, gen):
                pred, logit = forward_rows(net, inp, r, batch, local)
                rt = torch.as_tensor(r)
                loss = masked_mse(pred, y[rt])
                if cfg.oom_weight:
                    loss = loss + cfg.oom_weight * masked_bce(logit, oom[rt], usable[rt])
                opt.zero_grad()
                loss.backward()
                opt.step()
                tot, nb = tot + float(loss.detach()), nb + 1
            val = _epoch_loss(net, inp, val_rows, y, cfg.batch_size)
            if np.isnan(val):  # no observed label among the validation rows
                val = _epoch_loss(net, inp, train_rows, y, cfg.batch_size)
            sched.step(val)
            history.append({"epoch": epoch + 1, "train_loss": tot / max(nb, 1), "val_mse": val})
            bar.set_postfix(train=f"{tot / max(nb, 1):.4f}", val=f"{val:.4f}")
            if val < best - 1e-7:
                best, best_state, since = val, copy.deepcopy(net.state_dict()), 0
            else:
                since += 1
                if since >= cfg.patience:
                    break
    finally:
        torch.use_deterministic_algorithms(prev_det)
        bar.close()
    net.load_state_dict(best_state)
    for p in net.parameters():
        p.requires_grad_(True)
    net.eval()
    return history, best


def _fit(data: PredictorData, cfg: TrainConfig, init_from: PredictorBundle | None,
         splits: dict[str, np.ndarray] | None,
         net_factory: Callable[[ModelConfig], DriplePredictorNet]) -> FitResult:
    targets = cfg.target_names()
    if cfg.finetune not in FINETUNE_MODES:
        raise InputError(f"unknown --finetune {cfg.finetune!r}; expected all or head")
    if cfg.finetune == "head" and init_from is None:
        raise InputError("--finetune head needs --init-from (a trained source model)")
    t0 = time.perf_counter()
    parts = dict(splits if splits is not None else make_splits(data.labels, cfg.split, cfg.seed))
    parts["train"] = subsample(parts["train"], cfg.fraction, cfg.seed)
    train_rows = parts["train"]
    if train_rows.size == 0:
        raise InputError("the training split is empty")
    y_raw = data.targets(targets)
    labels = MinMaxLabels(targets, tuple(t in cfg.log_targets for t in targets))
    labels.fit(y_raw[train_rows])
    y = torch.tensor(labels.transform(y_raw), dtype=torch.float32)
    oom, usable = (torch.as_tensor(a) for a in data.oom_labels())
    ctx_all = steps_out_of_u(data.contexts) if not cfg.steps_in_u else data.contexts
    keys = data.labels["graph_key"].astype(str).tolist()
    features, contexts, gstats = _scalers(data, cfg, ctx_all, train_rows, keys, init_from)
    inp = build_inputs(keys, data.graphs, ctx_all, features, contexts, gstats=gstats)
    mcfg = ModelConfig(in_dim=int(inp.graphs[0].x.shape[1]), context_dim=int(inp.context.shape[1]),
                       n_targets=len(targets),
                       graph_dim=0 if inp.gstats is None else int(inp.gstats.shape[1]),
                       hidden=cfg.hidden, steps=cfg.steps)
    torch.manual_seed(cfg.seed)
    net = net_factory(mcfg)
    if init_from is not None:
        _check_transfer(init_from, mcfg, targets)
        net.load_state_dict(init_from.net.state_dict())
    val_rows = parts["val"] if parts["val"].size else train_rows
    history, best = _train_loop(net, inp, y, oom.float(), usable, train_rows, val_rows, cfg,
                                f"train {data.device}")
    seconds = time.perf_counter() - t0
    bundle = PredictorBundle(
        net=net, targets=targets, labels=labels, features=features, contexts=contexts,
        device=data.device, provenance=data.provenance, vocab_json=data.vocab_json,
        dataset_fingerprint=data.fingerprint, gstats=gstats,
        encoding=dict(data.encoding or {}), domain=fit_domain(data, train_rows),
        split={"kind": cfg.split, "seed": cfg.seed, "fraction": cfg.fraction},
        train={"epochs_run": len(history), "best_val_mse": best, "seconds": seconds,
               "lr": cfg.lr, "batch_size": cfg.batch_size,
               "init_from": init_from.device if init_from is not None else "",
               "finetune": cfg.finetune,
               "steps_in_u": bool(cfg.steps_in_u),
               "targets_seen": [t for j, t in enumerate(targets)
                                if np.isfinite(y_raw[train_rows, j]).any()]})
    return FitResult(bundle, parts, inp, history, best, seconds)
