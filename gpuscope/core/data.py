"""Where gpuscope's data lives: the bundled data and others' measured data.

**Bundled data** (device catalog, emulated and measured datasets, checkpoints) is found through
:func:`bundled`, so packaging can move it in one place. The root is, in order:

1. ``$GPUSCOPE_DATASETS`` when set (tests, read-only installs, a user's own data);
2. ``gpuscope/_data`` inside the installed package, which a built wheel carries
   (``pip install .``; ``setup.py`` copies ``datasets/`` there);
3. the repository's ``datasets/`` (an editable install or a source checkout).

A wheel is checked before the repository because an installed package's parent is
``site-packages``, where another distribution's ``datasets`` folder (Hugging Face's) may sit.

**Others' measured data** (Gavel's throughputs and traces, the GPUScheduler authors' tables):
:func:`data_dir`, ``$GPUSCOPE_DATA`` when set.
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


def data_dir() -> Path:
    """The external-data folder: ``$GPUSCOPE_DATA`` if set, else ``datasets/external``."""
    env = os.environ.get("GPUSCOPE_DATA")
    return Path(env) if env else bundled("external")


def external_file(path: str | Path) -> Path:
    """``path`` when it exists, else the file of that bare name in others' measured data
    (:func:`data_dir`: ``6c71a0.trace``, ``simulation_throughputs.json``), else ``path``
    as given (its reader names it missing)."""
    p = Path(path)
    if p.exists() or len(p.parts) != 1:
        return p
    root = data_dir()
    found = sorted(root.rglob(p.name)) if root.is_dir() else []
    return found[0] if found else p


def gavel_dir() -> Path:
    return data_dir() / "gavel"


def gpuscheduler_dir() -> Path:
    return data_dir() / "gpuscheduler"


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
    import pandas as pd  # here, not at the top: the path helpers above stay light

    try:
        return pd.read_csv(path, sep="\t", header=None, names=GAVEL_TRACE_COLUMNS)
    except (OSError, ValueError) as e:
        raise InputError(f"cannot read Gavel trace {path}: {e}") from None


def shared_data_dir() -> Path:
    """Others' measured data read by path, not copied (``../shared/data`` beside the
    repository, or one level further up from a git worktree): ``$GPUSCOPE_SHARED_DATA`` if set.
    ``neusight-kernels/`` and ``pytorch-gpu-benchmark/`` live there (their README)."""
    env = os.environ.get("GPUSCOPE_SHARED_DATA")
    if env:
        return Path(env)
    root = Path(__file__).resolve().parents[2]
    for cand in (root.parent / "shared" / "data", root.parent.parent / "shared" / "data"):
        if cand.is_dir():
            return cand
    return root.parent / "shared" / "data"
