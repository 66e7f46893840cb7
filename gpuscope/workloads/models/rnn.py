"""Seed 004's workloads (Table II), as aymericdamien/TensorFlow-Examples defines them, in PyTorch.

The recurrent classifiers read an MNIST image as 28 steps of 28 features (dataset
``mnist_seq``) and classify from the last output:

* ``rnn``: ``recurrent_network.py`` — one LSTM layer of 128 units, dense 10;
* ``birnn``: ``bidirectional_rnn.py`` — forward and backward LSTMs of 128 units, the last
  step's concatenated 256 outputs into dense 10;
* ``gru``: the same as ``rnn`` with a GRU cell (seed 004 lists a GRU; TensorFlow-Examples has
  none, so this is the ``rnn`` script with ``GRUCell``);
* ``dynamic_rnn``: ``dynamic_rnn.py`` — an LSTM of 64 units over variable-length sequences,
  classified from the output at each sequence's own last step. A sample's length is the
  number of steps up to its last non-zero row (all-zero trailing rows are padding), found with
  tensor ops only (no host sync), so the step stays traceable.
* ``vae_mlp``: ``variational_autoencoder.py`` on MNIST images — encoder 784 → 512 (tanh) →
  mean and log-variance of a 2-d latent; decoder 2 → 512 (tanh) → 784 (Bernoulli logits).

Builders take ``(features, steps, classes)`` for sequence datasets and ``(channels, size,
classes)`` for images, as the catalog passes them.
"""

from __future__ import annotations

import torch
from torch import nn

RNN_HIDDEN = 128
DYNAMIC_HIDDEN = 64
VAE_HIDDEN = 512
VAE_LATENT = 2


class RecurrentClassifier(nn.Module):
    """A one-layer LSTM/GRU (optionally bidirectional) over ``(b, steps, features)``."""

    def __init__(self, cell: str, features: int, classes: int, hidden: int = RNN_HIDDEN,
                 bidirectional: bool = False, dynamic: bool = False) -> None:
        super().__init__()
        rnn_cls = {"lstm": nn.LSTM, "gru": nn.GRU}[cell]
        self.rnn = rnn_cls(features, hidden, batch_first=True, bidirectional=bidirectional)
        self.out = nn.Linear(hidden * (2 if bidirectional else 1), classes)
        self.dynamic = dynamic

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.rnn(x)  # (b, steps, hidden·dirs)
        if self.dynamic:
            steps = x.shape[1]
            nonzero = (x.abs().sum(dim=2) > 0).to(torch.long)  # (b, steps)
            pos = torch.arange(1, steps + 1, device=x.device).expand_as(nonzero)
            length = (nonzero * pos).amax(dim=1).clamp(min=1)  # last non-zero step, 1-based
            idx = (length - 1).view(-1, 1, 1).expand(-1, 1, y.shape[2])
            last = y.gather(1, idx).squeeze(1)
        else:
            last = y[:, -1]
        return self.out(last)


def rnn(features: int, steps: int, classes: int) -> nn.Module:
    return RecurrentClassifier("lstm", features, classes)


def birnn(features: int, steps: int, classes: int) -> nn.Module:
    return RecurrentClassifier("lstm", features, classes, bidirectional=True)


def gru(features: int, steps: int, classes: int) -> nn.Module:
    return RecurrentClassifier("gru", features, classes)


def dynamic_rnn(features: int, steps: int, classes: int) -> nn.Module:
    return RecurrentClassifier("lstm", features, classes, hidden=DYNAMIC_HIDDEN, dynamic=True)


class MLPEncoder(nn.Module):
    def __init__(self, pixels: int) -> None:
        super().__init__()
        self.hidden = nn.Sequential(nn.Flatten(), nn.Linear(pixels, VAE_HIDDEN), nn.Tanh())
        self.mean = nn.Linear(VAE_HIDDEN, VAE_LATENT)
        self.logvar = nn.Linear(VAE_HIDDEN, VAE_LATENT)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.hidden(x)
        return self.mean(h), self.logvar(h)


class MLPDecoder(nn.Module):
    def __init__(self, channels: int, size: int) -> None:
        super().__init__()
        self.shape = (channels, size, size)
        self.net = nn.Sequential(nn.Linear(VAE_LATENT, VAE_HIDDEN), nn.Tanh(),
                                 nn.Linear(VAE_HIDDEN, channels * size * size))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z).view(z.shape[0], *self.shape)


def vae_mlp(channels: int, size: int, classes: int) -> nn.Module:
    return nn.ModuleDict({"encoder": MLPEncoder(channels * size * size),
                          "decoder": MLPDecoder(channels, size)})


__all__ = ["RecurrentClassifier", "birnn", "dynamic_rnn", "gru", "rnn", "vae_mlp"]
