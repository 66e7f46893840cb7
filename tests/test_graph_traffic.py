"""Indexed reads are charged for the rows they select (gpuscope.graphs.ops.traffic)."""

from __future__ import annotations

import torch
from torch import nn

from gpuscope.graphs.frontends.torch import trace_train_step
from gpuscope.graphs.ops.traffic import SECTOR_BYTES, read_bytes


def test_nll_loss_reads_one_sector_per_target() -> None:
    logp, target = torch.empty(64, 1000), torch.zeros(64, dtype=torch.long)
    # 64 gathered fp32 values, each a 32-byte sector, plus the 64 int64 targets; not 256 kB
    assert read_bytes("nll_loss_forward", [logp, target]) == 64 * SECTOR_BYTES + 64 * 8
    # the backward writes a dense gradient and reads its inputs whole (default rule)
    assert read_bytes("nll_loss_backward", [logp, target]) == 64 * 1000 * 4 + 64 * 8


def test_embedding_and_index_select_read_selected_rows() -> None:
    weight, idx = torch.empty(1000, 16), torch.zeros(8, 5, dtype=torch.long)
    assert read_bytes("embedding", [weight, idx]) == 40 * 16 * 4 + 40 * 8
    # index_select along dim 1 of (1000, 16): a slice is a 1000-element column
    assert read_bytes("index_select", [weight, torch.zeros(3, dtype=torch.long)], 1) == 3 * 1000 * 4 + 24
    # never more than the whole table
    many = torch.zeros(10_000, dtype=torch.long)
    assert read_bytes("gather", [torch.empty(10), many]) == 10 * 4 + 10_000 * 8
    assert read_bytes("relu", [weight, weight]) == 1000 * 16 * 4  # a tensor counted once


def test_traced_cross_entropy_loss_is_not_charged_for_the_vocabulary() -> None:
    torch.manual_seed(0)
    vocab, tokens = 5000, 32
    m = nn.Sequential(nn.Embedding(vocab, 8), nn.Linear(8, vocab))
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    x = torch.randint(0, vocab, (tokens,))

    def step(b: torch.Tensor) -> None:
        opt.zero_grad()
        nn.functional.cross_entropy(m(b), b).backward()
        opt.step()

    g = trace_train_step(step, x, m, [opt])
    by_op = {n.op: n.bytes_accessed for n in g.nodes}
    nll = by_op["aten.nll_loss_forward.default"]
    assert nll is not None and nll < 4 * tokens * (SECTOR_BYTES + 8)  # not tokens x vocab x 4
    emb = by_op["aten.embedding.default"]
    assert emb is not None and emb < tokens * (8 * 4 + 8) + tokens * 8 * 4 + 1  # rows + out
