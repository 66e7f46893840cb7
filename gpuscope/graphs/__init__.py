"""Computational graphs: OpGraph, frontends (PyTorch, TensorFlow, GraphDef, JSON), encoding."""

from gpuscope.graphs.opgraph import OP_CLASSES, PHASES, OpGraph, OpNode

__all__ = ["OP_CLASSES", "PHASES", "OpGraph", "OpNode"]
