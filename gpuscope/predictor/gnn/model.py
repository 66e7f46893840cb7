"""The Driple-style graph network of seed 001 §3.1 (and Driple): GCN → shared GCN ×L with a GRU
gate → Set2Set → 3-layer MLP over [readout ‖ u] → targets, plus an out-of-memory logit.

For one encoded graph with N nodes, features X (already log1p-scaled and standardised, see
``gpuscope.predictor.features``) and the GCN operator Â = D̃^{-1/2}(A + I)D̃^{-1/2}:

    h⁰ = ReLU(Â X W₀ + b₀)                                  (first GCN layer, to hidden H)
    mᵗ = ReLU(Â hᵗ⁻¹ W + b)          t = 1 … L             (ONE shared GCN layer)
    hᵗ = GRUCell(mᵗ, hᵗ⁻¹)                                  (the gate between steps)
    r  = Set2Set(h^L)  ∈ R^{2H}                             (3 processing steps)
    z  = ReLU(W₂ ReLU(W₁ [r ‖ u ‖ d] + b₁) + b₂)            (MLP layers 1–2)
    ŷ  = W₃ z + b₃ ∈ R^T,   ℓ_oom = w_oᵀ z + b_o            (layer 3, and the OOM logit)

``u`` is the job's standardised context (batch size, epochs, steps, optimizer, dataset),
``d`` an optional standardised device-spec vector (the multi-device model, beyond the seed)
and ``g`` optional standardised whole-graph statistics (log1p of each node-feature column's
sum and maximum over the graph, log1p node and edge counts, ``batching.graph_stats``; on by
default in training, beyond the seed: Set2Set is an attention-weighted
*mean*, so graph totals such as the summed tensor size, which drive step time, are otherwise
only implicit).

**Number of steps.** Seed 001 applies the shared layer N/2 times. In a batch the graphs have
different node counts, so L is defined per graph: L_g = max(1, ⌈ratio · N_g⌉) with N_g the
node count of graph g's encoded graph (≤ K = 100 groups) and ratio = 0.5 by default; nodes of
a graph whose L_g is reached stop being updated (hᵗ = hᵗ⁻¹) while the others go on. A
prediction therefore does not depend on which other graphs share its batch. ``steps`` fixes L
for every graph instead (training's default is ``steps=8``, ``gpuscope.predictor.gnn.train``).

Â is computed once per forward pass (``gcn_norm``, as a sparse CSR matrix Â[target, source])
and handed to both GCN layers with ``normalize=False``: the same operator, without recomputing
it L times, and a sparse matrix product instead of a scatter (≈ 20× faster on CPU).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import Tensor, nn
from torch_geometric.nn import GCNConv, Set2Set
from torch_geometric.nn.conv.gcn_conv import gcn_norm


@dataclass(frozen=True)
class ModelConfig:
    """Hyperparameters of :class:`DriplePredictorNet` (stored in checkpoints as a dict)."""

    in_dim: int
    context_dim: int
    n_targets: int
    device_dim: int = 0
    graph_dim: int = 0
    hidden: int = 64
    step_ratio: float = 0.5
    steps: int | None = None
    max_steps: int = 64
    set2set_steps: int = 3
    #: output indices squashed by a sigmoid (bounded peaks, beyond the seed; () = linear)
    bounded: tuple[int, ...] = ()
    #: ``set2set`` (seed 001: shared GCN x L + GRU, Set2Set) or ``mean`` (ablation:
    #: no message passing, a per-node linear layer and a plain mean over the nodes)
    readout: str = "set2set"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["bounded"] = [int(i) for i in self.bounded]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelConfig:
        d = dict(d)
        d["bounded"] = tuple(int(i) for i in d.get("bounded", ()))
        return cls(**d)


class DriplePredictorNet(nn.Module):
    """GCN + GRU-gated shared GCN + Set2Set + MLP (see the module docstring for the math)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        h = config.hidden
        self.conv_in = GCNConv(config.in_dim, h, normalize=False)
        self.conv_shared = GCNConv(h, h, normalize=False)
        self.gru = nn.GRUCell(h, h)
        self.readout = Set2Set(h, processing_steps=config.set2set_steps)
        r_dim = h if config.readout == "mean" else 2 * h
        mlp_in = r_dim + config.context_dim + config.device_dim + config.graph_dim
        self.mlp1 = nn.Linear(mlp_in, h)
        self.mlp2 = nn.Linear(h, h)
        self.head = nn.Linear(h, config.n_targets)
        self.oom_head = nn.Linear(h, 1)

    #: Parameter-name prefixes of the MLP head (``--finetune head`` trains only these).
    HEAD_PREFIXES: tuple[str, ...] = ("mlp1.", "mlp2.", "head.", "oom_head.")

    def reset_parameters(self) -> None:
        self.conv_in.reset_parameters()
        self.conv_shared.reset_parameters()
        self.gru.reset_parameters()
        self.readout.reset_parameters()
        for lin in (self.mlp1, self.mlp2, self.head, self.oom_head):
            lin.reset_parameters()

    def graph_steps(self, num_nodes: Tensor) -> Tensor:
        """L_g per graph from its node count (``steps`` overrides, capped at ``max_steps``)."""
        c = self.config
        if c.steps is not None:
            steps = torch.full_like(num_nodes, int(c.steps))
        else:
            steps = torch.ceil(num_nodes.to(torch.float64) * c.step_ratio).to(torch.long)
        return steps.clamp(min=1, max=c.max_steps)

    def embed(self, x: Tensor, edge_index: Tensor, batch: Tensor, num_graphs: int) -> Tensor:
        """Graph readouts r ∈ R^{num_graphs × 2H} of a batch of encoded graphs."""
        if self.config.readout == "mean":  # ablation: no graph structure at all
            h = torch.relu(self.conv_in.lin(x) + self.conv_in.bias)
            s = torch.zeros(num_graphs, h.size(1), dtype=h.dtype).index_add_(0, batch, h)
            n = torch.bincount(batch, minlength=num_graphs).clamp(min=1).unsqueeze(1)
            return s / n
        adj = normalized_adjacency(edge_index, x.size(0), x.dtype)
        h = torch.relu(self.conv_in(x, adj))
        num_nodes = torch.bincount(batch, minlength=num_graphs)
        steps = self.graph_steps(num_nodes)
        node_steps = steps[batch]
        n_iter = int(steps.max().item()) if num_graphs else 0
        for t in range(n_iter):
            m = torch.relu(self.conv_shared(h, adj))
            h_new = self.gru(m, h)
            if bool((node_steps > t).all()):
                h = h_new
            else:  # graphs whose L_g is reached keep their state
                h = torch.where((node_steps > t).unsqueeze(1), h_new, h)
        return self.readout(h, batch, dim_size=num_graphs)

    def head_forward(
        self, readout: Tensor, context: Tensor, device: Tensor | None = None,
        gstats: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """The MLP over [r ‖ u (‖ d) (‖ g)] → (targets ŷ [n × T], OOM logits [n])."""
        parts = [readout, context]
        if self.config.device_dim:
            if device is None:
                raise ValueError("this model takes a device-spec vector; none was given")
            parts.append(device)
        if self.config.graph_dim:
            if gstats is None:
                raise ValueError("this model takes whole-graph statistics; none were given")
            parts.append(gstats)
        z = torch.relu(self.mlp1(torch.cat(parts, dim=1)))
        z = torch.relu(self.mlp2(z))
        y = self.head(z)
        if self.config.bounded:  # a bimodal peak (0 vs ≈ 95 %) as a soft class in [0, 1]
            idx = torch.tensor(self.config.bounded, dtype=torch.long)
            y = y.index_copy(1, idx, torch.sigmoid(y.index_select(1, idx)))
        return y, self.oom_head(z).squeeze(1)

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor,
        batch: Tensor,
        num_graphs: int,
        graph_index: Tensor,
        context: Tensor,
        device: Tensor | None = None,
        gstats: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """Predict rows whose graphs are ``graph_index`` into this batch's ``num_graphs``
        distinct graphs (rows that share a graph, e.g. 10 vs 20 epochs, embed it once)."""
        r = self.embed(x, edge_index, batch, num_graphs)
        return self.head_forward(r[graph_index], context, device, gstats)


def normalized_adjacency(edge_index: Tensor, num_nodes: int, dtype: torch.dtype) -> Tensor:
    """Â = D̃^{-1/2}(A + I)D̃^{-1/2} as a sparse CSR matrix indexed [target, source] (the
    ``adj_t`` layout PyG's GCNConv multiplies with)."""
    ei, ew = gcn_norm(edge_index, None, num_nodes, add_self_loops=True, dtype=dtype)
    with warnings.catch_warnings():  # CSR "beta" notice; the tensor is built valid here
        warnings.simplefilter("ignore", UserWarning)
        coo = torch.sparse_coo_tensor(ei.flip(0), ew, (num_nodes, num_nodes),
                                      check_invariants=False)
        return coo.coalesce().to_sparse_csr()


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def default_steps(num_nodes: int, ratio: float = 0.5) -> int:
    """L for a single graph of ``num_nodes`` nodes (seed 001: N/2)."""
    return max(1, math.ceil(num_nodes * ratio))
