"""Build a predictor dataset from runs folders (seed 001 §3.1: labels + adjacency/feature
matrices per workload, one dataset per device; design.md, Datasets).

``datasets/<provenance>/<device>/`` gets ``labels.parquet`` (one row per run),
``graphs.parquet`` (one encoded graph per ``graph_key``, via ``gpuscope.graphs``),
``vocab.json`` (op-frequency vocabulary fitted on the dataset's graphs), ``manifest.json`` +
``MANIFEST.md`` (hardware, host, versions, date, counts by status, provenance, notes), and
optionally raw ``traces/``. Measured and emulated runs are never mixed in one dataset.

Runs are keyed by ``(device, provenance, run_id)`` across ``--runs`` folders, so a
second folder of another device reaches the one-device check instead of being dropped as a
repeat; the same run in two folders keeps the first (counted in the manifest as
``duplicate_runs``). The folder is written as a whole (``gpuscope.core.io.output_folder``):
built in a hidden temporary sibling, then swapped into place; an existing folder is replaced
only when it is empty or a dataset this command wrote, of the same device and provenance
(a folder holding anything else is refused, never emptied). Runs taken on a busy host
(``host_busy`` in their metadata) are counted in the manifest (``host_busy_runs``).
"""

from __future__ import annotations

import shutil
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gpuscope.core.errors import InputError
from gpuscope.core.provenance import device_kind
from gpuscope.jobs.spec import JobSpec
from gpuscope.profiling.labeling import label_trace, labels_frame
from gpuscope.profiling.ledger import trace_paths
from gpuscope.profiling.runner import HOST_BUSY_FRAC
from gpuscope.profiling.trace import TraceMeta, read_trace

TRACE_BUDGET_BYTES = 5 * 2**20
#: Mean utilisations reported in the manifest: the system's and the job's own share, so a
#: reader sees how much of the system CPU other processes took on a shared machine.
USAGE_COLUMNS: tuple[str, ...] = ("gpu_util", "gpu_mem_util", "cpu_util", "proc_cpu_util")


def _collect(
    runs_dirs: list[str | Path], method: str, progress: bool = False
) -> tuple[pd.DataFrame, list[TraceMeta], list[Path], list[dict[str, float]]]:
    """Label every run; also each ok run's mean utilisation per column (for the manifest)."""
    from tqdm import tqdm

    rows, metas, paths = [], [], []
    seen: set[tuple[str, str, str]] = set()
    usage: list[dict[str, float]] = []
    for d in runs_dirs:
        for tp in tqdm(trace_paths(d), desc=f"label {Path(d).name}", unit="run", delay=2.0,
                       disable=None if progress else True):
            df, meta = read_trace(tp)
            key = (meta.device, meta.provenance, meta.run_id)
            if key in seen:  # the same run in two runs folders: keep the first
                continue
            seen.add(key)
            rows.append(label_trace(df, meta, method))
            metas.append(meta)
            paths.append(Path(tp))
            if meta.status == "ok":
                usage.append({c: float(df[c].mean()) for c in USAGE_COLUMNS if c in df.columns})
    if not rows:
        raise InputError(f"no runs recorded in {', '.join(map(str, runs_dirs))}")
    provs = Counter(m.provenance for m in metas)
    if len(provs) > 1:
        raise InputError("refusing to mix measured and emulated runs in one dataset ("
                         + ", ".join(f"{n} {p}" for p, n in sorted(provs.items()))
                         + "); build one dataset per provenance")
    devices = Counter(m.device for m in metas)
    if len(devices) > 1:
        raise InputError("runs are from several devices ("
                         + ", ".join(f"{n} {d}" for d, n in sorted(devices.items()))
                         + "); a dataset holds one device")
    return labels_frame(rows), metas, paths, usage


def _encode_graphs(metas: list[TraceMeta], out: Path, progress: bool,
                   cache_dir: str | Path | None) -> tuple[int, dict[str, str]]:
    """Export (through the graph cache) and encode one graph per graph_key; returns
    (count, {graph_key: error}). The vocabulary is fitted on this dataset's graphs."""
    from tqdm import tqdm

    from gpuscope.graphs import GraphCache, OpVocabulary, encode, save_encoded

    cache = GraphCache(cache_dir)

    jobs: dict[str, JobSpec] = {}
    for meta in metas:
        job = JobSpec.from_dict(meta.job)
        jobs.setdefault(job.graph_key, job)
    graphs, errors = {}, {}
    for key, job in tqdm(sorted(jobs.items()), desc="export graphs", unit="graph",
                         disable=not progress):
        try:
            graphs[key] = cache.get_or_export(job)
        except (InputError, RuntimeError, MemoryError) as e:
            errors[key] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    vocab = OpVocabulary().fit(graphs.values())
    vocab.save(out / "vocab.json")
    encoded = {k: encode(g, vocab) for k, g in tqdm(graphs.items(), desc="encode graphs",
                                                  unit="graph", disable=not progress)}
    save_encoded(out / "graphs.parquet", encoded)
    return len(encoded), errors


def _copy_traces(paths: list[Path], metas: list[TraceMeta], out: Path, mode: str) -> str:
    if mode == "none":
        return "none"
    dest = out / "traces"
    total = sum(p.stat().st_size for p in paths)
    chosen = list(zip(paths, metas))
    kind = "all"
    if mode == "auto" and total > TRACE_BUDGET_BYTES:
        # A sample: one run per model (its first), within the budget.
        per_model: dict[str, tuple[Path, TraceMeta]] = {}
        for p, m in chosen:
            per_model.setdefault(str(m.job.get("model")), (p, m))
        chosen, size = [], 0
        for p, m in per_model.values():
            if size + p.stat().st_size > TRACE_BUDGET_BYTES:
                break
            chosen.append((p, m))
            size += p.stat().st_size
        kind = f"sample ({len(chosen)} of {len(paths)} runs, one per model)"
    dest.mkdir(parents=True, exist_ok=True)
    for p, _ in chosen:
        if (dest / p.name).resolve() != p.resolve():  # rebuilding a dataset in place
            shutil.copy2(p, dest / p.name)
    return kind


def _manifest(labels: pd.DataFrame, metas: list[TraceMeta], runs_dirs: list[str | Path],
              method: str, n_graphs: int, graph_errors: dict[str, str], traces: str,
              notes: list[str]) -> dict[str, Any]:
    first = metas[0]
    missing: dict[str, str] = {}
    for m in metas:
        for r, why in m.missing.items():
            missing.setdefault(r, why)
    starts = sorted(m.started_at for m in metas if m.started_at)
    versions: dict[str, str] = {}
    for m in metas:
        versions.update(m.versions)
    return {
        "format": "gpuscope.dataset/1",
        "provenance": first.provenance,
        "device": first.device,
        "hardware": first.device_info,
        "device_kind": device_kind([m.device_info for m in metas], first.provenance),
        "nvml_gpus": sorted({str(m.device_info.get("name")) for m in metas
                             if m.device_info.get("kind") == "gpu"}),
        "hosts": sorted({m.host for m in metas}),
        "versions": versions,
        "built_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "runs_from": starts[0] if starts else "",
        "runs_to": starts[-1] if starts else "",
        "rows": len(labels),
        "graphs": n_graphs,
        "graph_errors": graph_errors,
        "counts_by_status": {k: int(v) for k, v in Counter(labels["status"]).items()},
        "counts_by_split": {k: int(v) for k, v in Counter(labels["split"]).items()},
        "models": sorted(set(labels["model"])),
        "labeling": {"method": method, "sample_period_s": first.sample_period_s,
                     "peak_fraction": 0.9},
        "absent_resources": missing,
        "runs_dirs": [str(d) for d in runs_dirs],
        "raw_traces": traces,
        "notes": list(notes),
    }


def _kind_line(m: dict[str, Any]) -> str:
    kind = m.get("device_kind", "")
    if kind == "cpu-only":
        return ("**cpu-only**: NVML saw no GPU in any run; the times are CPU times and the GPU "
                f"targets are absent, whatever the device is called ({m['device']})")
    if kind == "mixed":
        return "**mixed**: some runs saw a GPU, some did not (device_info of each run)"
    if kind == "gpu":
        return f"gpu ({', '.join(m.get('nvml_gpus', [])) or 'NVML'})"
    return str(kind)


def _manifest_md(m: dict[str, Any]) -> str:
    hw = ", ".join(f"{k}={v}" for k, v in m["hardware"].items())
    lines = [
        f"# Dataset: {m['device']} ({m['provenance']})", "",
        f"- provenance: **{m['provenance']}**" + (
            " (real training runs on the named hardware)" if m["provenance"] == "measured"
            else " (simulated device)"),
        f"- hardware: {hw}", f"- device kind: {_kind_line(m)}",
        f"- hosts: {', '.join(m['hosts'])}",
        f"- runs: {m['rows']} ({', '.join(f'{k} {v}' for k, v in sorted(m['counts_by_status'].items()))}); "
        f"splits: {', '.join(f'{k} {v}' for k, v in sorted(m['counts_by_split'].items()))}",
        f"- encoded graphs: {m['graphs']} (one per graph_key)"
        + (f"; {len(m['graph_errors'])} failed to export" if m["graph_errors"] else ""),
        f"- runs dated {m['runs_from']} → {m['runs_to']}; built {m['built_at']}",
        f"- labeling: {m['labeling']['method']}, sample period {m['labeling']['sample_period_s']:.4f} s",
        "- absent resources: " + (", ".join(f"{r} ({w})" for r, w in m["absent_resources"].items()) or "none"),
        f"- raw traces: {m['raw_traces']}",
        f"- runs on a busy host (other processes > {100 * HOST_BUSY_FRAC:.0f} % of the CPU): "
        f"{m.get('host_busy_runs', 0)} of {m['rows']}",
        "- mean utilisation over ok runs (%): " + (", ".join(
            f"{k} {v}" for k, v in m.get("mean_utilisation_pct", {}).items()) or "n/a"),
        f"- versions: {', '.join(f'{k} {v}' for k, v in sorted(m['versions'].items()))}",
        f"- models: {', '.join(m['models'])}",
        "", "Files: `labels.parquet` (one row per run, design.md Labels), `graphs.parquet` "
        "(encoded graphs by graph_key), `vocab.json`, `manifest.json`.",
    ]
    if m["notes"]:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in m["notes"]]
    return "\n".join(lines) + "\n"


#: The files a dataset folder holds (for folders built before output records existed).
DATASET_FILES: frozenset[str] = frozenset({"labels.parquet", "graphs.parquet", "vocab.json",
                                           "manifest.json", "MANIFEST.md"})
COMMAND = "profile build-dataset"


def build_dataset(
    runs_dirs: list[str | Path] | str | Path,
    out_dir: str | Path,
    method: str = "peakband",
    traces: str = "auto",
    notes: list[str] | None = None,
    progress: bool = True,
    graphs: bool = True,
    cache_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Label the runs, encode one graph per graph_key, write the dataset folder; returns the
    manifest. ``graphs=False`` skips graph export (labels-only datasets); ``cache_dir`` is
    the ``GraphCache`` folder (default ``$GPUSCOPE_CACHE/graphs``). The folder is written
    as a whole (``gpuscope.core.io.output_folder``): an existing one is replaced only when
    it is a dataset this command wrote, of the same device and provenance."""
    from gpuscope.core.io import check_output_folder, output_folder, write_json, write_table

    if isinstance(runs_dirs, (str, Path)):
        runs_dirs = [runs_dirs]
    if traces not in ("none", "all", "auto"):
        raise InputError(f"traces must be none, all or auto, not {traces!r}")
    out = Path(out_dir)
    check_output_folder(out, COMMAND, runs_dirs, what="dataset folder", legacy=_legacy)
    labels, metas, paths, usage = _collect(list(runs_dirs), method, progress)
    _check_target(out, metas[0].device, metas[0].provenance)
    with output_folder(out, COMMAND, runs_dirs, what="dataset folder", legacy=_legacy) as tmp:
        write_table(labels, tmp / "labels.parquet", what="labels", check=False)
        n_graphs, errors = _encode_graphs(metas, tmp, progress, cache_dir) if graphs else (0, {})
        kind = _copy_traces(paths, metas, tmp, traces)
        manifest = _manifest(labels, metas, list(runs_dirs), method, n_graphs, errors, kind,
                             notes or [])
        manifest["mean_utilisation_pct"] = {
            c: round(float(np.mean([u[c] for u in usage if c in u])), 2)
            for c in USAGE_COLUMNS if any(c in u for u in usage)
        }
        n_runs = sum(len(trace_paths(d)) for d in runs_dirs)
        manifest["duplicate_runs"] = n_runs - len(metas)
        manifest["host_busy_runs"] = sum(bool(m.host_busy) for m in metas)
        write_json(tmp / "manifest.json", manifest, what="manifest", check=False,
                   sort_keys=True)
        (tmp / "MANIFEST.md").write_text(_manifest_md(manifest))
    return manifest


def _legacy(folder: Path) -> bool:
    """A dataset folder written before output records existed: only a dataset's files."""
    files = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir()]
    return (folder / "manifest.json").is_file() and all(
        f in DATASET_FILES or (f.startswith("traces/") and f.endswith(".parquet")
                               and f.count("/") == 1) for f in files)


def _check_target(out: Path, device: str, provenance: str) -> None:
    """An existing dataset folder is replaced only by runs of its device and provenance."""
    from gpuscope.core.io import read_json

    mp = out / "manifest.json"
    if not mp.is_file():
        return
    m = read_json(mp, "dataset manifest")
    have = (m.get("device"), m.get("provenance")) if isinstance(m, dict) else (None, None)
    if have != (device, provenance):
        raise InputError(f"{out} is a dataset of {have[0]!r} ({have[1]}); refusing to "
                         f"overwrite it with {provenance} runs of {device!r}")
