"""The Driple-style graph network of seed 001 §3.1 (and Driple): GCN → shared GCN ×L with a GRU
gate → Set2Set → 3-layer MLP over [readout ‖ u] → targets, plus an out-of-memory logit.

For one encoded graph with N nodes, features X (already log1p-scaled and standardised, see
``gpuscope.predictor.features``) and the GCN operator Â = D̃^{-1/2}(A + I)D̃^{-1/2}:

    h⁰ = ReLU(Â X W₀ + b₀)                                  (first GCN layer, to hidden H)
    mᵗ = ReLU(Â hᵗ⁻¹ W + b)          t = 1 … L             (ONE shared GCN layer)
    hᵗ = GRUCell(mᵗ, hᵗ⁻¹)                                  (the gate between steps)
    r  = Set2Set(h^L)  ∈ R^{2H}                             (3 processing steps)
    z  = ReLU(W₂ ReLU(W₁ [r ‖ u ‖ g] + b₁) + b₂)            (MLP layers 1–2)
    ŷ  = W₃ z + b₃ ∈ R^T,   ℓ_oom = w_oᵀ z + b_o            (layer 3, and the OOM logit)

``u`` is the job's standardised context (batch size, epochs, steps, optimizer, dataset) and
``g`` optional standardised whole-graph statistics (log1p of each node-feature column's
sum and maximum over the graph, log1p node and edge counts, ``batching.graph_stats``; on by
default in training, beyond the seed: Set2Set is an attention-weighted
*mean*, so graph totals such as the summed tensor size, which drive step time, are otherwise
only implicit).

**Number of steps.** The shared layer is applied L times (``steps``, 8 by default: on
titanx L = 8 reached a lower validation loss than the seed's L = N/2 ≈ 50 at about 5× less
CPU per epoch, docs/predictor.md).

Â is computed once per forward pass (``gcn_norm``, as a sparse CSR matrix Â[target, source])
and handed to both GCN layers with ``normalize=False``: the same operator, without recomputing
it L times, and a sparse matrix product instead of a scatter (≈ 20× faster on CPU).
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import Tensor, nn
from torch_geometric.nn import GCNConv, Set2Set
from torch_geometric.nn.conv.gcn_conv import gcn_norm

#: Fields of earlier checkpoints' configs and the only values this gpuscope still reads: the
#: experiment switches no shipped checkpoint used (per-graph L = N/2, sigmoid-bounded peaks,
#: a mean readout, a device-spec input) are gone; a checkpoint that used one must be retrained.
OBSOLETE_CONFIG: dict[str, tuple[object, ...]] = {
    "step_ratio": (0.5,), "max_steps": (64,), "device_dim": (0,), "bounded": ((), []),
    "readout": ("set2set",),
}


@dataclass(frozen=True)
class ModelConfig:
    """Hyperparameters of :class:`DriplePredictorNet` (stored in checkpoints as a dict)."""

    in_dim: int
    context_dim: int
    n_targets: int
    graph_dim: int = 0
    hidden: int = 64
    steps: int = 8
    set2set_steps: int = 3

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelConfig:
        """The config of a checkpoint; ``ValueError`` naming a switch it used that this
        gpuscope no longer has (``OBSOLETE_CONFIG``)."""
        d = dict(d)
        for key, keep in OBSOLETE_CONFIG.items():
            if key in d:
                v = d.pop(key)
                if v not in keep:
                    raise ValueError(f"it was trained with {key}={v!r}, a switch this gpuscope "
                                     "no longer has; retrain it")
        if d.get("steps") is None:
            raise ValueError("it was trained with L = N/2 shared-GCN steps (steps=None), a "
                             "switch this gpuscope no longer has; retrain it")
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
        mlp_in = 2 * h + config.context_dim + config.graph_dim
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

    def embed(self, x: Tensor, edge_index: Tensor, batch: Tensor, num_graphs: int) -> Tensor:
        """Graph readouts r ∈ R^{num_graphs × 2H} of a batch of encoded graphs."""
        adj = normalized_adjacency(edge_index, x.size(0), x.dtype)
        h = torch.relu(self.conv_in(x, adj))
        for _ in range(self.config.steps if num_graphs else 0):
            h = self.gru(torch.relu(self.conv_shared(h, adj)), h)
        return self.readout(h, batch, dim_size=num_graphs)

    def head_forward(self, readout: Tensor, context: Tensor, gstats: Tensor | None = None
                     ) -> tuple[Tensor, Tensor]:
        """The MLP over [r ‖ u (‖ g)] → (targets ŷ [n × T], OOM logits [n])."""
        parts = [readout, context]
        if self.config.graph_dim:
            if gstats is None:
                raise ValueError("this model takes whole-graph statistics; none were given")
            parts.append(gstats)
        z = torch.relu(self.mlp1(torch.cat(parts, dim=1)))
        z = torch.relu(self.mlp2(z))
        return self.head(z), self.oom_head(z).squeeze(1)

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor,
        batch: Tensor,
        num_graphs: int,
        graph_index: Tensor,
        context: Tensor,
        gstats: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """Predict rows whose graphs are ``graph_index`` into this batch's ``num_graphs``
        distinct graphs (rows that share a graph, e.g. 10 vs 20 epochs, embed it once)."""
        r = self.embed(x, edge_index, batch, num_graphs)
        return self.head_forward(r[graph_index], context, gstats)


def normalized_adjacency(edge_index: Tensor, num_nodes: int, dtype: torch.dtype) -> Tensor:
    """Â = D̃^{-1/2}(A + I)D̃^{-1/2} as a sparse CSR matrix indexed [target, source] (the
    ``adj_t`` layout PyG's GCNConv multiplies with)."""
    ei, ew = gcn_norm(edge_index, None, num_nodes, add_self_loops=True, dtype=dtype)
    with warnings.catch_warnings():  # CSR "beta" notice; the tensor is built valid here
        warnings.simplefilter("ignore", UserWarning)
        coo = torch.sparse_coo_tensor(ei.flip(0), ew, (num_nodes, num_nodes),
                                      check_invariants=False)
        return coo.coalesce().to_sparse_csr()
