"""Reference for the memory model's tests: the bytes autograd really saves for backward,
counted with ``torch.autograd.graph.saved_tensors_hooks`` (storages once; the given tensors,
typically the parameters and the input batch, excluded)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import torch


@contextmanager
def saved_storage_bytes(exclude: Iterable[torch.Tensor]) -> Iterator[dict[int, int]]:
    """While active, every tensor autograd packs is recorded as ``{storage ptr: bytes}`` in the
    yielded dict, except storages of ``exclude``; sum its values after the forward pass."""
    skip = {t.untyped_storage().data_ptr() for t in exclude}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        s = t.untyped_storage()
        if s.data_ptr() not in skip:
            seen[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        yield seen
