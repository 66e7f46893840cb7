"""Computational graphs: OpGraph, frontends (PyTorch, TensorFlow, GraphDef, JSON), encoding.

Public API (seed 001 §3.1, §5.2; design.md "Graph encoding"):

* ``OpGraph`` / ``OpNode`` (``opgraph``): one training step's operations, ``OP_CLASSES``,
  ``PHASES``;
* ``export_graph(job)``: the training-step graph of a JobSpec (catalog PyTorch workload traced
  to aten ops, or the job's graph file); ``GraphCache`` caches it by ``graph_key``;
* ``read_graph`` / ``write_graph`` (``files``): ``.json`` (node/edge list), ``.pb``, ``.pbtxt``;
* ``function_graph`` / ``keras_train_step_graph`` (``frontends``): TensorFlow functions and
  Keras models; the PyTorch tracer is ``frontends.torch``; op models (FLOPs, bytes, fused
  attention and recurrent layers) live in ``ops``;
* ``OpVocabulary``, ``encode``, ``context_vector``, ``CONTEXT_DIM`` (``encoding``): Driple's
  encoding; ``save_encoded`` / ``load_encoded``: encoded graphs in one parquet file;
* ``catalog_summary(jobs)``: one row per graph (nodes, edges, parameters, GFLOPs, export time).

Names load on first use (:mod:`gpuscope.core.lazy`), so ``gpuscope --help`` (which imports
``gpuscope.graphs.cli``) does not load torch and torch_geometric.
"""

from __future__ import annotations

from gpuscope.core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "OP_CLASSES": ".opgraph", "PHASES": ".opgraph", "OpGraph": ".opgraph", "OpNode": ".opgraph",
    "CONTEXT_DIM": ".encoding", "CONTEXT_FEATURES": ".encoding", "FEATURES": ".encoding",
    "context_vector": ".encoding", "encode": ".encoding", "group_nodes": ".encoding",
    "catalog_summary": ".export", "export_graph": ".export",
    "read_graph": ".files", "write_graph": ".files",
    "graph_from_dict": ".jsonio", "graph_to_dict": ".jsonio",
    "GraphCache": ".storage", "load_encoded": ".storage", "save_encoded": ".storage",
    "function_graph": ".frontends.tensorflow",
    "keras_train_step_graph": ".frontends.tensorflow",
    "OpVocabulary": ".vocab",
})
