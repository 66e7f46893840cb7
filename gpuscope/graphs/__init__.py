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

from gpuscope.graphs.encode import (
    CONTEXT_DIM,
    CONTEXT_FEATURES,
    FEATURES,
    context_vector,
    encode,
    group_nodes,
)
from gpuscope.graphs.export import catalog_summary, export_graph
from gpuscope.graphs.io import read_graph, write_graph
from gpuscope.graphs.jsonio import graph_from_dict, graph_to_dict
from gpuscope.graphs.opgraph import OP_CLASSES, PHASES, OpGraph, OpNode
from gpuscope.graphs.storage import GraphCache, load_encoded, save_encoded
from gpuscope.graphs.tf_frontend import function_graph, keras_train_step_graph
from gpuscope.graphs.vocab import OpVocabulary

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
