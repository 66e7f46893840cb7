"""An example "bring your own job" model: a small BERT-style text classifier in plain PyTorch.

    gpuscope estimate --module my_model.py:build --dataset tokens:seq=512,vocab=30522 \
        --batch-size 8 --optimizer adamw --precision amp-bf16 --devices all

(In the repository it is ``examples/my_model.py``; ``gpuscope jobs template`` writes a copy
next to the example queue, whose ``module`` column names it.)

``build()`` returns the module; it may instead return ``(module, input_spec)`` where the input
spec is a dataset string (``"tokens:seq=512,vocab=30522"``) or a per-sample shape, used when
the command names no ``--dataset`` (see ``build_with_inputs``).
"""

from __future__ import annotations

import torch
from torch import nn


class TextClassifier(nn.Module):
    """Token embedding + learned positions, a pre-norm Transformer encoder, mean pooling and a
    linear head. ``forward(ids: (batch, seq) int64) -> (batch, classes)`` logits."""

    def __init__(self, vocab: int = 30522, seq: int = 512, dim: int = 512, layers: int = 6,
                 heads: int = 8, classes: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(seq, dim))
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.1, batch_first=True,
                                           norm_first=True, activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids) + self.pos[: ids.shape[1]]
        x = self.norm(self.encoder(x))
        return self.head(x.mean(dim=1))


def build() -> nn.Module:
    """The model alone: the command's --dataset gives the inputs."""
    return TextClassifier()


def build_with_inputs() -> tuple[nn.Module, str]:
    """The model and its input spec (used when no --dataset is given)."""
    return TextClassifier(seq=256), "tokens:seq=256,vocab=30522"
