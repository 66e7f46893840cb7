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

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from gpuscope.errors import InputError
from gpuscope.jobs import JobSpec
from gpuscope.workloads.catalog import CATALOG, build_model
from gpuscope.workloads.models_generative import NOISE_DIM

#: Optimizer hyperparameters: SGD with momentum 0.9; Adam with its defaults, except for GANs,
#: which use Radford et al.'s (2016) lr 2e-4, beta1 0.5.
SGD_LR = 0.01
ADAM_LR = 1e-3
GAN_ADAM = {"lr": 2e-4, "betas": (0.5, 0.999)}


def make_optimizer(name: str, params: list[nn.Parameter], gan: bool = False) -> torch.optim.Optimizer:
    """``sgd`` -> SGD(momentum=0.9); ``adam`` -> Adam."""
    if name == "sgd":
        return torch.optim.SGD(params, lr=SGD_LR, momentum=0.9)
    if name == "adam":
        return torch.optim.Adam(params, **(GAN_ADAM if gan else {"lr": ADAM_LR}))
    raise InputError(f"unknown optimizer {name!r}; expected sgd or adam")


@dataclass
class Workload:
    """One job's networks and optimizers, with a synthetic batch maker and a training step.

    Attributes:
        job: the job.
        kind: ``classifier``, ``gan``, ``conditional_gan`` or ``vae``.
        modules: the networks (``model``; ``generator``/``discriminator``; ``encoder``/``decoder``).
        optimizers: one per trained network group (two for GANs).
    """

    job: JobSpec
    kind: str
    modules: nn.ModuleDict
    optimizers: list[torch.optim.Optimizer] = field(default_factory=list)

    # -- data ---------------------------------------------------------------------------------
    def sample_batch(
        self, batch_size: int | None = None, device: str | torch.device = "cpu", seed: int = 0
    ) -> tuple[torch.Tensor, ...]:
        """Synthetic tensors with the dataset's real shapes, deterministic under ``seed``.

        Classifiers and conditional GANs get ``(images, labels)``, other generative models
        ``(images,)``. Images are standard-normal for classifiers, in [-1, 1] for GANs (tanh
        range) and in [0, 1] for the VAE (Bernoulli targets); labels are int64 class ids.
        On the ``meta`` device the tensors have shapes and dtypes but no data.
        """
        b = self.job.batch_size if batch_size is None else batch_size
        ds = self.job.dataset_spec
        shape = (b, *ds.sample_shape)
        device = torch.device(device)
        if device.type == "meta":
            x = torch.empty(shape, device=device)
            y = torch.empty((b,), dtype=torch.long, device=device)
        else:
            g = torch.Generator().manual_seed(seed)
            if self.kind == "classifier":
                x = torch.randn(shape, generator=g)
            elif self.kind == "vae":
                x = torch.rand(shape, generator=g)
            else:
                x = torch.rand(shape, generator=g) * 2 - 1
            y = torch.randint(0, ds.num_classes, (b,), generator=g)
            x, y = x.to(device), y.to(device)
        if self.kind in ("classifier", "conditional_gan"):
            return x, y
        return (x,)

    # -- training -----------------------------------------------------------------------------
    def train_step(self, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        """Forward, backward and optimizer step(s) on ``batch``; returns the detached loss
        (for GANs, discriminator loss + generator loss)."""
        if self.kind == "classifier":
            return self._classifier_step(*batch)
        if self.kind == "vae":
            return self._vae_step(batch[0])
        labels = batch[1] if self.kind == "conditional_gan" else None
        return self._gan_step(batch[0], labels)

    def _classifier_step(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        (opt,) = self.optimizers
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(self.modules["model"](x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    def _gan_step(self, x: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        gen, disc = self.modules["generator"], self.modules["discriminator"]
        opt_g, opt_d = self.optimizers
        z = torch.randn(x.shape[0], NOISE_DIM, device=x.device, dtype=x.dtype)
        fake = gen(z, labels)
        # Discriminator: real -> 1, fake -> 0 (the generator's graph is cut by detach).
        opt_d.zero_grad(set_to_none=True)
        d_real = disc(x, labels)
        d_fake = disc(fake.detach(), labels)
        d_loss = F.binary_cross_entropy_with_logits(
            d_real, torch.ones_like(d_real)
        ) + F.binary_cross_entropy_with_logits(d_fake, torch.zeros_like(d_fake))
        d_loss.backward()
        opt_d.step()
        # Generator: non-saturating loss, make the discriminator call the fakes real.
        opt_g.zero_grad(set_to_none=True)
        g_out = disc(fake, labels)
        g_loss = F.binary_cross_entropy_with_logits(g_out, torch.ones_like(g_out))
        g_loss.backward()
        opt_g.step()
        return d_loss.detach() + g_loss.detach()

    def _vae_step(self, x: torch.Tensor) -> torch.Tensor:
        enc, dec = self.modules["encoder"], self.modules["decoder"]
        (opt,) = self.optimizers
        opt.zero_grad(set_to_none=True)
        mean, logvar = enc(x)
        z = mean + torch.randn_like(mean) * torch.exp(0.5 * logvar)  # reparameterisation
        logits = dec(z)
        rec = F.binary_cross_entropy_with_logits(logits, x, reduction="sum")
        kl = -0.5 * torch.sum(1 + logvar - mean.pow(2) - logvar.exp())
        loss = (rec + kl) / x.shape[0]
        loss.backward()
        opt.step()
        return loss.detach()


def build_workload(job: JobSpec, device: str | torch.device = "cpu", seed: int = 0) -> Workload:
    """Build ``job``'s networks directly on ``device`` (``meta`` for a weightless trace) and
    its optimizers; parameters are initialised deterministically from ``seed``."""
    if job.graph is not None:
        raise InputError(f"job {job.key} uses a graph file ({job.graph}), not a catalog model")
    entry = CATALOG[job.model]
    device = torch.device(device)
    torch.manual_seed(seed)
    with torch.device(device):
        net = build_model(job.model, job.dataset)
    modules = net if isinstance(net, nn.ModuleDict) else nn.ModuleDict({"model": net})
    modules.train()
    if entry.kind in ("gan", "conditional_gan"):
        optimizers = [
            make_optimizer(job.optimizer, list(modules["generator"].parameters()), gan=True),
            make_optimizer(job.optimizer, list(modules["discriminator"].parameters()), gan=True),
        ]
    else:
        optimizers = [make_optimizer(job.optimizer, list(modules.parameters()))]
    return Workload(job=job, kind=entry.kind, modules=modules, optimizers=optimizers)


def param_count(workload: Workload | nn.Module) -> int:
    """Number of trainable parameters (all networks of a workload)."""
    mod = workload.modules if isinstance(workload, Workload) else workload
    return sum(p.numel() for p in mod.parameters() if p.requires_grad)


__all__ = ["Workload", "build_workload", "make_optimizer", "param_count"]
