"""Tracing-time substitution of a ``torch.nn.functional`` entry point (``fused_attention``,
``gpu_dropout``): the module attribute is replaced, so every caller that looks it up at call
time sees the substitute, and restored on exit."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from torch.nn import functional as F


@contextlib.contextmanager
def swap_functional(name: str, original: Callable[..., Any], replacement: Callable[..., Any],
                    enabled: bool = True) -> Iterator[None]:
    """Within the block ``F.<name>`` is ``replacement``; a no-op when disabled or when someone
    else already replaced ``original`` (nested or foreign patches are left alone)."""
    if not enabled or getattr(F, name) is not original:
        yield
        return
    setattr(F, name, replacement)
    try:
        yield
    finally:
        setattr(F, name, original)
