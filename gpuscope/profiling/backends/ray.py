"""Ray backend: a campaign's jobs as Ray tasks, results streamed into the driver's one ledger.

Each task runs one job with :func:`gpuscope.profiling.runner.run_job` on whichever node Ray
picks and returns the trace as parquet bytes; the driver writes it atomically under
``traces/`` and commits the ledger row as each task finishes (``ray.wait``), so a killed
driver loses only the runs in flight, like the local backend.

Resources per task: on GPU machines ``num_gpus=1`` and a custom resource
``{"gpu_type:<device>": 1}`` so each task lands on a node of the GPU type being profiled
(start nodes with ``ray start --resources='{"gpu_type:h100": 8}'``; a local
``ray.init`` adds it for its own GPUs); on CPU, ``num_cpus``.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from gpuscope.core.errors import InputError
from gpuscope.jobs.spec import JobSpec
from gpuscope.profiling.campaign import StartupCheck, remove_stale_temps
from gpuscope.profiling.ledger import Ledger
from gpuscope.profiling.runner import RunOptions, run_job
from gpuscope.profiling.trace import TraceMeta, read_trace, write_trace


def gpu_type_resource(device_name: str) -> str:
    return f"gpu_type:{device_name}"


def _task(job: dict[str, Any], opts: dict[str, Any], use_gpu: bool) -> tuple[str, bytes]:
    """Ray task body: run the job here, return (metadata JSON, trace parquet bytes)."""
    o = RunOptions(**{**opts, "command": tuple(opts["command"]) if opts.get("command") else None})
    if use_gpu:
        import ray

        ids = ray.get_gpu_ids()
        if ids:  # NVML indexes physical GPUs; Ray hands out physical ids
            o = replace(o, gpu_index=int(ids[0]))
    spec = JobSpec.from_dict(job)
    from gpuscope.core.io import temp_dir

    with temp_dir("ray") as tmp:
        path = tmp / f"{spec.key}.parquet"
        meta = run_job(spec, path, o)
        return meta.to_json(), path.read_bytes()


#: Seconds to wait for a TCP connection to a Ray cluster before giving up.
CONNECT_TIMEOUT_S: float = 10.0


def check_ray_address(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Refuse (``InputError``) a Ray address that does not accept a TCP connection within
    ``timeout_s``: ``ray.init`` would retry an unreachable GCS for minutes. ``auto`` and
    ``local`` are Ray's own lookups and pass."""
    import socket

    if address in ("auto", "local"):
        return
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise InputError(f"--ray-address must be HOST:PORT or ray://HOST:PORT, got {address!r}")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as e:
        why = "timed out" if isinstance(e, TimeoutError) else (e.strerror or str(e))
        raise InputError(f"Ray cluster at {address} is unreachable ({why}, "
                         f"{timeout_s:g} s limit)") from None


def connect_ray(address: str | None, num_gpus: int, device_name: str,
                init_kwargs: dict[str, Any] | None = None) -> None:
    """``ray.init`` once (a local cluster, or ``address``), before any file is written.

    An unreachable or wrong address is one ``InputError`` line: the TCP probe answers in
    :data:`CONNECT_TIMEOUT_S`, and Ray's own retries (about 20 s) print their warnings into a
    discarded buffer instead of the user's terminal."""
    import os

    import ray

    if ray.is_initialized():
        return
    kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
    if address:
        check_ray_address(address)
        kw["address"] = address
    elif num_gpus > 0:
        kw["resources"] = {gpu_type_resource(device_name): float(num_gpus)}
    kw.update(init_kwargs or {})
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)  # Ray's C++ client logs straight to fd 2
        try:
            ray.init(**kw)
        except (ConnectionError, RuntimeError, ValueError, TimeoutError) as e:
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
            raise InputError(f"cannot start or reach the Ray cluster"
                             f"{f' at {address}' if address else ''}: {first}") from None
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def run_campaign_ray(
    jobs: list[JobSpec],
    out_dir: str | Path,
    opts: RunOptions,
    address: str | None = None,
    num_gpus: int = 0,
    cpus_per_task: float = 1.0,
    init_kwargs: dict[str, Any] | None = None,
    progress: bool = True,
) -> Counter[str]:
    """Run ``jobs`` (already filtered to the pending ones) as Ray tasks.

    ``num_gpus`` > 0 requests one GPU and the ``gpu_type:<device>`` resource per task.
    ``init_kwargs`` go to ``ray.init`` when Ray is not initialised yet (tests pass
    ``num_cpus=2, include_dashboard=False``).
    """
    import ray
    from tqdm import tqdm

    out = Path(out_dir)
    remove_stale_temps(out)
    connect_ray(address, num_gpus, opts.device_name, init_kwargs)
    use_gpu = num_gpus > 0
    if use_gpu:
        res: dict[str, Any] = {
            "num_gpus": 1, "num_cpus": cpus_per_task,
            "resources": {gpu_type_resource(opts.device_name): 1},
        }
    else:
        res = {"num_cpus": cpus_per_task}
    remote = ray.remote(max_retries=0)(_task).options(**res)
    opts_d = asdict(opts)
    counts: Counter[str] = Counter()
    with Ledger(out / "ledger.sqlite") as ledger:
        refs = {remote.remote(j.to_dict(), opts_d, use_gpu): j for j in jobs}
        check = StartupCheck(len(refs))  # a broken environment aborts, one line
        bar = tqdm(total=len(refs), desc="profile (ray)", unit="run", disable=not progress)
        while refs:
            done, _ = ray.wait(list(refs), num_returns=1)
            job = refs.pop(done[0])
            try:
                meta_json, blob = ray.get(done[0])
            except ray.exceptions.RayError as e:
                # A lost worker/node: nothing recorded, the job stays pending for a re-run.
                tqdm.write(f"{job.key}: task failed ({type(e).__name__}); left pending")
                counts["lost"] += 1
                bar.update(1)
                continue
            df, _ = read_trace(f"{job.key}.parquet (from a Ray worker)", data=blob)
            meta = TraceMeta.from_json(meta_json)
            trace = out / "traces" / f"{job.key}.parquet"
            write_trace(trace, df, meta)
            counts[meta.status] += 1
            try:
                ready = check.add(meta, trace)
            except InputError:  # environment failure: stop the tasks still queued or running
                for ref in refs:
                    ray.cancel(ref, force=True)
                bar.close()
                raise
            for m, t in ready:
                ledger.record(m, t)
            bar.update(1)
            bar.set_postfix(counts, refresh=False)
        for m, t in check.rest():
            ledger.record(m, t)
        bar.close()
    return counts

