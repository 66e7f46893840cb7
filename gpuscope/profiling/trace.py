"""A run's trace file: samples as parquet plus the run's metadata (design.md, Project contracts).

``traces/<run_id>.parquet`` holds ``t_s`` and one column per resource present (``gpu_util``,
``gpu_mem_util``, ``gpu_mem``, ``cpu_util``, and ``proc_cpu_util`` for the job's process tree);
the run's :class:`TraceMeta` is stored as JSON under the parquet key-value metadata key
``"gpuscope"``. The profiler (seed 001 §2.2, samples every 1/6 s) and the emulator write the
same format through :func:`write_trace`.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from gpuscope.core.errors import InputError
from gpuscope.core.limits import MAX_PATH_LEN, MAX_SECONDS, check_number, check_text
from gpuscope.core.targets import PROVENANCES, RESOURCES, STATUSES
from gpuscope.jobs.spec import JobSpec

META_KEY = b"gpuscope"
#: Columns a trace may hold, in order: time, the four resources, the job's own CPU share.
TRACE_COLUMNS: tuple[str, ...] = ("t_s", *RESOURCES, "proc_cpu_util")
DEFAULT_PERIOD_S: float = 1.0 / 6.0
#: Longest error text a trace's metadata may hold.
MAX_ERROR_LEN: int = 64 * 1024


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
    def from_dict(cls, d: dict[str, Any], source: str = "trace") -> TraceMeta:
        """Metadata from its JSON object, each key checked against its type (a missing
        required key, a wrongly typed or out-of-range value is one ``InputError`` line
        naming the key); unknown keys from a newer writer are ignored."""
        if not isinstance(d, dict):
            raise InputError(f"{source}: metadata must be a JSON object")
        kw: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in d:
                if f.default is MISSING and f.default_factory is MISSING:
                    raise InputError(f"{source}: metadata key {f.name!r} is missing")
                continue
            kw[f.name] = _meta_value(f.name, d[f.name], source)
        return cls(**kw)

    @classmethod
    def from_json(cls, text: str | bytes, source: str = "trace") -> TraceMeta:
        from gpuscope.core.io import parse_json

        return cls.from_dict(parse_json(text, "metadata of", source, kind=dict), source)


#: The JSON type of each metadata key (``None`` allowed where the field is optional).
_META_TYPES: dict[str, tuple[type, ...]] = {
    "run_id": (str,), "job": (dict,), "device": (str,), "status": (str,),
    "exec_time_s": (int, float), "provenance": (str,), "device_info": (dict,), "host": (str,),
    "sample_period_s": (int, float), "mem_total_mb": (int, float, type(None)),
    "missing": (dict,), "versions": (dict,), "started_at": (str,), "error": (str,),
    "result": (dict,), "host_busy_frac": (int, float, type(None)), "host_busy": (bool,),
}


def _meta_value(key: str, v: Any, source: str) -> Any:
    """One metadata value, refused when of the wrong JSON type, a non-finite or negative
    number, or text past the length bounds."""
    want = _META_TYPES[key]
    if not isinstance(v, want) or (isinstance(v, bool) and bool not in want):
        names = "/".join("null" if t is type(None) else t.__name__ for t in want)
        raise InputError(f"{source}: metadata key {key!r} must be {names}, "
                         f"not {type(v).__name__}")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        high = MAX_SECONDS if key == "exec_time_s" else None
        check_number(key, v, low=0, high=high, origin=f"{source}: metadata")
    if isinstance(v, str):
        check_text(key, v, max_len=MAX_ERROR_LEN if key == "error" else MAX_PATH_LEN,
                   origin=f"{source}: metadata")
    return v


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
    from gpuscope.core.io import replace_atomically

    table = pa.Table.from_pandas(_check_frame(df), preserve_index=False)
    md = dict(table.schema.metadata or {})
    md[META_KEY] = meta.to_json().encode()
    table = table.replace_schema_metadata(md)
    return replace_atomically(path, lambda t: pq.write_table(table, t, compression="zstd"),
                              what="trace", check=False)


def read_meta(path: str | Path) -> TraceMeta:
    """Read only the metadata of a trace."""
    return read_trace(path)[1]


def read_trace(path: str | Path, data: bytes | None = None) -> tuple[pd.DataFrame, TraceMeta]:
    """Read a trace: its samples (``t_s`` + resources present, numbers, times finite) and its
    :class:`TraceMeta` (each key type-checked), through the bounded parquet reader; ``data``:
    the file's bytes already in hand (a Ray worker's), ``path`` then only names it."""
    from gpuscope.core.io import Column, check_columns, read_arrow

    table = read_arrow(path, "trace", data=data)
    raw = (table.schema.metadata or {}).get(META_KEY)
    if raw is None:
        raise InputError(f"{path} is not a gpuscope trace (no 'gpuscope' metadata)")
    meta = TraceMeta.from_json(raw, f"trace {path}")
    df = table.replace_schema_metadata(None).to_pandas(ignore_metadata=True)
    extra = [c for c in df.columns if c not in TRACE_COLUMNS]
    if extra:
        raise InputError(f"trace {path} has unknown column(s): {', '.join(map(str, extra[:5]))}")
    cols = [Column("t_s", nan=False, low=0, high=MAX_SECONDS)]
    cols += [Column(c, required=False, low=0) for c in TRACE_COLUMNS[1:]]
    return check_columns(df, cols, path, "trace"), meta
