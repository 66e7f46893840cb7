"""Provenance of the bundled emulated datasets.

A bundle (``datasets/emulated/<device>/``) is only meaningful for the emulator and the graph
exporter that produced it. ``stamp_manifest`` records both in its ``manifest.json``:
``emulator_version`` (``EMULATOR_VERSION``, bumped whenever the performance, memory or trace
model changes) and ``graph_fingerprints`` (sha256 of each exported graph's canonical JSON,
by graph key). The test suite re-exports a few graphs and compares (``bundle_is_current``),
so a change to either side fails the suite until the bundle is regenerated
(``benchmarks/emulator_bundle.py``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpuscope.emulator.params import EMULATOR_VERSION
from gpuscope.graphs.opgraph import OpGraph


def graph_fingerprint(graph: OpGraph) -> str:
    """sha256 of the graph's canonical JSON (nodes, edges, meta; keys sorted)."""
    from gpuscope.graphs.jsonio import graph_to_dict

    text = json.dumps(graph_to_dict(graph), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def stamp_manifest(dataset_dir: str | Path, fingerprints: Mapping[str, str],
                   version: str = EMULATOR_VERSION) -> dict[str, Any]:
    """Add ``emulator_version`` and ``graph_fingerprints`` to the dataset's manifest.json."""
    from gpuscope.core.io import read_json, write_json

    path = Path(dataset_dir) / "manifest.json"
    m = read_json(path, "dataset manifest", kind=dict)
    m["emulator_version"] = version
    m["graph_fingerprints"] = dict(sorted(fingerprints.items()))
    write_json(path, m, what="dataset manifest", sort_keys=True, check=False)
    return dict(m)


def bundle_is_current(dataset_dir: str | Path, graphs: Mapping[str, OpGraph]) -> list[str]:
    """Reasons the bundle at ``dataset_dir`` no longer matches the code (empty: current).
    ``graphs``: freshly exported graphs by graph key, compared with the manifest's."""
    from gpuscope.core.io import read_json

    m = read_json(Path(dataset_dir) / "manifest.json", "dataset manifest", kind=dict)
    out = []
    if m.get("emulator_version") != EMULATOR_VERSION:
        out.append(f"emulator_version {m.get('emulator_version')!r} != {EMULATOR_VERSION!r}")
    fps = m.get("graph_fingerprints", {})
    for key, g in graphs.items():
        if fps.get(key) != graph_fingerprint(g):
            out.append(f"graph {key} differs from the current exporter's")
    return out
