"""Emulated campaigns: write runs folders exactly as a real profiling campaign does.

For every device, ``<out>/<device>/`` gets ``traces/<run_id>.parquet`` (through
``gpuscope.profiling.write_trace``, metadata ``provenance = "emulated"``) and a row in
``ledger.sqlite`` (``gpuscope.profiling.Ledger``), so ``gpuscope profile build-dataset`` turns
it into a dataset unchanged. Runs already in the ledger are skipped (resumable). Each distinct
graph (``graph_key``) is exported once (``GraphCache``) and reduced once to a ``GraphCost``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from gpuscope import __version__
from gpuscope.cluster.devices import DeviceSpec
from gpuscope.emulator.params import EmulatorParams, default_params
from gpuscope.emulator.perf import Estimate, GraphCost, estimate
from gpuscope.emulator.traces import PERIOD_S, effective_period, synth_trace
from gpuscope.graphs.opgraph import OpGraph
from gpuscope.jobs.spec import JobSpec
from gpuscope.profiling import Ledger, TraceMeta, write_trace

GraphSource = Callable[[JobSpec], OpGraph]


class CostCache:
    """``GraphCost`` per graph_key, built from a graph source (default: ``GraphCache``)."""

    def __init__(self, source: GraphSource | None = None, cache_dir: str | Path | None = None) -> None:
        if source is None:
            from gpuscope.graphs import GraphCache

            source = GraphCache(cache_dir).get_or_export
        self.source = source
        self._costs: dict[str, GraphCost] = {}

    def get(self, job: JobSpec) -> GraphCost:
        key = job.graph_key
        if key not in self._costs:
            self._costs[key] = GraphCost.from_graph(self.source(job), job.batch_size)
        return self._costs[key]


def run_meta(
    job: JobSpec, device: DeviceSpec, est: Estimate, exec_time_s: float, seed: int,
    period_s: float,
) -> TraceMeta:
    """The run's TraceMeta: provenance emulated, the catalog spec as device_info."""
    err = "" if est.status == "ok" else (
        f"CUDA out of memory (emulated: footprint {est.mem_mb:.0f} MB, at least "
        f"{est.memory.lo_mb:.0f} MB > {device.mem_mb:.0f} MB)"
    )
    return TraceMeta(
        run_id=job.key, job=job.to_dict(), device=device.name, status=est.status,
        exec_time_s=float(exec_time_s), provenance="emulated",
        device_info={"emulated": True, "spec": device.to_dict(), "seed": int(seed)},
        host=f"emulated {device.host_cpu}", sample_period_s=float(period_s),
        mem_total_mb=float(device.mem_mb), missing={},
        versions={"gpuscope": __version__, "numpy": np.__version__},
        started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), error=err,
    )


def emulate_device(
    jobs: Sequence[JobSpec], device: DeviceSpec, out_dir: str | Path, costs: CostCache,
    seed: int = 0, params: EmulatorParams | None = None, period_s: float = PERIOD_S,
    progress: bool = True,
) -> Counter[str]:
    """Emulate the pending ``jobs`` on ``device`` into the runs folder ``out_dir``; returns
    counts by status of the runs made now."""
    from tqdm import tqdm

    p = params or default_params()
    out = Path(out_dir)
    counts: Counter[str] = Counter()
    from gpuscope.profiling.ledger import campaign_lock

    # One campaign per folder, and a folder holds one device and provenance.
    with campaign_lock(out), Ledger(out / "ledger.sqlite", device=device.name,
                                    provenance="emulated") as ledger:
        done = ledger.done_ids()
        todo = [j for j in jobs if j.key not in done]
        bar = tqdm(todo, desc=f"emulate {device.name}", unit="run", disable=not progress)
        for job in bar:
            est = estimate(job, costs.get(job), device, p)
            df, exec_s = synth_trace(est, job, device, p, seed=seed, period_s=period_s)
            period = effective_period(est, period_s, int(p.max_trace_samples))
            meta = run_meta(job, device, est, exec_s, seed, period)
            trace = write_trace(out / "traces" / f"{job.key}.parquet", df, meta)
            ledger.record(meta, trace)
            counts[est.status] += 1
    return counts


def emulate_campaign(
    jobs: Sequence[JobSpec], devices: Sequence[DeviceSpec], out_root: str | Path,
    seed: int = 0, params: EmulatorParams | None = None, period_s: float = PERIOD_S,
    costs: CostCache | None = None, progress: bool = True,
) -> dict[str, dict[str, Any]]:
    """One runs folder per device, ``<out_root>/<device>/``; returns counts per device."""
    costs = costs or CostCache()
    summary: dict[str, dict[str, Any]] = {}
    for dev in devices:
        c = emulate_device(jobs, dev, Path(out_root) / dev.name, costs, seed, params, period_s,
                           progress)
        summary[dev.name] = dict(sorted(c.items()))
    return summary
