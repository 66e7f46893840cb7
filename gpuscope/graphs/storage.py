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
import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from torch_geometric.data import Data

from gpuscope.core.errors import InputError
from gpuscope.graphs.jsonio import read_json, write_json
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
    pq.write_table(table, path)
    return path


def load_encoded(path: str | Path) -> dict[str, Data]:
    """Read a file written by ``save_encoded``."""
    path = Path(path)
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as e:
        raise InputError(f"cannot read encoded graphs {path}: {e}") from None
    missing = [n for n in _SCHEMA.names if n not in table.column_names]
    if missing:
        raise InputError(f"encoded graphs {path}: missing column(s) {', '.join(missing)}")
    out: dict[str, Data] = {}
    cols = {n: table.column(n).to_pylist() for n in _SCHEMA.names}
    for i, key in enumerate(cols["graph_key"]):
        n, f, n_edges = cols["num_nodes"][i], cols["num_features"][i], cols["num_edges"][i]
        x = np.asarray(cols["x"][i], dtype=np.float32).reshape(n, f)
        ei = np.asarray(cols["edge_index"][i], dtype=np.int64).reshape(2, n_edges)
        out[key] = Data(x=torch.from_numpy(x), edge_index=torch.from_numpy(ei), num_nodes=n)
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


class GraphCache:
    """Exported OpGraphs on disk, keyed by content: ``<graph_key>-<digest>.json.gz`` where the
    digest covers the code and library versions (``code_digest``) and, for a graph file, the
    file's bytes; a module/hf job's ``graph_key`` already holds its source file's digest."""

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_cache_dir()

    def path(self, job: JobSpec) -> Path:
        # graph_key does not name the framework; a TensorFlow export is another graph
        tag = f"-{job.framework}" if job.framework != "pytorch" and job.graph is None else ""
        h = hashlib.sha1(code_digest().encode())
        if job.graph is not None and Path(job.graph).is_file():
            h.update(Path(job.graph).read_bytes())
        return self.directory / f"{job.graph_key}{tag}-{h.hexdigest()[:12]}.json.gz"

    def __contains__(self, job: JobSpec) -> bool:
        return self.path(job).is_file()

    def get_or_export(self, job: JobSpec) -> OpGraph:
        """The cached graph of ``job``, exporting (and caching) it on a miss. A cached file
        that cannot be read is re-exported."""
        p = self.path(job)
        if p.is_file():
            try:
                return read_json(p)
            except InputError:
                pass  # a torn or stale file: export again below
        from gpuscope.graphs.export import export_graph

        g = export_graph(job)
        tmp = p.with_name(p.name + f".{os.getpid()}.tmp.json.gz")
        write_json(g, tmp)
        os.replace(tmp, p)  # atomic: concurrent readers never see a half-written file
        return g
