"""Where gpuscope's data lives: the bundled data and others' measured data.

**Bundled data** (device catalog, emulated and measured datasets, checkpoints) is found through
:func:`bundled`, so packaging can move it in one place. The root is, in order:

1. ``$GPUSCOPE_DATASETS`` when set (tests, read-only installs, a user's own data);
2. ``gpuscope/_data`` inside the installed package, which a built wheel carries
   (``pip install .``; ``setup.py`` copies ``datasets/`` there);
3. the repository's ``datasets/`` (an editable install or a source checkout).

A wheel is checked before the repository because an installed package's parent is
``site-packages``, where another distribution's ``datasets`` folder (Hugging Face's) may sit.

**Others' measured data.** The figures the product needs are the project's own tables in
``datasets/measured/`` (columns defined there, every row citing its source repository, commit
and file; ``datasets/measured/README.md``): :func:`measured_table`, and Gavel's throughputs in
the structure of its ``simulation_throughputs.json`` (:func:`gavel_throughputs`). Anything
larger (Gavel's job traces, its full co-location matrix) is read by path from
:func:`external_dir`: ``$GPUSCOPE_DATA`` when set, else ``../shared/data`` next to the
repository; a missing file is one :class:`InputError` line (:func:`external_path`).
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuscope.core.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

#: The bundled data inside an installed wheel (absent in a source checkout).
PACKAGE_DATA: Path = Path(__file__).resolve().parents[1] / "_data"
#: The repository's ``datasets/`` folder (an editable install or a source checkout).
REPO_DATASETS: Path = Path(__file__).resolve().parents[2] / "datasets"


def data_root() -> Path:
    """Root folder of the bundled data: ``$GPUSCOPE_DATASETS``, package data, or ``datasets/``."""
    env = os.environ.get("GPUSCOPE_DATASETS")
    if env:
        return Path(env)
    if (PACKAGE_DATA / "devices.toml").is_file():
        return PACKAGE_DATA
    return REPO_DATASETS


def bundled(*parts: str) -> Path:
    """Path of a bundled file or folder, e.g. ``bundled("checkpoints", "v100.pt")``."""
    return data_root().joinpath(*parts)


#: The devices of Gavel's ``simulation_throughputs.json`` (Narayanan et al., OSDI 2020).
GAVEL_DEVICES: tuple[str, ...] = ("k80", "p100", "v100")


#: The repository root in a source checkout; others' larger data resolve from here.
REPO_ROOT: Path = Path(__file__).resolve().parents[2]
#: Default folder of others' larger data: ``../shared/data`` next to the repository.
DEFAULT_EXTERNAL: Path = REPO_ROOT.parent / "shared" / "data"


def external_dir() -> Path:
    """Others' larger data, read by path, never copied (Gavel's traces and throughput file,
    NeuSight's kernel latencies, ...): ``$GPUSCOPE_DATA`` if set, else :data:`DEFAULT_EXTERNAL`
    (or ``../../shared/data`` when only that exists: a git worktree one level further down)."""
    env = os.environ.get("GPUSCOPE_DATA")
    if env:
        return Path(env)
    for cand in (DEFAULT_EXTERNAL, REPO_ROOT.parent.parent / "shared" / "data"):
        if cand.is_dir():
            return cand
    return DEFAULT_EXTERNAL


def external_path(*parts: str, what: str) -> Path:
    """``external_dir()/parts`` when it exists, else one :class:`InputError` line naming it."""
    path = external_dir().joinpath(*parts)
    if not path.exists():
        raise InputError(f"{what} not found at {path}: give its path, or set GPUSCOPE_DATA to the "
                         f"folder that holds {parts[0]}/ (default ../shared/data next to the repository)")
    return path


def external_file(path: str | Path) -> Path:
    """``path`` when it exists, else the file of that bare name in others' data
    (:func:`external_dir`: ``6c71a0.trace``, ``simulation_throughputs.json``), else ``path``
    as given (its reader names it missing)."""
    p = Path(path)
    if p.exists() or len(p.parts) != 1:
        return p
    root = external_dir()
    found = sorted(root.rglob(p.name)) if root.is_dir() else []
    return found[0] if found else p


#: What a number of the measured tables may hold, by column name (a column of another name
#: is text): counts are integers >= 0 (a batch size of 0: the source names none), times,
#: rates and costs finite and >= 0.
_MEASURED_INTEGERS: tuple[str, ...] = ("epochs", "batch_size", "n_gpus", "images")
_MEASURED_NUMBERS: tuple[str, ...] = (
    "exec_time_s", "epoch_time_s", "steps_per_s", "co_steps_per_s", "cost_per_h", "power_w",
    "energy_eur_per_kwh", "pue")


def _measured_columns(columns: Any) -> list[Any]:
    from gpuscope.core.io import Column
    from gpuscope.core.limits import MAX_INT, MAX_SECONDS

    out = []
    for c in map(str, columns):
        if c in _MEASURED_INTEGERS:
            out.append(Column(c, "integer", low=0, high=MAX_INT, nan=False))
        elif c in _MEASURED_NUMBERS:
            out.append(Column(c, low=0, high=MAX_SECONDS, nan=False))
    return out


def measured_table(name: str) -> pd.DataFrame:
    """One of the project's tables of others' measurements, ``datasets/measured/<name>.csv``
    (columns and sources: ``datasets/measured/README.md``), read through the one reader; a
    count, time, rate or cost that is not a finite number >= 0 is one line naming the cell."""
    from gpuscope.core.io import check_columns, read_csv  # here: the path helpers stay light

    path = bundled("measured", f"{name}.csv")
    df = read_csv(path, "measured table")
    return check_columns(df, _measured_columns(df.columns), path, "measured table")


def gavel_throughputs(path: str | Path | None = None) -> dict[str, Any]:
    """Gavel's measured steps/s as its ``simulation_throughputs.json`` holds them (GPU type ->
    ``"('job type', n_gpus)"`` -> ``{"null": steps/s alone, "('other job type', 1)": [own,
    other's steps/s] sharing one GPU}``): the JSON file at ``path``, else built from the
    project's tables ``gavel-throughputs`` (K80, P100, V100 at 1-8 GPUs) and
    ``gavel-colocations`` (the single-GPU pairs gpuscope uses), keys in the file's order."""
    if path is not None:
        from gpuscope.core.io import read_json

        return dict(read_json(path, "Gavel's throughputs", kind=dict))
    out: dict[str, dict[str, dict[str, Any]]] = {}
    th = measured_table("gavel-throughputs")
    for dev, jt, n, x in zip(th["device"], th["job_type"], th["n_gpus"], th["steps_per_s"]):
        out.setdefault(str(dev), {})[repr((str(jt), int(n)))] = {"null": float(x)}
    co = measured_table("gavel-colocations")
    for dev, jt, other, x, y in zip(co["device"], co["job_type"], co["co_job_type"],
                                    co["steps_per_s"], co["co_steps_per_s"]):
        out[str(dev)][repr((str(jt), 1))][repr((str(other), 1))] = [float(x), float(y)]
    return out


def gavel_trace(name: str = "6c71a0") -> Path:
    """One of Gavel's MSR job traces, read by path (``gavel/msr-traces-seed0/<name>.trace``
    under :func:`external_dir`)."""
    return external_path("gavel", "msr-traces-seed0", f"{name}.trace", what=f"Gavel's trace {name}")


def gavel_entries(data: dict[str, Any]) -> Iterator[tuple[str, str, int, dict[str, Any]]]:
    """``(device, job_type, n_gpus, entry)`` of every measurement in a parsed Gavel
    ``simulation_throughputs.json`` (keys ``"('job type', n_gpus)"``; ``entry["null"]`` is the
    job type's steps/s when it runs alone), devices in :data:`GAVEL_DEVICES` order."""
    for dev in GAVEL_DEVICES:
        for key, val in data.get(dev, {}).items():
            job_type, n = ast.literal_eval(key)
            yield dev, job_type, int(n), val


def parse_job_type(name: str) -> tuple[str, int]:
    """A Gavel job type's model and batch size: ``"ResNet-18 (batch size 32)"`` ->
    ``("ResNet-18", 32)``; 0 for a job type without one (``"A3C"``, ``"CycleGAN"``)."""
    if "(batch size" in name:
        base, rest = name.split("(batch size", 1)
        return base.strip(), int(rest.strip(" )"))
    return name.strip(), 0


#: Columns of a Gavel MSR trace (tab-separated, no header): one job a line.
GAVEL_TRACE_COLUMNS: list[str] = ["job_type", "command", "steps_arg", "needs_data",
                                  "total_steps", "arrival_s", "gpus"]


def read_gavel_trace(path: str | Path) -> pd.DataFrame:
    """Every job of a Gavel MSR trace (:data:`GAVEL_TRACE_COLUMNS`), or ``InputError``."""
    from gpuscope.core.io import read_csv  # here, not at the top: the path helpers stay light

    return read_csv(path, "Gavel trace", sep="\t", header=None, names=GAVEL_TRACE_COLUMNS)
