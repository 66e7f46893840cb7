"""A run's trace file: samples as parquet plus the run's metadata (design.md, Project contracts).

``traces/<run_id>.parquet`` holds ``t_s`` and one column per resource present (``gpu_util``,
``gpu_mem_util``, ``gpu_mem``, ``cpu_util``, and ``proc_cpu_util`` for the job's process tree);
the run's :class:`TraceMeta` is stored as JSON under the parquet key-value metadata key
``"gpuscope"``. The profiler (seed 001 §2.2, samples every 1/6 s) and the emulator write the
same format through :func:`write_trace`.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import IO, Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from gpuscope.core.errors import InputError
from gpuscope.core.targets import PROVENANCES, RESOURCES, STATUSES
from gpuscope.jobs.spec import JobSpec

META_KEY = b"gpuscope"
#: Columns a trace may hold, in order: time, the four resources, the job's own CPU share.
TRACE_COLUMNS: tuple[str, ...] = ("t_s", *RESOURCES, "proc_cpu_util")
DEFAULT_PERIOD_S: float = 1.0 / 6.0


@dataclass
class TraceMeta:
    """Metadata of one run (design.md, Runs).

    Attributes:
        run_id: ``JobSpec.key`` of the job (deterministic, so re-runs skip finished runs).
        job: the JobSpec as a dict (``JobSpec.to_dict()``).
        device: device name (the campaign's ``--device-name``, or the emulated device).
        device_info: identity of the hardware (NVML name/memory/driver, or the CPU model).
        host: host name.
        status: ``ok | oom | error | timeout``.
        exec_time_s: wall-clock execution time of the run in seconds.
        provenance: ``measured`` (real run) or ``emulated``.
        sample_period_s: sampling period (seed 001: 1/6 s).
        mem_total_mb: device memory total (capacity of ``gpu_mem``); None without a GPU.
        missing: ``{resource: why it is absent}``; an absent sensor is never zeros.
        versions: package versions of the run's environment.
        started_at: ISO-8601 UTC start time.
        error: last line of the job's error output for non-``ok`` runs ("" otherwise).
        result: the JSON line the workloads entry point printed ({} when none).
        host_busy_frac: fraction of all CPU cores other processes used before or during a
            measured run (None: not measured, e.g. emulated runs).
        host_busy: ``host_busy_frac`` above ``runner.HOST_BUSY_FRAC``: the run's times and
            CPU labels were taken on a busy host.
    """

    run_id: str
    job: dict[str, Any]
    device: str
    status: str
    exec_time_s: float
    provenance: str = "measured"
    device_info: dict[str, Any] = field(default_factory=dict)
    host: str = ""
    sample_period_s: float = DEFAULT_PERIOD_S
    mem_total_mb: float | None = None
    missing: dict[str, str] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    started_at: str = ""
    error: str = ""
    result: dict[str, Any] = field(default_factory=dict)
    host_busy_frac: float | None = None
    host_busy: bool = False

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise InputError(f"run {self.run_id}: status {self.status!r} not in {', '.join(STATUSES)}")
        if self.provenance not in PROVENANCES:
            raise InputError(
                f"run {self.run_id}: provenance {self.provenance!r} not in {', '.join(PROVENANCES)}"
            )

    @property
    def jobspec(self) -> JobSpec:
        return JobSpec.from_dict(self.job)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TraceMeta:
        names = {f.name for f in fields(cls)}
        # Unknown keys from a newer writer are ignored rather than fatal.
        return cls(**{k: v for k, v in d.items() if k in names})

    @classmethod
    def from_json(cls, text: str | bytes) -> TraceMeta:
        return cls.from_dict(json.loads(text))


def _check_frame(df: pd.DataFrame) -> pd.DataFrame:
    if "t_s" not in df.columns:
        raise InputError("trace needs a t_s column")
    extra = [c for c in df.columns if c not in TRACE_COLUMNS]
    if extra:
        raise InputError(f"trace has unknown column(s): {', '.join(map(str, extra))}")
    cols = [c for c in TRACE_COLUMNS if c in df.columns]
    return df[cols].astype("float64").reset_index(drop=True)


def write_trace(path: str | Path, df: pd.DataFrame, meta: TraceMeta) -> Path:
    """Write ``df`` and ``meta`` to ``path`` atomically: a temp file in the same folder, fsync,
    then ``os.replace`` — a reader (or a SIGKILLed writer) never sees a half-written trace."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pandas(_check_frame(df), preserve_index=False)
    md = dict(table.schema.metadata or {})
    md[META_KEY] = meta.to_json().encode()
    table = table.replace_schema_metadata(md)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            pq.write_table(table, fh, compression="zstd")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_meta(path: str | Path) -> TraceMeta:
    """Read only the metadata of a trace (no samples)."""
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowInvalid) as e:
        raise InputError(f"cannot read trace {path}: {e}") from None
    raw = (schema.metadata or {}).get(META_KEY)
    if raw is None:
        raise InputError(f"{path} is not a gpuscope trace (no 'gpuscope' metadata)")
    return TraceMeta.from_json(raw)


def read_trace(path: str | Path | IO[bytes]) -> tuple[pd.DataFrame, TraceMeta]:
    """Read a trace: its samples (``t_s`` + resources present) and its :class:`TraceMeta`.

    ``path`` may be a binary file object (the Ray backend reads a worker's bytes)."""
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as e:
        raise InputError(f"cannot read trace {path}: {e}") from None
    raw = (table.schema.metadata or {}).get(META_KEY)
    if raw is None:
        raise InputError(f"{path} is not a gpuscope trace (no 'gpuscope' metadata)")
    df = table.replace_schema_metadata(None).to_pandas()
    return df, TraceMeta.from_json(raw)
