"""Where others' measured data lives (``datasets/external/``, see its README).

Gavel's throughputs and the GPUScheduler authors' tables are copied into the repository so
every clone has them; ``$GPUSCOPE_DATA`` points gpuscope at another copy.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuscope.errors import InputError
from gpuscope.paths import bundled

if TYPE_CHECKING:
    import pandas as pd

#: The devices of Gavel's ``simulation_throughputs.json`` (Narayanan et al., OSDI 2020).
GAVEL_DEVICES: tuple[str, ...] = ("k80", "p100", "v100")


def data_dir() -> Path:
    """The external-data folder: ``$GPUSCOPE_DATA`` if set, else ``datasets/external``."""
    env = os.environ.get("GPUSCOPE_DATA")
    return Path(env) if env else bundled("external")


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
