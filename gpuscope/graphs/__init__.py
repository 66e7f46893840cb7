"""Computational graphs: OpGraph, frontends (PyTorch, TensorFlow, GraphDef, JSON), encoding.

Public API (seed 001 §3.1, §5.2; design.md "Graph encoding"):

* ``export_graph(job)``: the training-step graph of a JobSpec (catalog PyTorch workload traced
  to aten ops, or the job's graph file); ``GraphCache`` caches it by ``graph_key``;
* ``read_graph`` / ``write_graph``: ``.json`` (node/edge list), ``.pb``, ``.pbtxt``;
* ``function_graph`` / ``keras_train_step_graph``: TensorFlow functions and Keras models;
* ``OpVocabulary``, ``encode``, ``context_vector``, ``CONTEXT_DIM``: Driple's encoding;
* ``save_encoded`` / ``load_encoded``: encoded graphs in one parquet file;
* ``catalog_summary(jobs)``: one row per graph (nodes, edges, parameters, GFLOPs, export time).
"""

from __future__ import annotations

import importlib
from typing import Any

# ``encode`` is both a submodule and a function: bind the function eagerly so that importing
# the submodule (``from gpuscope.graphs.encode import ...``) never shadows it. encode.py
# imports torch lazily, so this stays cheap.
from gpuscope.graphs.encode import (
    CONTEXT_DIM,
    CONTEXT_FEATURES,
    FEATURES,
    context_vector,
    encode,
    group_nodes,
)
from gpuscope.graphs.opgraph import OP_CLASSES, PHASES, OpGraph, OpNode

#: Public name -> defining module. Imported on first use (PEP 562), so ``gpuscope --help``
#: (which imports ``gpuscope.graphs.cli``) does not load torch and torch_geometric.
_LAZY: dict[str, str] = {
    "catalog_summary": "export", "export_graph": "export",
    "read_graph": "io", "write_graph": "io",
    "graph_from_dict": "jsonio", "graph_to_dict": "jsonio",
    "GraphCache": "storage", "load_encoded": "storage", "save_encoded": "storage",
    "function_graph": "tf_frontend", "keras_train_step_graph": "tf_frontend",
    "OpVocabulary": "vocab",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f"gpuscope.graphs.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'gpuscope.graphs' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "CONTEXT_DIM",
    "CONTEXT_FEATURES",
    "FEATURES",
    "OP_CLASSES",
    "PHASES",
    "GraphCache",
    "OpGraph",
    "OpNode",
    "OpVocabulary",
    "catalog_summary",
    "context_vector",
    "encode",
    "export_graph",
    "function_graph",
    "graph_from_dict",
    "graph_to_dict",
    "group_nodes",
    "keras_train_step_graph",
    "load_encoded",
    "read_graph",
    "save_encoded",
    "write_graph",
]
