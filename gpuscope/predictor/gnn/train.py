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
shared-GCN steps (``steps=None``: the seed's L = N/2); ``graph_stats=True`` feeds whole-graph
totals to the MLP beside u (``False``: the seed's input ``[r ‖ u]``); execution time is
min-max normalised in log space (``log_targets``; ``()``: the seed's plain min-max).

``exec_per_step`` (beyond the seed): the execution-time label is divided by the run's
training steps (epochs × steps per epoch) before normalisation and the prediction multiplied
back, so execution time scales with run length outside the trained range.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm

from gpuscope.core.errors import CheckpointError, InputError
from gpuscope.core.targets import RESOURCES, TARGET_SETS, UNITS
from gpuscope.predictor.gnn.batching import (
    NetInputs,
    build_inputs,
    forward_rows,
    graph_stats,
    iter_batches,
)
from gpuscope.predictor.gnn.checkpoint import PredictorBundle
from gpuscope.predictor.gnn.data import PredictorData
from gpuscope.predictor.gnn.losses import masked_bce, masked_mse
from gpuscope.predictor.gnn.model import DriplePredictorNet, ModelConfig
from gpuscope.predictor.gnn.splits import make_splits, subsample
from gpuscope.predictor.scaling import MinMaxLabels, Standardizer
from gpuscope.predictor.threads import torch_threads

FINETUNE_MODES: tuple[str, ...] = ("all", "head")

#: Default fixed number of shared-GCN steps L. Seed 001 applies the shared layer N/2 times
#: (``steps=None``; ≈ 50 on K = 100 groups), but on titanx L = 8 reached a lower validation
#: loss (0.0157 vs 0.0178 at 40 epochs) at ~5× less CPU per epoch (CHANGELOG.md, "Driple GNN results").
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
    step_ratio: float = 0.5
    steps: int | None = DEFAULT_STEPS
    max_steps: int = 64
    log_targets: tuple[str, ...] = ("exec_time_s",)
    graph_stats: bool = True
    bounded_peaks: bool = False
    readout: str = "set2set"
    #: False: the steps-per-epoch and total-steps entries of u are zeroed (a
    #: campaign that tunes steps per model leaks the model's speed through them). Combine
    #: with ``exec_per_step`` only where the per-step time dominates the run (it does not in
    #: the 4-second measured CPU epochs, whose start-up is most of the run).
    steps_in_u: bool = True
    exec_per_step: bool = False
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


def steps_out_of_u(ctx: torch.Tensor) -> torch.Tensor:
    """u with its steps entries zeroed (``TrainConfig.steps_in_u=False``)."""
    ctx = ctx.clone()
    ctx[:, list(STEP_CONTEXT)] = 0.0
    return ctx


def _epoch_loss(net: DriplePredictorNet, inp: NetInputs, rows: np.ndarray, y: torch.Tensor,
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
    for name in ("in_dim", "context_dim", "device_dim", "graph_dim", "hidden"):
        if getattr(s, name) != getattr(cfg, name):
            raise CheckpointError(f"--init-from checkpoint has {name}={getattr(s, name)}, "
                                  f"this dataset needs {getattr(cfg, name)}")


def _bounded(targets: tuple[str, ...]) -> tuple[int, ...]:
    """Indices of the percentage peaks (capacity-bounded; min-max labels in [0, 1])."""
    pct = {f"{r}_peak" for r in RESOURCES if UNITS[r] == "%"}
    return tuple(i for i, t in enumerate(targets) if t in pct)


def fit_predictor(data: PredictorData, config: TrainConfig | None = None,
                  init_from: PredictorBundle | None = None,
                  device_vectors: torch.Tensor | None = None,
                  splits: dict[str, np.ndarray] | None = None) -> FitResult:
    """Train a predictor on ``data`` (see the module docstring). ``device_vectors`` [n × D]
    makes it a multi-device model; ``splits`` overrides the configured split."""
    cfg = config or TrainConfig()
    with torch_threads(cfg.threads):
        return _fit(data, cfg, init_from, device_vectors, splits)


def _fit(data: PredictorData, cfg: TrainConfig, init_from: PredictorBundle | None,
         device_vectors: torch.Tensor | None, splits: dict[str, np.ndarray] | None
         ) -> FitResult:
    targets = cfg.target_names()
    if cfg.finetune not in FINETUNE_MODES:
        raise InputError(f"unknown --finetune {cfg.finetune!r}; expected all or head")
    if cfg.finetune == "head" and init_from is None:
        raise InputError("--finetune head needs --init-from (a trained source model)")
    t0 = time.perf_counter()
    parts = splits if splits is not None else make_splits(data.labels, cfg.split, cfg.seed)
    parts = dict(parts)
    parts["train"] = subsample(parts["train"], cfg.fraction, cfg.seed)
    train_rows = parts["train"]
    if train_rows.size == 0:
        raise InputError("the training split is empty")
    y_raw = data.targets(targets)
    if cfg.exec_per_step and "exec_time_s" in targets:  # learn time per step, × steps back
        y_raw[:, targets.index("exec_time_s")] /= data.total_steps()
    labels = MinMaxLabels(targets, tuple(t in cfg.log_targets for t in targets))
    labels.fit(y_raw[train_rows])
    y = torch.tensor(labels.transform(y_raw), dtype=torch.float32)
    oom, usable = (torch.as_tensor(a) for a in data.oom_labels())
    oom = oom.float()
    ctx_all = steps_out_of_u(data.contexts) if not cfg.steps_in_u else data.contexts
    keys = data.labels["graph_key"].astype(str).tolist()
    train_keys = sorted({keys[i] for i in train_rows})
    if init_from is not None:
        features, contexts, devices = init_from.features, init_from.contexts, init_from.devices
        gstats = init_from.gstats
    else:
        gstats = None
        if cfg.graph_stats:
            gstats = Standardizer(log=False).fit(torch.stack([graph_stats(data.graphs[k])
                                                              for k in train_keys]))
        features = Standardizer(log=True).fit(torch.cat([data.graphs[k].x.float()
                                                         for k in train_keys]))
        contexts = Standardizer(log=False).fit(ctx_all[torch.as_tensor(train_rows)])
        devices = None
        if device_vectors is not None:
            devices = Standardizer(log=False).fit(device_vectors[torch.as_tensor(train_rows)])
    inp = build_inputs(keys, data.graphs, ctx_all, features, contexts,
                       device_vectors, devices, gstats=gstats)
    mcfg = ModelConfig(in_dim=int(inp.graphs[0].x.shape[1]), context_dim=int(inp.context.shape[1]),
                       n_targets=len(targets),
                       device_dim=0 if device_vectors is None else int(device_vectors.shape[1]),
                       graph_dim=0 if inp.gstats is None else int(inp.gstats.shape[1]),
                       hidden=cfg.hidden, step_ratio=cfg.step_ratio, steps=cfg.steps,
                       max_steps=cfg.max_steps, readout=cfg.readout,
                       bounded=(init_from.config.bounded if init_from is not None else
                                _bounded(targets) if cfg.bounded_peaks else ()))
    torch.manual_seed(cfg.seed)
    net = DriplePredictorNet(mcfg)
    if init_from is not None:
        _check_transfer(init_from, mcfg, targets)
        net.load_state_dict(init_from.net.state_dict())
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
    val_rows = parts["val"] if parts["val"].size else train_rows
    prev_det = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    history: list[dict[str, float]] = []
    best, best_state, since = float("inf"), copy.deepcopy(net.state_dict()), 0
    bar = tqdm(range(cfg.epochs), desc=f"train {data.device}", unit="epoch",
               disable=not cfg.progress, leave=False)
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
    seconds = time.perf_counter() - t0
    bundle = PredictorBundle(
        net=net, targets=targets, labels=labels, features=features, contexts=contexts,
        device=data.device, provenance=data.provenance, vocab_json=data.vocab_json,
        dataset_fingerprint=data.fingerprint, devices=devices, gstats=gstats, encoding=dict(data.encoding or {}),
        split={"kind": cfg.split, "seed": cfg.seed, "fraction": cfg.fraction},
        exec_per_step=bool(cfg.exec_per_step and "exec_time_s" in targets),
        train={"epochs_run": len(history), "best_val_mse": best, "seconds": seconds,
               "lr": cfg.lr, "batch_size": cfg.batch_size,
               "init_from": init_from.device if init_from is not None else "",
               "finetune": cfg.finetune,
               "steps_in_u": bool(cfg.steps_in_u),
               "targets_seen": [t for j, t in enumerate(targets)
                                if np.isfinite(y_raw[train_rows, j]).any()]})
    return FitResult(bundle, parts, inp, history, best, seconds)
