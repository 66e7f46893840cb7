"""JSON node/edge lists: the exchange format for graphs from any tool (docs/graphs.md).

```
{"format": "gpuscope.opgraph/1", "name": "...", "meta": {...},
 "nodes": [{"name", "op", "op_class", "shape", "numel", "dtype_bytes", "flops",
            "bytes_accessed", "phase"}, ...],
 "edges": [[src, dst], ...]}
```

Only ``name`` and ``op`` are required per node; ``op_class`` defaults to ``other``, ``numel``
to the product of ``shape``. Edges index ``nodes``. Files ending in ``.gz`` are gzip-compressed.
A malformed file raises ``InputError`` naming the problem.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

from gpuscope.core.errors import InputError
from gpuscope.graphs.opgraph import OP_CLASSES, PHASES, OpGraph, OpNode

FORMAT = "gpuscope.opgraph/1"


def graph_to_dict(graph: OpGraph) -> dict[str, Any]:
    return {
        "format": FORMAT, "name": graph.name, "meta": graph.meta,
        "nodes": [n.to_dict() for n in graph.nodes],
        "edges": [[int(s), int(d)] for s, d in graph.edges],
    }


def graph_from_dict(d: Any, source: str = "graph") -> OpGraph:
    """Build an ``OpGraph`` from a parsed JSON document; ``InputError`` on any malformation."""
    if not isinstance(d, dict):
        raise InputError(f"{source}: expected a JSON object with 'nodes' and 'edges'")
    fmt = d.get("format", FORMAT)
    if fmt != FORMAT:
        raise InputError(f"{source}: unsupported format {fmt!r} (expected {FORMAT!r})")
    for key in ("nodes", "edges"):
        if key not in d:
            raise InputError(f"{source}: missing key {key!r}")
        if not isinstance(d[key], list):
            raise InputError(f"{source}: {key!r} must be a list")
    meta = d.get("meta", {})
    if not isinstance(meta, dict):
        raise InputError(f"{source}: 'meta' must be an object")
    nodes: list[OpNode] = []
    for i, nd in enumerate(d["nodes"]):
        if not isinstance(nd, dict):
            raise InputError(f"{source}: node {i} is not an object")
        for key in ("name", "op"):
            if key not in nd:
                raise InputError(f"{source}: node {i} is missing key {key!r}")
        try:
            node = OpNode.from_dict(nd)
            if "numel" not in nd and node.shape and min(node.shape) >= 0:
                node.numel = int(math.prod(node.shape))
        except (TypeError, ValueError) as e:
            raise InputError(f"{source}: node {i} has a bad field: {e}") from None
        if node.op_class not in OP_CLASSES:
            raise InputError(f"{source}: node {i} has unknown op_class {node.op_class!r}")
        if node.phase not in PHASES:
            raise InputError(f"{source}: node {i} has unknown phase {node.phase!r}")
        nodes.append(node)
    edges: list[tuple[int, int]] = []
    n = len(nodes)
    for j, edge in enumerate(d["edges"]):
        ok = (isinstance(edge, (list, tuple)) and len(edge) == 2
              and all(isinstance(v, int) and not isinstance(v, bool) for v in edge))
        if not ok:
            raise InputError(f"{source}: edge {j} must be a pair of node indices, got {edge!r}")
        if not (0 <= edge[0] < n and 0 <= edge[1] < n):
            raise InputError(f"{source}: edge {j} {list(edge)} names a node outside 0..{n - 1}")
        edges.append((int(edge[0]), int(edge[1])))
    return OpGraph(name=str(d.get("name", source)), nodes=nodes, edges=edges, meta=meta)


def write_json(graph: OpGraph, path: str | Path) -> Path:
    """Write ``graph`` as JSON (gzip when the name ends in ``.gz``)."""
    from gpuscope.core.io import atomic_write

    path = Path(path)
    text = json.dumps(graph_to_dict(graph), separators=(",", ":"))
    with atomic_write(path, what="graph") as tmp:  # a failure leaves no half-written graph
        if path.suffix == ".gz":
            with gzip.open(tmp, "wt", encoding="utf-8") as fh:
                fh.write(text)
        else:
            tmp.write_text(text)
    return path


def read_json(path: str | Path) -> OpGraph:
    """Read a JSON (or ``.json.gz``) node/edge list."""
    from gpuscope.core.io import read_json as read_document

    return graph_from_dict(read_document(path, "graph file"), source=str(path))
