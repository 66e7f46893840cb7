"""Generative models of the catalog (MNIST, 28×28×1).

* ``gan``: Goodfellow et al. (2014) with multilayer perceptrons — G: z(100) → 256 → 512 → 1024
  → 784 (tanh), D: 784 → 512 → 256 → 1, LeakyReLU(0.2).
* ``conditional_gan``: Mirza & Osindero (2014) — the same MLPs with a 10-d label embedding
  concatenated to G's noise and to D's input.
* ``dcgan``: Radford et al. (2016) as in TensorFlow's MNIST DCGAN tutorial — G: dense 7×7×256,
  transposed convs 5×5 to 128 (stride 1), 64 (stride 2), 1 (stride 2, tanh), BN + LeakyReLU;
  D: conv 5×5/2 64 and 128, LeakyReLU, dropout 0.3, dense 1.
* ``cvae``: Kingma & Welling (2014) VAE with the convolutional encoder/decoder of TensorFlow's
  "Convolutional VAE" tutorial (conv 3×3/2 32, 64 → dense 2·latent; dense 7×7×32 →
  transposed conv 64, 32 (stride 2) → 1), latent dimension 2.
"""

from __future__ import annotations

import torch
from torch import nn

NOISE_DIM = 100
CVAE_LATENT = 2


class MLPGenerator(nn.Module):
    def __init__(self, out_pixels: int, num_classes: int = 0) -> None:
        super().__init__()
        self.embed = nn.Embedding(num_classes, num_classes) if num_classes else None
        cin = NOISE_DIM + num_classes
        self.net = nn.Sequential(
            nn.Linear(cin, 256), nn.LeakyReLU(0.2), nn.Linear(256, 512), nn.LeakyReLU(0.2),
            nn.Linear(512, 1024), nn.LeakyReLU(0.2), nn.Linear(1024, out_pixels), nn.Tanh(),
        )
        self.out_pixels = out_pixels

    def forward(self, z: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        if self.embed is not None:
            z = torch.cat([z, self.embed(labels)], dim=1)
        side = int(round(self.out_pixels ** 0.5))
        return self.net(z).view(z.shape[0], 1, side, side)


class MLPDiscriminator(nn.Module):
    def __init__(self, in_pixels: int, num_classes: int = 0) -> None:
        super().__init__()
        self.embed = nn.Embedding(num_classes, num_classes) if num_classes else None
        self.net = nn.Sequential(
            nn.Linear(in_pixels + num_classes, 512), nn.LeakyReLU(0.2),
            nn.Linear(512, 256), nn.LeakyReLU(0.2), nn.Linear(256, 1),
        )

    def forward(self, x: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        h = x.flatten(1)
        if self.embed is not None:
            h = torch.cat([h, self.embed(labels)], dim=1)
        return self.net(h)


class DCGANGenerator(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Sequential(
            nn.Linear(NOISE_DIM, 7 * 7 * 256, bias=False), nn.BatchNorm1d(7 * 7 * 256),
            nn.LeakyReLU(0.3),
        )
        self.deconv = nn.Sequential(
            nn.ConvTranspose2d(256, 128, 5, stride=1, padding=2, bias=False),
            nn.BatchNorm2d(128), nn.LeakyReLU(0.3),
            nn.ConvTranspose2d(128, 64, 5, stride=2, padding=2, output_padding=1, bias=False),
            nn.BatchNorm2d(64), nn.LeakyReLU(0.3),
            nn.ConvTranspose2d(64, 1, 5, stride=2, padding=2, output_padding=1, bias=False),
            nn.Tanh(),
        )

    def forward(self, z: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        return self.deconv(self.fc(z).view(z.shape[0], 256, 7, 7))


class DCGANDiscriminator(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 64, 5, stride=2, padding=2), nn.LeakyReLU(0.3), nn.Dropout(0.3),
            nn.Conv2d(64, 128, 5, stride=2, padding=2), nn.LeakyReLU(0.3), nn.Dropout(0.3),
            nn.Flatten(), nn.Linear(128 * 7 * 7, 1),
        )

    def forward(self, x: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        return self.net(x)


class CVAEEncoder(nn.Module):
    """q(z|x): returns the mean and log-variance of a diagonal Gaussian."""

    def __init__(self, latent: int = CVAE_LATENT) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 32, 3, stride=2, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU(inplace=True),
            nn.Flatten(), nn.Linear(64 * 7 * 7, 2 * latent),
        )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, logvar = self.net(x).chunk(2, dim=1)
        return mean, logvar


class CVAEDecoder(nn.Module):
    """p(x|z): Bernoulli logits for each pixel."""

    def __init__(self, latent: int = CVAE_LATENT) -> None:
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(latent, 7 * 7 * 32), nn.ReLU(inplace=True))
        self.deconv = nn.Sequential(
            nn.ConvTranspose2d(32, 64, 3, stride=2, padding=1, output_padding=1),
            nn.ReLU(inplace=True),
            nn.ConvTranspose2d(64, 32, 3, stride=2, padding=1, output_padding=1),
            nn.ReLU(inplace=True),
            nn.ConvTranspose2d(32, 1, 3, stride=1, padding=1),
        )

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.deconv(self.fc(z).view(z.shape[0], 32, 7, 7))


def generative(model: str, channels: int, size: int, num_classes: int) -> nn.ModuleDict:
    """The named networks of a generative model, as an ``nn.ModuleDict``."""
    pixels = channels * size * size
    if model == "gan":
        return nn.ModuleDict({"generator": MLPGenerator(pixels),
                              "discriminator": MLPDiscriminator(pixels)})
    if model == "conditional_gan":
        return nn.ModuleDict({"generator": MLPGenerator(pixels, num_classes),
                              "discriminator": MLPDiscriminator(pixels, num_classes)})
    if model == "dcgan":
        return nn.ModuleDict({"generator": DCGANGenerator(),
                              "discriminator": DCGANDiscriminator()})
    if model == "cvae":
        return nn.ModuleDict({"encoder": CVAEEncoder(), "decoder": CVAEDecoder()})
    raise KeyError(model)
