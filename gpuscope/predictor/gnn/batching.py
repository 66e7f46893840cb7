"""Network inputs and mini-batches: scaled graphs, row → graph index, scaled contexts.

Label rows that share a graph (the same job at 10 and 20 epochs) point to one graph, and a
mini-batch embeds each of its distinct graphs once (a PyG ``Batch`` of the distinct graphs),
then the MLP runs per row over [readout[graph] ‖ u]. This halves the GNN work on seed 001
Table 3 datasets without changing the math.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Batch, Data

from gpuscope.predictor.gnn.model import DriplePredictorNet
from gpuscope.predictor.scaling import Standardizer


@dataclass
class NetInputs:
    """Everything the network reads for a set of rows (graphs already feature-scaled)."""

    graphs: list[Data]
    graph_keys: list[str]
    graph_index: Tensor
    context: Tensor
    gstats: Tensor | None = None

    def row_gstats(self, rows: Tensor) -> Tensor | None:
        return self.gstats[self.graph_index[rows]] if self.gstats is not None else None

    def __len__(self) -> int:
        return int(self.graph_index.shape[0])


def scale_graph(g: Data, features: Standardizer) -> Data:
    return Data(x=features.transform(g.x.float()), edge_index=g.edge_index.long(),
                num_nodes=int(g.x.shape[0]))


def graph_stats(g: Data, width: int | None = None) -> Tensor:
    """Whole-graph statistics g of one raw encoded graph (beyond the seed: Set2Set is a
    weighted *mean*, so totals such as the whole model's tensor volume are lost in r):
    log1p Σ_nodes x_f per feature column f, log1p node count, then log1p max_nodes x_f per
    column and log1p edge count. ``width`` keeps the first ``width`` entries (a checkpoint
    fitted on the shorter F + 1 form of sums and node count keeps loading)."""
    x = g.x.double().clamp(min=0)
    n_edges = float(g.edge_index.shape[1]) if getattr(g, "edge_index", None) is not None else 0.0
    mx = x.max(0).values if x.shape[0] else torch.zeros(x.shape[1], dtype=torch.float64)
    full = torch.cat([torch.log1p(x.sum(0)),
                      torch.log1p(torch.tensor([float(x.shape[0])], dtype=torch.float64)),
                      torch.log1p(mx),
                      torch.log1p(torch.tensor([n_edges], dtype=torch.float64))])
    return full if width is None else full[:width]


def build_inputs(graph_keys: list[str], graphs: dict[str, Data], context: Tensor,
                 features: Standardizer, contexts: Standardizer,
                 scaled_cache: dict[str, Data] | None = None,
                 gstats: Standardizer | None = None) -> NetInputs:
    """Scale the graphs of ``graph_keys`` (rows) once each and the rows' context vectors."""
    keys = sorted(set(graph_keys))
    pos = {k: i for i, k in enumerate(keys)}
    scaled = []
    for k in keys:
        if scaled_cache is not None and k in scaled_cache:
            scaled.append(scaled_cache[k])
            continue
        s = scale_graph(graphs[k], features)
        if scaled_cache is not None:
            scaled_cache[k] = s
        scaled.append(s)
    gi = torch.tensor([pos[k] for k in graph_keys], dtype=torch.long)
    gs = None
    if gstats is not None:
        gs = gstats.transform(torch.stack([graph_stats(graphs[k], len(gstats.mean_))
                                           for k in keys]))
    return NetInputs(scaled, keys, gi, contexts.transform(context), gs)


def iter_batches(inp: NetInputs, rows: np.ndarray, batch_size: int, shuffle: bool,
                 generator: torch.Generator | None = None
                 ) -> Iterator[tuple[np.ndarray, Batch, Tensor]]:
    """Yield (row ids, PyG Batch of the rows' distinct graphs, row → position in the Batch).

    Batches are formed over *graphs*: the distinct graphs of ``rows`` are (shuffled and)
    taken in turn, each with all of its rows, until a batch holds ≥ ``batch_size`` rows, so
    a graph is embedded once per epoch however many rows share it.
    """
    rows = np.asarray(rows, dtype=np.int64)
    if rows.size == 0:
        return
    gids = inp.graph_index[torch.as_tensor(rows)].numpy()
    uniq = np.unique(gids)
    if shuffle:
        uniq = uniq[torch.randperm(uniq.size, generator=generator).numpy()]
    order = np.argsort(gids, kind="stable")
    sorted_g = gids[order]
    starts = np.searchsorted(sorted_g, uniq, side="left")
    ends = np.searchsorted(sorted_g, uniq, side="right")
    chunk: list[np.ndarray] = []
    members: list[int] = []
    n = 0
    for g, a, b in zip(uniq.tolist(), starts, ends):
        chunk.append(rows[order[a:b]])
        members.append(g)
        n += b - a
        if n >= batch_size:
            yield _make(inp, chunk, members)
            chunk, members, n = [], [], 0
    if chunk:
        yield _make(inp, chunk, members)


def _make(inp: NetInputs, chunk: list[np.ndarray], members: list[int]
          ) -> tuple[np.ndarray, Batch, Tensor]:
    r = np.concatenate(chunk)
    local = torch.cat([torch.full((c.size,), i, dtype=torch.long) for i, c in enumerate(chunk)])
    return r, Batch.from_data_list([inp.graphs[g] for g in members]), local


def forward_rows(model: DriplePredictorNet, inp: NetInputs, rows: np.ndarray, batch: Batch,
                 local: Tensor) -> tuple[Tensor, Tensor]:
    r = torch.as_tensor(rows)
    return model(batch.x, batch.edge_index, batch.batch, batch.num_graphs, local,
                 inp.context[r], inp.row_gstats(r))


@torch.no_grad()
def predict_inputs(model: DriplePredictorNet, inp: NetInputs, rows: np.ndarray | None = None,
                   graph_chunk: int = 256) -> tuple[Tensor, Tensor]:
    """Normalised predictions and OOM logits of ``rows`` (all by default) in eval mode.

    Every distinct graph is embedded once (in chunks of ``graph_chunk`` graphs), then the MLP
    runs over all rows in one pass.
    """
    model.eval()
    rows = np.arange(len(inp)) if rows is None else np.asarray(rows, dtype=np.int64)
    r = torch.as_tensor(rows)
    gids = inp.graph_index[r]
    uniq, local = torch.unique(gids, return_inverse=True)
    readouts = []
    ids = uniq.tolist()
    for s in range(0, len(ids), graph_chunk):
        b = Batch.from_data_list([inp.graphs[i] for i in ids[s:s + graph_chunk]])
        readouts.append(model.embed(b.x, b.edge_index, b.batch, b.num_graphs))
    ro = torch.cat(readouts) if readouts else torch.zeros((0, 2 * model.config.hidden))
    return model.head_forward(ro[local], inp.context[r], inp.row_gstats(r))
