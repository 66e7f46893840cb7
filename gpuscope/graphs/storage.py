"""Storage of encoded graphs (one parquet file, no pickle) and the exported-graph cache.

``save_encoded(path, {graph_key: Data})`` writes one row per graph: ``graph_key``,
``num_nodes``, ``num_features``, ``x`` (row-major float32 list), ``num_edges``,
``edge_index`` (int64 list: the sources, then the destinations). ``load_encoded`` inverts it
exactly (design.md "Datasets": ``graphs.parquet``, one row per distinct ``graph_key``).

``GraphCache(dir)`` keeps exported OpGraphs as ``<graph_key>-<content digest>.json.gz`` so the predictor
never re-exports a graph it has seen (design.md "Predictions"). Default directory
``$GPUSCOPE_CACHE/graphs``, else ``~/.cache/gpuscope/graphs``.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from torch_geometric.data import Data

from gpuscope.core.errors import InputError
from gpuscope.graphs.jsonio import graph_from_dict, graph_to_dict
from gpuscope.graphs.opgraph import OpGraph
from gpuscope.jobs.spec import JobSpec

_SCHEMA = pa.schema([
    ("graph_key", pa.string()), ("num_nodes", pa.int64()), ("num_features", pa.int64()),
    ("x", pa.list_(pa.float32())), ("num_edges", pa.int64()), ("edge_index", pa.list_(pa.int64())),
])


def save_encoded(path: str | Path, mapping: Mapping[str, Data]) -> Path:
    """Write encoded graphs, keyed by graph_key, to one parquet file (rows sorted by key)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows: dict[str, list] = {f.name: [] for f in _SCHEMA}
    for key in sorted(mapping):
        d = mapping[key]
        x = d.x.detach().to(torch.float32).cpu().numpy()
        ei = d.edge_index.detach().to(torch.int64).cpu().numpy().reshape(2, -1)
        rows["graph_key"].append(str(key))
        rows["num_nodes"].append(int(x.shape[0]))
        rows["num_features"].append(int(x.shape[1]) if x.ndim == 2 else 0)
        rows["x"].append(x.reshape(-1))
        rows["num_edges"].append(int(ei.shape[1]))
        rows["edge_index"].append(ei.reshape(-1))
    table = pa.table(rows, schema=_SCHEMA)
    table = table.replace_schema_metadata({"gpuscope": "encoded graphs (gpuscope.graphs.encoding)"})
    from gpuscope.core.io import replace_atomically

    return replace_atomically(path, lambda t: pq.write_table(table, t), what="encoded graphs")


def load_encoded(path: str | Path) -> dict[str, Data]:
    """Read a file written by ``save_encoded``; a column of another type, a row whose sizes
    disagree with its arrays, a non-finite feature or an edge index outside the graph's
    nodes is one ``InputError`` line naming the graph."""
    from gpuscope.core.io import read_arrow

    path = Path(path)
    table = read_arrow(path, "encoded graphs")
    missing = [n for n in _SCHEMA.names if n not in table.column_names]
    if missing:
        raise InputError(f"encoded graphs {path}: missing column(s) {', '.join(missing)}")
    for f in _SCHEMA:
        if not table.schema.field(f.name).type.equals(f.type):
            raise InputError(f"encoded graphs {path}: column {f.name!r} is "
                             f"{table.schema.field(f.name).type}, expected {f.type}")
    out: dict[str, Data] = {}
    cols = {n: table.column(n).to_pylist() for n in _SCHEMA.names}
    for i, key in enumerate(cols["graph_key"]):
        n, f, n_edges = cols["num_nodes"][i], cols["num_features"][i], cols["num_edges"][i]
        x = np.asarray(cols["x"][i] or [], dtype=np.float32)
        ei = np.asarray(cols["edge_index"][i] or [], dtype=np.int64)
        where = f"encoded graphs {path}, graph {key!r}"
        if key is None or None in (n, f, n_edges) or min(n, f, n_edges) < 0 \
                or x.size != n * f or ei.size != 2 * n_edges:
            raise InputError(f"{where}: sizes disagree with its arrays")
        if not np.isfinite(x).all():
            raise InputError(f"{where}: a node feature is not finite")
        if ei.size and (ei.min() < 0 or ei.max() >= n):
            raise InputError(f"{where}: an edge index lies outside its {n} nodes")
        out[key] = Data(x=torch.from_numpy(x.reshape(n, f)),
                        edge_index=torch.from_numpy(ei.reshape(2, n_edges)), num_nodes=n)
    return out


def default_cache_dir() -> Path:
    env = os.environ.get("GPUSCOPE_CACHE")
    base = Path(env) if env else Path.home() / ".cache" / "gpuscope"
    return base / "graphs"


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """sha1 of what an exported graph depends on besides the job: the gpuscope version, the
    bytes of ``digest_sources()``, and the torch (and, when installed,
    transformers) versions. Part of every cache entry's name, so a changed model definition,
    tracer or library never serves a stale graph."""
    import importlib.metadata

    import gpuscope

    h = hashlib.sha1(f"gpuscope {gpuscope.__version__} torch {torch.__version__}".encode())
    try:
        h.update(f" transformers {importlib.metadata.version('transformers')}".encode())
    except importlib.metadata.PackageNotFoundError:
        pass
    root = Path(__file__).resolve().parents[1]
    for f in digest_sources():
        h.update(f.relative_to(root).as_posix().encode() + f.read_bytes())
    return h.hexdigest()


def digest_sources() -> list[Path]:
    """The sources ``code_digest`` hashes: every module of ``gpuscope.graphs`` (the tracers,
    the fused recurrent ops, serialisation) and ``gpuscope.workloads`` (model definitions), and
    the job and dataset specs that shape a traced step. A whole package rather than a list of
    names, so a module added later (as ``recurrent.py`` was) is covered without anyone
    remembering to list it; hashing a module the export does not use only costs a cold cache."""
    root = Path(__file__).resolve().parents[1]
    return (sorted((root / "graphs").rglob("*.py")) + sorted((root / "workloads").rglob("*.py"))
            + [root / "jobs" / f for f in ("spec.py", "catalog.py", "datasets.py")])


#: Format tag of a cache entry's header line.
CACHE_FORMAT = "gpuscope.graphcache/1"
_warned: set[str] = set()


class GraphCache:
    """Exported OpGraphs on disk, keyed by content: ``<graph_key>-<digest>.json.gz`` where the
    digest covers the code and library versions (``code_digest``) and, for a graph file, the
    file's bytes; a module/hf job's ``graph_key`` already holds its source file's digest.

    An entry is a header line (its full key and the sha256 of the graph's JSON) and the
    graph's JSON, gzip-compressed: an entry whose header does not match its key or its
    content (a torn write, an edited or swapped file) is ignored and rebuilt. A cache folder
    that cannot be written means no cache, with one warning line, not a failure.
    """

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_cache_dir()

    def key(self, job: JobSpec) -> str:
        """The entry's full key (its file name holds the first 12 digits of the digest)."""
        from gpuscope.core.io import read_bytes

        # graph_key does not name the framework; a TensorFlow export is another graph
        tag = f"-{job.framework}" if job.framework != "pytorch" and job.graph is None else ""
        h = hashlib.sha1(code_digest().encode())
        if job.graph is not None and Path(job.graph).is_file():
            h.update(read_bytes(job.graph, "graph file"))
        return f"{job.graph_key}{tag}-{h.hexdigest()}"

    def path(self, job: JobSpec) -> Path:
        key = self.key(job)
        return self.directory / f"{key[:-28]}.json.gz"

    def __contains__(self, job: JobSpec) -> bool:
        return self.read(job) is not None

    def read(self, job: JobSpec) -> OpGraph | None:
        """The cached graph of ``job``, or None when absent or not matching its key."""
        from gpuscope.core.io import parse_json, read_text

        key = self.key(job)
        p = self.directory / f"{key[:-28]}.json.gz"
        if not p.is_file() or p.is_symlink():
            return None
        try:
            head, _, body = read_text(p, "graph cache entry").partition("\n")
            meta = parse_json(head, "graph cache entry", p, kind=dict)
            if (meta.get("format"), meta.get("key")) != (CACHE_FORMAT, key) or \
                    meta.get("sha256") != hashlib.sha256(body.encode()).hexdigest():
                return None
            return graph_from_dict(parse_json(body, "graph cache entry", p), source=str(p))
        except InputError:
            return None

    def write(self, job: JobSpec, graph: OpGraph) -> None:
        """Store ``graph`` as ``job``'s entry (atomically); an unwritable cache folder is one
        warning line per folder and process, and the graph is simply not cached."""
        from gpuscope.core.io import write_bytes

        key = self.key(job)
        body = json.dumps(graph_to_dict(graph), separators=(",", ":"))
        head = json.dumps({"format": CACHE_FORMAT, "key": key,
                           "sha256": hashlib.sha256(body.encode()).hexdigest()})
        data = gzip.compress(f"{head}\n{body}".encode(), mtime=0)
        try:
            write_bytes(self.directory / f"{key[:-28]}.json.gz", data, what="graph cache entry")
        except InputError as e:
            if str(self.directory) not in _warned:
                _warned.add(str(self.directory))
                why = str(e).split(f"{self.directory}", 1)[-1].partition(": ")[2] or str(e)
                sys.stderr.write(f"gpuscope: warning: graph cache {self.directory} is not "
                                 f"usable: {why}; working without a cache\n")

    def get_or_export(self, job: JobSpec) -> OpGraph:
        """The cached graph of ``job``, exporting (and caching) it on a miss or on an entry
        that does not match its key."""
        g = self.read(job)
        if g is not None:
            return g
        from gpuscope.graphs.export import export_graph

        g = export_graph(job)
        self.write(job, g)
        return g
