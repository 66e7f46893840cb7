"""Intra-op thread count for the predictor's small tensor ops.

The GNN's operations are small (≤ 100 nodes per graph, hidden 64), so they are latency-bound:
on a shared 2-core machine, two OpenMP threads per op spend most of their time waiting for
each other (CHANGELOG.md has the timing). Training and inference therefore run with one
intra-op thread by default; ``threads=None`` leaves torch's setting alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run the block with ``n`` intra-op threads (None: unchanged), then restore."""
    if n is None:
        yield
        return
    prev = torch.get_num_threads()
    torch.set_num_threads(max(1, int(n)))
    try:
        yield
    finally:
        torch.set_num_threads(prev)
