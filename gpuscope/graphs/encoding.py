"""Driple's graph encoding (seed 001 §3.1; design.md "Graph encoding").

training-step graph → largest weakly connected component → K groups (asynchronous fluid
communities, fixed seed) → adjacency between groups and per-group features.

* Groups: a graph whose component has ≤ K nodes keeps one group per node. Otherwise
  ``networkx.algorithms.community.asyn_fluidc`` on the undirected component (it needs a
  connected graph and k ≤ nodes), seeded. ``grouping="coarsen"`` first contracts chains
  (nodes with one producer and one consumer merge into their producer; documented speed-up for
  very large graphs), then runs fluid communities on the contracted graph; ``"fluid"`` is the
  paper-literal path. Groups are ordered by their smallest node index (deterministic).
* Adjacency: groups a ≠ b are linked when any op edge crosses between them; ``edge_index``
  holds both directions (the adjacency is symmetric, as Driple's GCN uses it), sorted.
* Features ``driple`` (F=3): summed output tensor size (elements), number of ops, summed op
  frequency (``OpVocabulary``). Features ``rich`` (F=6+len(OP_CLASSES)): log1p summed elements,
  log1p summed output bytes, number of ops, summed op frequency, log1p summed FLOPs, log1p
  summed bytes accessed, then the count of ops of each canonical class (``OP_CLASSES`` order).

``context_vector(job)`` is the graph-level context ``u`` (order in ``CONTEXT_FEATURES``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import networkx as nx
import numpy as np

from gpuscope.core.errors import InputError
from gpuscope.graphs.opgraph import OP_CLASSES, OpGraph
from gpuscope.graphs.vocab import OpVocabulary
from gpuscope.jobs.spec import JobSpec

FEATURES: dict[str, tuple[str, ...]] = {
    "driple": ("out_numel", "n_ops", "op_freq"),
    "rich": ("log_out_numel", "log_out_bytes", "n_ops", "op_freq", "log_flops",
             "log_bytes_accessed") + tuple(f"class_{c}" for c in OP_CLASSES),
}
GROUPINGS: tuple[str, ...] = ("fluid", "coarsen")

#: The optimizers and datasets of the context one-hots: frozen at the seed-001 jobs' lists so
#: that trained checkpoints keep their input width when ``gpuscope.jobs.spec`` learns new ones (a
#: job with another optimizer or dataset gets all-zero one-hots until the predictor is
#: retrained with a wider list).
CONTEXT_OPTIMIZERS: tuple[str, ...] = ("sgd", "adam")
CONTEXT_DATASETS: tuple[str, ...] = ("imagenet", "cifar10", "mnist")

#: Graph-level context u, in this order.
CONTEXT_FEATURES: tuple[str, ...] = (
    ("log2_batch_size", "epochs", "log10_steps_per_epoch", "log10_total_steps")
    + tuple(f"optimizer_{o}" for o in CONTEXT_OPTIMIZERS)
    + tuple(f"dataset_{d}" for d in CONTEXT_DATASETS)
)
CONTEXT_DIM: int = len(CONTEXT_FEATURES)

if TYPE_CHECKING:  # torch and torch_geometric load on first use (keeps `gpuscope --help` fast)
    import torch
    from torch_geometric.data import Data


def largest_component(graph: OpGraph) -> list[int]:
    """Node indices of the largest weakly connected component (ties: smallest first index)."""
    if not graph.nodes:
        raise InputError(f"graph {graph.name!r} has no nodes to encode")
    comps = [sorted(c) for c in nx.weakly_connected_components(graph.to_networkx())]
    return max(comps, key=lambda c: (len(c), -c[0]))


def _undirected(nodes: list[int], edges: list[tuple[int, int]]) -> nx.Graph:
    g = nx.Graph()
    g.add_nodes_from(nodes)  # insertion order fixed: fluid communities' seeded order follows it
    g.add_edges_from(sorted({(min(s, d), max(s, d)) for s, d in edges if s != d}))
    return g


def _contract_chains(g: nx.DiGraph, keep: int) -> dict[int, int]:
    """Map each node to a representative after merging single-in/single-out chain nodes into
    their producer, stopping once ``keep`` representatives would remain."""
    rep = {v: v for v in g.nodes}

    def find(v: int) -> int:
        while rep[v] != v:
            rep[v] = rep[rep[v]]
            v = rep[v]
        return v

    n_reps = g.number_of_nodes()
    for v in sorted(g.nodes):
        if n_reps <= keep:
            break
        if g.in_degree(v) == 1 and g.out_degree(v) <= 1:
            (u,) = g.predecessors(v)
            ru, rv = find(u), find(v)
            if ru != rv:
                rep[max(ru, rv)] = min(ru, rv)
                n_reps -= 1
    return {v: find(v) for v in g.nodes}


def group_nodes(graph: OpGraph, k: int = 100, seed: int = 0,
                grouping: str = "fluid") -> list[list[int]]:
    """Groups (lists of node indices) of the largest component, ordered by smallest index."""
    if k < 1:
        raise InputError(f"k must be >= 1, got {k}")
    if grouping not in GROUPINGS:
        raise InputError(f"unknown grouping {grouping!r}; expected one of {', '.join(GROUPINGS)}")
    comp = largest_component(graph)
    if len(comp) <= k:
        return [[v] for v in comp]
    in_comp = set(comp)
    edges = [(s, d) for s, d in graph.edges if s in in_comp and d in in_comp]
    if grouping == "coarsen":
        dg = nx.DiGraph()
        dg.add_nodes_from(comp)
        dg.add_edges_from(edges)
        rep = _contract_chains(dg, keep=max(4 * k, k))
        reps = sorted(set(rep.values()))
        ug = _undirected(reps, [(rep[s], rep[d]) for s, d in edges])
        members: dict[int, list[int]] = {}
        for v in comp:
            members.setdefault(rep[v], []).append(v)
        comms = nx.community.asyn_fluidc(ug, min(k, len(reps)), seed=seed)
        groups = [sorted(v for r in c for v in members[r]) for c in comms]
    else:
        comms = nx.community.asyn_fluidc(_undirected(comp, edges), k, seed=seed)
        groups = [sorted(c) for c in comms]
    return sorted((g for g in groups if g), key=lambda g: g[0])


def encode(graph: OpGraph, vocab: OpVocabulary, k: int = 100, features: str = "driple",
           seed: int = 0, grouping: str = "fluid") -> Data:
    """Encode ``graph`` as ``Data(x, edge_index)`` with at most ``k`` nodes (one per group).

    ``x`` is float32 of shape ``(groups, F)`` (``FEATURES[features]``); ``edge_index`` int64
    ``(2, E)``. Same graph, vocabulary and seed → identical tensors.
    """
    import torch
    from torch_geometric.data import Data

    if features not in FEATURES:
        raise InputError(f"unknown feature mode {features!r}; expected one of {', '.join(FEATURES)}")
    groups = group_nodes(graph, k=k, seed=seed, grouping=grouping)
    gid = {v: i for i, grp in enumerate(groups) for v in grp}
    nodes = graph.nodes
    cls_index = {c: i for i, c in enumerate(OP_CLASSES)}
    x = np.zeros((len(groups), len(FEATURES[features])), dtype=np.float64)
    for i, grp in enumerate(groups):
        numel = float(sum(nodes[v].numel for v in grp))
        freq = float(sum(vocab.frequency(getattr(nodes[v], vocab.key)) for v in grp))
        if features == "driple":
            x[i] = (numel, len(grp), freq)
            continue
        out_bytes = float(sum(nodes[v].out_bytes for v in grp))
        flops = float(sum(nodes[v].flops or 0.0 for v in grp))
        acc = float(sum(nodes[v].bytes_accessed or 0.0 for v in grp))
        x[i, :6] = (math.log1p(numel), math.log1p(out_bytes), len(grp), freq,
                    math.log1p(flops), math.log1p(acc))
        for v in grp:
            x[i, 6 + cls_index.get(nodes[v].op_class, cls_index["other"])] += 1
    pairs: set[tuple[int, int]] = set()
    for s, d in graph.edges:
        a, b = gid.get(s), gid.get(d)
        if a is not None and b is not None and a != b:
            pairs.add((a, b))
            pairs.add((b, a))
    ei = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2).T
    return Data(x=torch.from_numpy(x.astype(np.float32)),
                edge_index=torch.from_numpy(np.ascontiguousarray(ei)), num_nodes=len(groups))


def context_vector(job: JobSpec) -> torch.Tensor:
    """Graph-level context u of a job, shape ``(CONTEXT_DIM,)`` float32, in the order of
    ``CONTEXT_FEATURES``: log2 batch size, epochs, log10 steps per epoch, log10 total steps,
    optimizer one-hot (``CONTEXT_OPTIMIZERS``), dataset one-hot (``CONTEXT_DATASETS``). For a batch of PyG
    graphs set ``data.u = context_vector(job)[None]`` (one row per graph)."""
    import torch

    vals = [math.log2(job.batch_size), float(job.epochs), math.log10(job.steps),
            math.log10(job.total_steps)]
    vals += [1.0 if job.optimizer == o else 0.0 for o in CONTEXT_OPTIMIZERS]
    vals += [1.0 if job.dataset == d else 0.0 for d in CONTEXT_DATASETS]
    return torch.tensor(vals, dtype=torch.float32)
