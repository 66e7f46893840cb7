"""Read and write graph files by extension: ``.json`` / ``.json.gz`` (node/edge list),
``.pb`` (binary GraphDef) and ``.pbtxt`` (text GraphDef, seed 001 §5.2 Fig. 11).

Writing an OpGraph as GraphDef keeps op type, inputs, first output shape (``_output_shapes``)
and gpuscope's ``op_class``, ``phase``, ``flops``, ``bytes_accessed``, ``dtype_bytes`` as
``_gpuscope_*`` attrs (read back by the GraphDef
frontend); ``:`` in node names becomes ``/`` because GraphDef uses ``:`` for output indices.
Writing ``.pbtxt`` needs no TensorFlow; ``.pb`` does.
"""

from __future__ import annotations

import json
from pathlib import Path

from gpuscope.core.errors import InputError
from gpuscope.graphs.jsonio import read_json, write_json
from gpuscope.graphs.opgraph import OpGraph

GRAPH_EXTENSIONS: tuple[str, ...] = (".json", ".json.gz", ".pb", ".pbtxt")


def _kind(path: Path) -> str:
    name = path.name.lower()
    for ext in GRAPH_EXTENSIONS:
        if name.endswith(ext):
            return ext
    raise InputError(f"{path}: unsupported graph file extension (use {', '.join(GRAPH_EXTENSIONS)})")


def read_graph(path: str | Path) -> OpGraph:
    """Read any supported graph file; ``InputError`` when missing, unreadable or malformed."""
    path = Path(path)
    kind = _kind(path)
    if not path.exists():
        raise InputError(f"graph file {path} does not exist")
    if not path.is_file():
        raise InputError(f"graph file {path} is not a regular file")
    if kind in (".json", ".json.gz"):
        return read_json(path)
    from gpuscope.graphs.frontends.tensorflow import read_graphdef

    return read_graphdef(path)


#: The job fields a graph file written by ``graph export`` records in its ``meta``.
RECORDED_FIELDS: tuple[str, ...] = ("model", "dataset", "batch_size", "optimizer", "precision",
                                    "grad_accum")


def recorded_job(path: str | Path) -> dict[str, object]:
    """The job fields ``path`` records (:data:`RECORDED_FIELDS`): a graph exported by gpuscope
    (its meta has ``graph_key``) records them all, ``precision`` and ``grad_accum`` only when
    not ``fp32`` / 1; another file records what its meta happens to hold (a GraphDef none)."""
    meta = read_graph(path).meta
    out: dict[str, object] = {k: meta[k] for k in RECORDED_FIELDS
                              if isinstance(meta.get(k), (str, int)) and meta[k] != ""}
    if "graph_key" in meta:
        out.setdefault("precision", "fp32")
        out.setdefault("grad_accum", 1)
    return out


def graph_to_pbtxt(graph: OpGraph) -> str:
    """Text GraphDef of an OpGraph (see the module docstring)."""
    names = [n.name.replace(":", "/") for n in graph.nodes]
    inputs: list[list[str]] = [[] for _ in graph.nodes]
    for s, d in graph.edges:
        inputs[d].append(names[s])
    lines: list[str] = []
    for i, n in enumerate(graph.nodes):
        lines += ["node {", f"  name: {json.dumps(names[i])}", f"  op: {json.dumps(n.op)}"]
        lines += [f"  input: {json.dumps(x)}" for x in inputs[i]]
        dims = "".join(f" dim {{ size: {int(s)} }}" for s in n.shape)
        lines.append(f"  attr {{ key: \"_output_shapes\" value {{ list {{ shape {{{dims} }} }} }} }}")
        for key, val in (("_gpuscope_op_class", n.op_class), ("_gpuscope_phase", n.phase)):
            lines.append(f"  attr {{ key: \"{key}\" value {{ s: {json.dumps(val)} }} }}")
        for key, num in (("_gpuscope_flops", n.flops), ("_gpuscope_bytes_accessed", n.bytes_accessed)):
            if num is not None:
                lines.append(f"  attr {{ key: \"{key}\" value {{ f: {float(num)!r} }} }}")
        lines.append(f"  attr {{ key: \"_gpuscope_dtype_bytes\" value {{ i: {int(n.dtype_bytes)} }} }}")
        lines.append("}")
    return "\n".join(lines) + "\n"


def write_graph(graph: OpGraph, path: str | Path) -> Path:
    """Write ``graph`` by extension (``.json``, ``.json.gz``, ``.pbtxt``, ``.pb``)."""
    path = Path(path)
    kind = _kind(path)
    if kind in (".json", ".json.gz"):
        return write_json(graph, path)
    from gpuscope.core.io import write_bytes, write_text

    text = graph_to_pbtxt(graph)
    if kind == ".pbtxt":
        return write_text(path, text, what="graph")
    try:
        import tensorflow as tf
        from google.protobuf import text_format
    except ImportError:
        raise InputError("writing a binary .pb needs tensorflow (pip install 'gpuscope[tf]'); "
                         "write .pbtxt or .json instead") from None
    gd = text_format.Parse(text, tf.compat.v1.GraphDef())
    return write_bytes(path, gd.SerializeToString(), what="graph")
