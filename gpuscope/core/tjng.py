"""t_jng tables and the reference scheduler's instance folder (a base module).

A **t_jng table** (design.md, "t_jng tables and the reference format") gives, for each job j,
node type n and GPU count g, the execution time t_jng in seconds and the price per hour of
running that configuration (seed 000 Table I ``t_jng``, ``c_ng``; seed 002 ``t_jvg``, ``c_v``):

=============  =======================================================================
``job_id``     job identifier (string)
``node_type``  GPU / node type the time was measured or predicted on (string)
``n_gpus``     GPUs the job uses, integer >= 1
``exec_time_s``  execution time in seconds, finite and > 0
``cost_per_h``   price per hour of the configuration, finite and >= 0
``source``       where the time comes from (``measured:<dataset>``, ``predicted:<ckpt>``, ...)
=============  =======================================================================

The **reference instance folder** is the one the Path Relinking authors' C++ scheduler reads
(seed 002 §4.1): ``Lof_Selectjobs.csv`` (jobs), ``SelectJobs_times.csv`` (one row per job x VM
type x GPU count up to the VM's size, cost in $/h per VM) and ``tNodes.csv`` (node names).
:func:`read_instance` followed by :func:`write_instance` reproduces the files byte for byte
when they are written in pandas' CSV style (``\\n`` line ends, shortest float repr), as the
example instance is; otherwise value for value.

numpy and pandas load inside the functions (never torch), so every stage, and the command
line's parser, may import this module cheaply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gpuscope.core.errors import InputError
from gpuscope.core.limits import MAX_COST, MAX_GPUS, MAX_SECONDS, MAX_WEIGHT

if TYPE_CHECKING:
    import pandas as pd

TJNG_COLUMNS: tuple[str, ...] = ("job_id", "node_type", "n_gpus", "exec_time_s", "cost_per_h", "source")
JOBS_FILE, TIMES_FILE, NODES_FILE = "Lof_Selectjobs.csv", "SelectJobs_times.csv", "tNodes.csv"
JOBS_COLUMNS: tuple[str, ...] = (
    "Application", "Images", "Epochs", "Batchsize", "Jobs", "UniqueJobsID", "SubmissionTime",
    "Deadline", "Tardinessweight", "MinExecTime", "MaxExecTime",
)
TIMES_COLUMNS: tuple[str, ...] = (
    "UniqueJobsID", "VMtype", "GPUtype", "nGPUs", "max_nGPUs", "cost", "ExecutionTime",
)
CATALOG_COLUMNS: tuple[str, ...] = ("VMtype", "GPUtype", "nGPUs", "cost")
#: Columns of the job metadata :func:`tjng_to_instance` takes (optional ones in brackets):
#: job_id, submission_s, due_s, weight [, application, images, epochs, batch_size, job_class].
META_COLUMNS: tuple[str, ...] = ("job_id", "submission_s", "due_s", "weight")


# -- the t_jng DataFrame ---------------------------------------------------------------------
#: Bounds of every number of the t_jng table and the instance folder (seconds at most
#: ``MAX_SECONDS``, GPUs per node at most ``MAX_GPUS``, costs and weights bounded).
BOUNDS: dict[str, tuple[float, float]] = {
    "n_gpus": (1, MAX_GPUS), "exec_time_s": (0, MAX_SECONDS), "cost_per_h": (0, MAX_COST),
    "SubmissionTime": (0, MAX_SECONDS), "Deadline": (0, MAX_SECONDS),
    "Tardinessweight": (0, MAX_WEIGHT), "MinExecTime": (0, MAX_SECONDS),
    "MaxExecTime": (0, MAX_SECONDS), "nGPUs": (1, MAX_GPUS), "max_nGPUs": (1, MAX_GPUS),
    "cost": (0, MAX_COST), "ExecutionTime": (0, MAX_SECONDS),
}


def _numeric(df: pd.DataFrame, col: str, what: str) -> pd.Series:
    """Column ``col`` as numbers, refused (naming the row) when one is not a finite number
    (``true`` is not a number) or lies outside :data:`BOUNDS`."""
    import numpy as np
    import pandas as pd

    raw = df[col]
    if raw.dtype.kind in "iuf":  # already numbers (no bools): skip the per-value look
        s = raw
    else:
        s = pd.to_numeric(raw.where(~raw.map(lambda v: isinstance(v, bool))), errors="coerce")
    v = s.to_numpy(dtype=float, na_value=np.nan)
    low, high = BOUNDS.get(col, (-np.inf, np.inf))
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(v) | (v < low) | (v > high)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        reason = "is not a finite number" if not np.isfinite(v[i]) else \
            f"is outside [{low:g}, {high:g}]"
        val = raw.iloc[i]
        shown = repr(val) if isinstance(val, str) else str(val)
        raise InputError(f"{what}: column {col!r} row {i + 1} {reason}: {shown}")
    return s


def validate_tjng(df: pd.DataFrame, what: str = "t_jng table") -> pd.DataFrame:
    """Check a t_jng table and return a normalised copy (column order, dtypes, sorted rows).

    Raises :class:`InputError` naming the first problem: missing columns, empty table, empty
    ids, non-integer or non-positive ``n_gpus``, non-positive or non-finite ``exec_time_s``,
    negative ``cost_per_h``, duplicated (job_id, node_type, n_gpus) rows.
    """
    import numpy as np
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise InputError(f"{what} must be a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in TJNG_COLUMNS if c not in df.columns]
    if missing:
        raise InputError(f"{what} is missing column(s): {', '.join(missing)}")
    if len(df) == 0:
        raise InputError(f"{what} has no rows")
    out = df.loc[:, list(TJNG_COLUMNS)].copy()
    for col in ("job_id", "node_type", "source"):
        if out[col].isna().any():
            raise InputError(f"{what}: column {col!r} has empty values")
        out[col] = out[col].astype(str).str.strip()
        if (out[col] == "").any():
            raise InputError(f"{what}: column {col!r} has empty values")
    g = _numeric(out, "n_gpus", what)
    if (g <= 0).any() or not np.all(np.equal(np.mod(g, 1), 0)):
        raise InputError(f"{what}: n_gpus must be integers >= 1")
    out["n_gpus"] = g.astype(np.int64)
    t = _numeric(out, "exec_time_s", what)
    if (t <= 0).any():
        raise InputError(f"{what}: exec_time_s must be > 0")
    out["exec_time_s"] = t.astype(float)
    c = _numeric(out, "cost_per_h", what)
    if (c < 0).any():
        raise InputError(f"{what}: cost_per_h must be >= 0")
    out["cost_per_h"] = c.astype(float)
    dup = out.duplicated(["job_id", "node_type", "n_gpus"])
    if dup.any():
        r = out[dup].iloc[0]
        raise InputError(
            f"{what}: duplicated row for job {r.job_id!r} on {r.node_type!r} x{r.n_gpus}"
        )
    return out.sort_values(["job_id", "node_type", "n_gpus"], kind="stable").reset_index(drop=True)


def read_tjng(path: str | Path) -> pd.DataFrame:
    """Read and validate a t_jng table from ``.csv`` or ``.parquet``."""
    from gpuscope.core.io import read_table

    path = Path(path)
    kw = {"dtype": {"job_id": str, "node_type": str, "source": str}} \
        if path.suffix.lower() == ".csv" else {}
    df = read_table(path, "t_jng table", **kw)
    return validate_tjng(df, what=f"t_jng table {path}")


def write_tjng(df: pd.DataFrame, path: str | Path) -> Path:
    """Validate and write a t_jng table as ``.csv`` or ``.parquet``."""
    from gpuscope.core.io import write_table

    path = Path(path)
    out = validate_tjng(df)
    if path.suffix.lower() not in (".csv", ".parquet"):
        raise InputError(f"{path}: unsupported extension {path.suffix!r} (use .csv or .parquet)")
    write_table(out, path, what="t_jng table")
    return path


# -- the reference instance folder -----------------------------------------------------------
@dataclass
class Instance:
    """One reference-format instance (seed 002 §4.1).

    Attributes:
        jobs: ``Lof_Selectjobs.csv`` as a DataFrame, columns :data:`JOBS_COLUMNS`.
        times: ``SelectJobs_times.csv``, columns :data:`TIMES_COLUMNS` (t_jvg: job x VM type x
            GPU count, ``cost`` in $/h for the whole VM, ``ExecutionTime`` in seconds).
        nodes: node names from ``tNodes.csv`` (``n1`` ... ``nN``).
    """

    jobs: pd.DataFrame
    times: pd.DataFrame
    nodes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        validate_instance(self)

    @property
    def n_nodes(self) -> int:
        return len(self.nodes)

    def catalog(self) -> pd.DataFrame:
        """The VM catalog used by the instance: ``VMtype, GPUtype, nGPUs, cost`` (seed 002 Table 2)."""
        cat = self.times.groupby("VMtype", sort=False).agg(
            GPUtype=("GPUtype", "first"), nGPUs=("max_nGPUs", "first"), cost=("cost", "first")
        )
        return cat.reset_index()[list(CATALOG_COLUMNS)]


def validate_instance(inst: Instance, what: str = "instance") -> None:
    """Check an :class:`Instance`; raise :class:`InputError` naming the first problem."""
    import pandas as pd

    for name, df, cols in (("jobs", inst.jobs, JOBS_COLUMNS), ("times", inst.times, TIMES_COLUMNS)):
        if not isinstance(df, pd.DataFrame):
            raise InputError(f"{what}: {name} must be a DataFrame")
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise InputError(f"{what}: {name} table is missing column(s): {', '.join(missing)}")
        if len(df) == 0:
            raise InputError(f"{what}: {name} table has no rows")
    jobs, times = inst.jobs, inst.times
    for col in ("SubmissionTime", "Deadline", "Tardinessweight", "MinExecTime", "MaxExecTime"):
        _numeric(jobs, col, f"{what} jobs")
    if (pd.to_numeric(jobs["SubmissionTime"]) < 0).any():
        raise InputError(f"{what}: SubmissionTime must be >= 0")
    if (pd.to_numeric(jobs["Tardinessweight"]) < 0).any():
        raise InputError(f"{what}: Tardinessweight must be >= 0")
    ids = jobs["UniqueJobsID"].astype(str)
    if ids.duplicated().any():
        raise InputError(f"{what}: duplicated UniqueJobsID {ids[ids.duplicated()].iloc[0]!r}")
    for col in ("nGPUs", "max_nGPUs", "cost", "ExecutionTime"):
        _numeric(times, col, f"{what} times")
    g, gmax = pd.to_numeric(times["nGPUs"]), pd.to_numeric(times["max_nGPUs"])
    if (g < 1).any() or (g % 1 != 0).any() or (gmax % 1 != 0).any():
        raise InputError(f"{what}: nGPUs and max_nGPUs must be integers >= 1")
    if (g > gmax).any():
        raise InputError(f"{what}: a times row has nGPUs > max_nGPUs")
    for col in ("GPUtype", "max_nGPUs"):  # one VM type: one GPU type, one size
        n = times.groupby(times["VMtype"].astype(str), sort=False)[col].nunique(dropna=False)
        if (n > 1).any():
            raise InputError(f"{what}: VM type {n[n > 1].index[0]!r} has {int(n.max())} "
                             f"different {col} values in the times table")
    if (pd.to_numeric(times["ExecutionTime"]) <= 0).any():
        raise InputError(f"{what}: ExecutionTime must be > 0")
    if (pd.to_numeric(times["cost"]) < 0).any():
        raise InputError(f"{what}: cost must be >= 0")
    tid = set(times["UniqueJobsID"].astype(str))
    unknown = sorted(tid - set(ids))
    if unknown:
        raise InputError(f"{what}: times table names unknown job {unknown[0]!r}")
    untimed = [j for j in ids if j not in tid]
    if untimed:
        raise InputError(f"{what}: job {untimed[0]!r} has no execution times")
    if times.duplicated(["UniqueJobsID", "VMtype", "nGPUs"]).any():
        raise InputError(f"{what}: duplicated (UniqueJobsID, VMtype, nGPUs) row in times table")
    if not inst.nodes:
        raise InputError(f"{what}: no nodes")
    if len(set(inst.nodes)) != len(inst.nodes):
        raise InputError(f"{what}: duplicated node names")


def _read_csv(path: Path, what: str) -> pd.DataFrame:
    from gpuscope.core.io import read_csv

    if not path.exists() and not path.is_symlink():
        raise InputError(f"{what}: missing file {path.name} in {path.parent}")
    return read_csv(path, f"{what} file", dtype={
        "UniqueJobsID": str, "Jobs": str, "VMtype": str, "GPUtype": str, "Application": str,
        "Nodes": str})


def read_instance(directory: str | Path) -> Instance:
    """Read a reference-format instance folder (``Lof_Selectjobs.csv``, ``SelectJobs_times.csv``,
    ``tNodes.csv``). A missing or malformed file raises one-line :class:`InputError`."""
    d = Path(directory)
    what = f"instance {d}"
    if not d.is_dir():
        raise InputError(f"{what}: not a directory")
    jobs = _read_csv(d / JOBS_FILE, what)
    times = _read_csv(d / TIMES_FILE, what)
    nodes_df = _read_csv(d / NODES_FILE, what)
    if list(nodes_df.columns) != ["Nodes"]:
        raise InputError(f"{what}: {NODES_FILE} must have the single header 'Nodes'")
    nodes = [str(n).strip() for n in nodes_df["Nodes"].tolist()]
    return Instance(jobs=jobs, times=times, nodes=nodes)


def write_instance(inst: Instance, directory: str | Path) -> Path:
    """Write an :class:`Instance` as a reference-format folder; returns the folder."""
    import pandas as pd

    validate_instance(inst)
    from gpuscope.core.io import write_table

    d = Path(directory)
    for name, df in ((JOBS_FILE, inst.jobs), (TIMES_FILE, inst.times),
                     (NODES_FILE, pd.DataFrame({"Nodes": inst.nodes}))):
        write_table(df, d / name, what="instance file")
    return d


# -- conversions ---------------------------------------------------------------------------
def catalog_from_tjng(tjng: pd.DataFrame) -> pd.DataFrame:
    """A VM catalog with one VM type per (node_type, n_gpus) of the table, priced at the mean
    ``cost_per_h`` of that configuration (ANDREAS-style fixed nodes, seed 000 ``c_ng``)."""
    return _catalog(validate_tjng(tjng))


def _catalog(t: pd.DataFrame) -> pd.DataFrame:
    """:func:`catalog_from_tjng` of an already validated table."""
    import numpy as np
    import pandas as pd

    cat = t.groupby(["node_type", "n_gpus"], sort=True)["cost_per_h"].mean().reset_index()
    return pd.DataFrame({
        "VMtype": [f"{n}x{g}" for n, g in zip(cat.node_type, cat.n_gpus)],
        "GPUtype": cat.node_type, "nGPUs": cat.n_gpus.astype(np.int64), "cost": cat.cost_per_h,
    })


def tjng_to_instance(
    tjng: pd.DataFrame,
    jobs_meta: pd.DataFrame,
    vm_catalog: pd.DataFrame | None = None,
    n_nodes: int = 1,
    node_names: list[str] | None = None,
) -> Instance:
    """Build a reference-format :class:`Instance` from a t_jng table.

    Args:
        tjng: t_jng table (:data:`TJNG_COLUMNS`).
        jobs_meta: one row per job: ``job_id, submission_s, due_s, weight`` and optionally
            ``application, images, epochs, batch_size, job_class`` (copied to the jobs file).
        vm_catalog: ``VMtype, GPUtype, nGPUs, cost``; each VM type offers every g up to its
            size for which t_jng has (job, GPUtype, g) (seed 002's t_jvg). Default
            :func:`catalog_from_tjng`.
        n_nodes: number of nodes ``n1 … nN`` when ``node_names`` is not given.
    """
    import numpy as np
    import pandas as pd

    t = validate_tjng(tjng)
    cat = _catalog(t) if vm_catalog is None else vm_catalog
    miss = [c for c in CATALOG_COLUMNS if c not in cat.columns]
    if miss:
        raise InputError(f"VM catalog is missing column(s): {', '.join(miss)}")
    miss = [c for c in META_COLUMNS if c not in jobs_meta.columns]
    if miss:
        raise InputError(f"job metadata is missing column(s): {', '.join(miss)}")
    meta = jobs_meta.assign(job_id=jobs_meta["job_id"].astype(str))
    if meta["job_id"].duplicated().any():
        raise InputError("job metadata has duplicated job_id")
    cat = cat.assign(nGPUs=pd.to_numeric(cat["nGPUs"]).astype(np.int64), GPUtype=cat["GPUtype"].astype(str))
    # every (job, VM, g <= VM size) whose (job, GPU type, g) time exists (seed 002 t_jvg)
    vm_g = cat.loc[cat.index.repeat(cat["nGPUs"])].copy()
    vm_g["g"] = vm_g.groupby(level=0).cumcount() + 1
    rows = t.merge(vm_g, left_on=["node_type", "n_gpus"], right_on=["GPUtype", "g"])
    rows = rows[rows["job_id"].isin(meta["job_id"])]
    order = {j: i for i, j in enumerate(meta["job_id"])}
    vm_order = {v: i for i, v in enumerate(cat["VMtype"])}
    rows = rows.assign(_j=rows["job_id"].map(order), _v=rows["VMtype"].map(vm_order))
    rows = rows.sort_values(["_j", "_v", "g"], kind="stable")
    times = pd.DataFrame({
        "UniqueJobsID": rows["job_id"].to_numpy(), "VMtype": rows["VMtype"].to_numpy(),
        "GPUtype": rows["GPUtype"].to_numpy(), "nGPUs": rows["g"].to_numpy(np.int64),
        "max_nGPUs": rows["nGPUs"].to_numpy(np.int64), "cost": rows["cost"].to_numpy(float),
        "ExecutionTime": rows["exec_time_s"].to_numpy(float),
    })
    span = times.groupby("UniqueJobsID")["ExecutionTime"].agg(["min", "max"])
    no_time = [j for j in meta["job_id"] if j not in span.index]
    if no_time:
        raise InputError(f"job {no_time[0]!r} has no t_jng row matching the VM catalog")

    def opt(col: str, default: object) -> object:
        return meta[col].to_numpy() if col in meta.columns else default

    jobs = pd.DataFrame({
        "Application": opt("application", "unknown"), "Images": opt("images", 0),
        "Epochs": opt("epochs", 0), "Batchsize": opt("batch_size", 0),
        "Jobs": opt("job_class", meta["job_id"].to_numpy()), "UniqueJobsID": meta["job_id"].to_numpy(),
        "SubmissionTime": pd.to_numeric(meta["submission_s"]).to_numpy(),
        "Deadline": pd.to_numeric(meta["due_s"]).to_numpy(),
        "Tardinessweight": pd.to_numeric(meta["weight"]).to_numpy(),
        "MinExecTime": span.loc[meta["job_id"], "min"].to_numpy(),
        "MaxExecTime": span.loc[meta["job_id"], "max"].to_numpy(),
    })
    names = node_names if node_names is not None else [f"n{i + 1}" for i in range(n_nodes)]
    return Instance(jobs=jobs, times=times, nodes=list(names))


def instance_to_tjng(inst: Instance, source: str = "instance") -> pd.DataFrame:
    """The t_jng table of an instance: node_type = GPU type, one row per (job, GPU type, g),
    priced at the cheapest VM of that GPU type that offers g GPUs."""
    import numpy as np
    import pandas as pd

    t = inst.times.assign(
        UniqueJobsID=inst.times["UniqueJobsID"].astype(str),
        nGPUs=pd.to_numeric(inst.times["nGPUs"]).astype(np.int64),
        cost=pd.to_numeric(inst.times["cost"]).astype(float),
        ExecutionTime=pd.to_numeric(inst.times["ExecutionTime"]).astype(float),
    )
    t = t.sort_values("cost", kind="stable").drop_duplicates(["UniqueJobsID", "GPUtype", "nGPUs"])
    out = pd.DataFrame({
        "job_id": t["UniqueJobsID"], "node_type": t["GPUtype"].astype(str), "n_gpus": t["nGPUs"],
        "exec_time_s": t["ExecutionTime"], "cost_per_h": t["cost"], "source": source,
    })
    return validate_tjng(out)


def instance_jobs_meta(inst: Instance) -> pd.DataFrame:
    """``job_id, submission_s, due_s, weight`` of an instance's jobs, in file order."""
    import pandas as pd

    j = inst.jobs
    return pd.DataFrame({
        "job_id": j["UniqueJobsID"].astype(str).to_numpy(),
        "submission_s": pd.to_numeric(j["SubmissionTime"]).astype(float).to_numpy(),
        "due_s": pd.to_numeric(j["Deadline"]).astype(float).to_numpy(),
        "weight": pd.to_numeric(j["Tardinessweight"]).astype(float).to_numpy(),
    })

