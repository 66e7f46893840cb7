"""A job's training workload: networks, optimizers, a synthetic batch and one training step.

``train_step`` is what the graph frontend traces (design.md "Workloads"): it only launches
tensor ops — no ``.item()``, no host copies, no data-dependent Python branches — so it runs
unchanged on CUDA, on CPU, on the ``meta`` device and under ``FakeTensorMode``/``make_fx``.

Losses: classifiers, cross-entropy; GANs (Goodfellow et al. 2014, Alg. 1 with the
non-saturating generator loss), one discriminator step then one generator step on
binary cross-entropy with logits; the VAE, the negative ELBO (Kingma & Welling 2014, Eq. 10:
Bernoulli reconstruction + analytic Gaussian KL), summed over pixels, averaged over the batch.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from gpuscope.core.errors import InputError
from gpuscope.jobs.spec import OPTIMIZERS, JobSpec, model_params
from gpuscope.workloads.catalog import CATALOG, build_model
from gpuscope.workloads.models.generative import NOISE_DIM

#: Optimizer hyperparameters: SGD with momentum 0.9; Adam with its defaults, except for GANs,
#: which use Radford et al.'s (2016) lr 2e-4, beta1 0.5; AdamW with weight decay 0.01
#: (Loshchilov & Hutter 2019, PyTorch's default); RMSprop and Adagrad with PyTorch's defaults.
SGD_LR = 0.01
ADAM_LR = 1e-3
GAN_ADAM = {"lr": 2e-4, "betas": (0.5, 0.999)}
#: Training kinds whose step is one loss, one backward and one optimizer step per micro-batch.
SINGLE_LOSS_KINDS: tuple[str, ...] = ("classifier", "vae", "lm", "seq2seq", "auto")
_AMP_DTYPES = {"amp-fp16": torch.float16, "amp-bf16": torch.bfloat16}


def make_optimizer(name: str, params: list[nn.Parameter],
                   gan: bool = False) -> torch.optim.Optimizer | None:
    """``sgd`` -> SGD(momentum=0.9); ``momentum`` -> SGD(Nesterov momentum 0.9); ``adam`` ->
    Adam; ``adamw`` -> AdamW(weight_decay=0.01); ``rmsprop`` -> RMSprop; ``adagrad`` ->
    Adagrad; ``none`` -> no optimizer (the step is forward + backward only)."""
    if name == "sgd":
        return torch.optim.SGD(params, lr=SGD_LR, momentum=0.9)
    if name == "momentum":
        return torch.optim.SGD(params, lr=SGD_LR, momentum=0.9, nesterov=True)
    if name == "adam":
        return torch.optim.Adam(params, **(GAN_ADAM if gan else {"lr": ADAM_LR}))
    if name == "adamw":
        return torch.optim.AdamW(params, **(GAN_ADAM if gan else {"lr": ADAM_LR}),
                                 weight_decay=0.01)
    if name == "rmsprop":
        return torch.optim.RMSprop(params, lr=SGD_LR)
    if name == "adagrad":
        return torch.optim.Adagrad(params, lr=SGD_LR)
    if name == "none":
        return None
    raise InputError(f"unknown optimizer {name!r}; expected one of {', '.join(OPTIMIZERS)}")


def _shapes_only(device: torch.device) -> bool:
    """True on the meta device or under a FakeTensorMode (tensors without data)."""
    from torch._guards import detect_fake_mode

    return device.type == "meta" or detect_fake_mode() is not None


class LossScaler:
    """The ops of ``torch.amp.GradScaler`` for an ``amp-fp16`` step, without its host sync:
    scale the loss, unscale the gradients while checking them for inf/NaN
    (``_amp_foreach_non_finite_check_and_unscale_``), update the scale
    (``_amp_update_scale_``, growth 2, backoff 0.5, interval 2000). GradScaler also skips the
    optimizer step after an overflow (a ``.item()`` sync); here the step always runs, as it
    does on all but the rare overflow steps."""

    def __init__(self, device: torch.device) -> None:
        self.scale_t = torch.full((), 65536.0, dtype=torch.float32, device=device)
        self.growth = torch.zeros((), dtype=torch.int32, device=device)
        self.found_inf = torch.zeros((), dtype=torch.float32, device=device)

    def scale(self, loss: torch.Tensor) -> torch.Tensor:
        return loss * self.scale_t

    def unscale(self, params: list[nn.Parameter]) -> None:
        grads = [p.grad for p in params if p.grad is not None]
        inv = self.scale_t.double().reciprocal().float()
        torch._amp_foreach_non_finite_check_and_unscale_(grads, self.found_inf, inv)

    def update(self) -> None:
        torch._amp_update_scale_(self.scale_t, self.growth, self.found_inf, 2.0, 0.5, 2000)


@dataclass
class Workload:
    """One job's networks and optimizers, with a synthetic batch maker and a training step.

    Attributes:
        job: the job.
        kind: ``classifier``, ``gan``, ``conditional_gan``, ``vae``, ``lm`` (token ids in,
            per-token logits out, cross-entropy on the labels: causal and masked LMs),
            ``seq2seq`` (source and target ids in, per-token logits out) or ``auto`` (a user
            module: the loss is picked from the output, see ``_auto_loss``).
        modules: the networks (``model``; ``generator``/``discriminator``; ``encoder``/``decoder``).
        optimizers: one per trained network group (two for GANs; none for ``optimizer="none"``).
    """

    job: JobSpec
    kind: str
    modules: nn.ModuleDict
    optimizers: list[torch.optim.Optimizer] = field(default_factory=list)
    scaler: LossScaler | None = None
    #: the model's vocabulary (token ids are drawn below min(dataset vocab, this)), if known
    vocab: int | None = None

    # -- data ---------------------------------------------------------------------------------
    def sample_batch(
        self, batch_size: int | None = None, device: str | torch.device = "cpu", seed: int = 0
    ) -> tuple[torch.Tensor, ...]:
        """Synthetic tensors with the dataset's real shapes, deterministic under ``seed``.

        Inputs by dataset kind (``DatasetSpec.sample_shape``): images/frames ``(b, C, H, W)``,
        sequences ``(b, steps, features)``, tabular ``(b, features)`` float32; tokens
        ``(b, seq)`` int64 ids below the vocabulary. Classifiers and conditional GANs get
        ``(inputs, labels)`` (labels int64 class ids), ``lm`` jobs ``(ids, labels)`` with
        per-token labels, ``seq2seq`` ``(source ids, target ids, labels)``, ``auto`` jobs
        ``(inputs, labels)`` or ``(inputs,)`` when the dataset has no labels, other
        generative models ``(images,)``. Images are standard-normal for classifiers, in
        [-1, 1] for GANs (tanh range) and in [0, 1] for the VAE (Bernoulli targets).
        On the ``meta`` device (or under FakeTensorMode) the tensors have shapes and dtypes
        but no data.
        """
        b = self.job.batch_size if batch_size is None else batch_size
        ds = self.job.dataset_spec
        shape = (b, *ds.sample_shape)
        device = torch.device(device)
        tokens = ds.integer_input
        label_shape = (b, ds.seq_len) if tokens else (b,)
        vocab = min(ds.vocab, self.vocab) if self.vocab else ds.vocab
        n_cls = vocab if tokens else max(1, ds.num_classes)
        n_inputs = 2 if self.kind == "seq2seq" else 1
        if _shapes_only(device):
            xs = [torch.empty(shape, dtype=torch.long if tokens else torch.float32, device=device)
                  for _ in range(n_inputs)]
            y = torch.empty(label_shape, dtype=torch.long, device=device)
        else:
            g = torch.Generator().manual_seed(seed)
            if tokens:
                xs = [torch.randint(0, vocab, shape, generator=g) for _ in range(n_inputs)]
            elif self.kind == "vae":
                xs = [torch.rand(shape, generator=g)]
            elif self.kind in ("gan", "conditional_gan"):
                xs = [torch.rand(shape, generator=g) * 2 - 1]
            else:
                xs = [torch.randn(shape, generator=g)]
            y = torch.randint(0, n_cls, label_shape, generator=g)
            xs, y = [x.to(device) for x in xs], y.to(device)
        if self.kind in ("gan", "vae"):
            return (xs[0],)
        if self.kind == "auto" and not tokens and ds.num_classes == 0:
            return (xs[0],)
        return (*xs, y)

    # -- training -----------------------------------------------------------------------------
    def _autocast(self, batch: tuple[torch.Tensor, ...]) -> Any:
        """``torch.autocast`` for ``amp-*`` jobs on the batch's device type (cpu or cuda);
        a no-op otherwise (fp32; tf32 is a matmul mode, set by the runner)."""
        dtype = _AMP_DTYPES.get(self.job.precision)
        dev = batch[0].device.type
        if dtype is None or dev not in ("cpu", "cuda"):
            return contextlib.nullcontext()
        return torch.autocast(device_type=dev, dtype=dtype)

    def train_step(self, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        """Forward, backward and optimizer step(s) on ``batch``; returns the detached loss
        (for GANs, discriminator loss + generator loss).

        With ``grad_accum = n`` the step runs n forward/backward passes on micro-batches
        (``batch`` each time), each loss divided by n, then one optimizer update. ``amp-*``
        jobs run forward and loss under autocast; ``amp-fp16`` adds loss scaling."""
        if self.kind in ("gan", "conditional_gan"):
            labels = batch[1] if self.kind == "conditional_gan" else None
            with self._autocast(batch):
                return self._gan_step(batch[0], labels)
        n = self.job.grad_accum
        for opt in self.optimizers:
            opt.zero_grad(set_to_none=True)
        if not self.optimizers:
            self.modules.zero_grad(set_to_none=True)
        total: torch.Tensor | None = None
        for _ in range(n):
            with self._autocast(batch):
                loss = self._loss(batch)
            if n > 1:
                loss = loss / n
            (self.scaler.scale(loss) if self.scaler is not None else loss).backward()
            total = loss.detach() if total is None else total + loss.detach()
        if self.scaler is not None:
            self.scaler.unscale([p for p in self.modules.parameters() if p.requires_grad])
        for opt in self.optimizers:
            opt.step()
        if self.scaler is not None:
            self.scaler.update()
        assert total is not None
        return total

    def _loss(self, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        """The loss of one micro-batch for the single-loss kinds."""
        if self.kind == "classifier":
            x, y = batch
            return F.cross_entropy(self.modules["model"](x), y)
        if self.kind == "vae":
            return self._vae_loss(batch[0])
        if self.kind == "lm":
            ids, labels = batch
            logits = self.modules["model"](ids)
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
        if self.kind == "seq2seq":
            src, tgt, labels = batch
            logits = self.modules["model"](src, tgt)
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
        if self.kind == "auto":
            return self._auto_loss(batch)
        raise InputError(f"unknown workload kind {self.kind!r}")

    def _auto_loss(self, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        """Loss of a user module: cross-entropy when the output's leading dimensions match the
        labels (class ids per sample or per token) and its last dimension holds the classes,
        else the mean square of the output (any loss needs the same backward pass through
        the model; only the loss's few ops differ)."""
        has_labels = len(batch) > 1
        inputs = batch[:-1] if has_labels else batch
        out = _first_tensor(self.modules["model"](*inputs))
        if has_labels:
            y = batch[-1]
            if out.is_floating_point() and out.dim() == y.dim() + 1 and out.shape[:-1] == y.shape:
                return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        if not out.is_floating_point():
            raise InputError(f"model output has dtype {out.dtype}; expected a float tensor")
        return out.float().pow(2).mean()

    def _gan_step(self, x: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        gen, disc = self.modules["generator"], self.modules["discriminator"]
        opt_g, opt_d = self.optimizers if self.optimizers else (None, None)
        z = torch.randn(x.shape[0], NOISE_DIM, device=x.device, dtype=x.dtype)
        fake = gen(z, labels)
        # Discriminator: real -> 1, fake -> 0 (the generator's graph is cut by detach).
        disc.zero_grad(set_to_none=True) if opt_d is None else opt_d.zero_grad(set_to_none=True)
        d_real = disc(x, labels)
        d_fake = disc(fake.detach(), labels)
        d_loss = F.binary_cross_entropy_with_logits(
            d_real, torch.ones_like(d_real)
        ) + F.binary_cross_entropy_with_logits(d_fake, torch.zeros_like(d_fake))
        d_loss.backward()
        if opt_d is not None:
            opt_d.step()
        # Generator: non-saturating loss, make the discriminator call the fakes real.
        gen.zero_grad(set_to_none=True) if opt_g is None else opt_g.zero_grad(set_to_none=True)
        g_out = disc(fake, labels)
        g_loss = F.binary_cross_entropy_with_logits(g_out, torch.ones_like(g_out))
        g_loss.backward()
        if opt_g is not None:
            opt_g.step()
        return d_loss.detach() + g_loss.detach()

    def _vae_loss(self, x: torch.Tensor) -> torch.Tensor:
        enc, dec = self.modules["encoder"], self.modules["decoder"]
        mean, logvar = enc(x)
        z = mean + torch.randn_like(mean) * torch.exp(0.5 * logvar)  # reparameterisation
        logits = dec(z)
        rec = F.binary_cross_entropy_with_logits(logits, x, reduction="sum")
        kl = -0.5 * torch.sum(1 + logvar - mean.pow(2) - logvar.exp())
        return (rec + kl) / x.shape[0]


def _first_tensor(out: Any) -> torch.Tensor:
    """The output tensor of a model: itself, ``.logits``/``["logits"]`` (Hugging Face outputs),
    ``last_hidden_state``, or the first tensor of a tuple/list/dict."""
    if isinstance(out, torch.Tensor):
        return out
    for key in ("logits", "last_hidden_state", "prediction_logits"):
        v = out.get(key) if isinstance(out, dict) else getattr(out, key, None)
        if isinstance(v, torch.Tensor):
            return v
    values = list(out.values()) if isinstance(out, dict) else list(out) \
        if isinstance(out, (tuple, list)) else []
    for v in values:
        if isinstance(v, torch.Tensor):
            return v
    raise InputError(f"model returned {type(out).__name__}, not a tensor")


def build_workload(job: JobSpec, device: str | torch.device = "cpu", seed: int = 0) -> Workload:
    """Build ``job``'s networks directly on ``device`` (``meta`` for a weightless trace) and
    its optimizers; parameters are initialised deterministically from ``seed``. Catalog
    models come from ``CATALOG``; ``module``/``hf`` jobs from ``gpuscope.workloads.sources``."""
    if job.graph is not None:
        raise InputError(f"job {job.key} uses a graph file ({job.graph}), not a catalog model")
    device = torch.device(device)
    torch.manual_seed(seed)
    if job.module is not None or job.hf is not None:
        from gpuscope.workloads.sources import build_source_model

        with torch.device(device):
            net, kind = build_source_model(job)
    else:
        kind = CATALOG[model_params(job.model)[0]].kind
        with torch.device(device):
            net = build_model(job.model, job.dataset)
    modules = net if isinstance(net, nn.ModuleDict) else nn.ModuleDict({"model": net})
    modules.train()
    wl = make_workload(job, kind, modules)
    wl.vocab = _model_limit(net, "vocab_size")
    max_len = _model_limit(net, "max_len")
    ds = job.dataset_spec
    if ds.integer_input and max_len is not None and ds.seq_len > max_len:
        raise InputError(f"{job.model}: sequence length {ds.seq_len} exceeds the model's "
                         f"{max_len} positions")
    return wl


def _model_limit(net: nn.Module, name: str) -> int | None:
    """``vocab_size``/``max_len`` of a catalog transformer or a Hugging Face model's config."""
    v = getattr(net, name, None)
    cfg = getattr(getattr(net, "hf", None), "config", None)
    if v is None and cfg is not None:
        hf_name = {"vocab_size": "vocab_size", "max_len": "max_position_embeddings"}[name]
        v = getattr(cfg, hf_name, None)
    return int(v) if isinstance(v, int) else None


def make_workload(job: JobSpec, kind: str, modules: nn.ModuleDict,
                  scaler_device: str | torch.device | None = None) -> Workload:
    """A workload of ready-built ``modules`` (their parameters define the device): its
    optimizers per ``job.optimizer`` and, for ``amp-fp16``, a loss scaler on
    ``scaler_device`` (default: the parameters' device)."""
    if job.grad_accum != 1 and kind not in SINGLE_LOSS_KINDS:
        raise InputError(f"grad_accum > 1 is not supported for {kind} jobs (two optimizers)")
    if kind in ("gan", "conditional_gan"):
        groups = [list(modules["generator"].parameters()),
                  list(modules["discriminator"].parameters())]
    else:
        groups = [[p for p in modules.parameters() if p.requires_grad]]
    opts = [make_optimizer(job.optimizer, g, gan=kind in ("gan", "conditional_gan"))
            for g in groups]
    optimizers = [o for o in opts if o is not None]
    scaler = None
    if job.precision == "amp-fp16" and kind in SINGLE_LOSS_KINDS:
        dev = scaler_device or next(iter(modules.parameters())).device
        scaler = LossScaler(torch.device(dev))
    return Workload(job=job, kind=kind, modules=modules, optimizers=optimizers, scaler=scaler)


def param_count(workload: Workload | nn.Module) -> int:
    """Number of trainable parameters (all networks of a workload)."""
    mod = workload.modules if isinstance(workload, Workload) else workload
    return sum(p.numel() for p in mod.parameters() if p.requires_grad)


__all__ = ["LossScaler", "Workload", "build_workload", "make_optimizer", "make_workload",
           "param_count"]
