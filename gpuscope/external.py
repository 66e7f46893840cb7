"""Where others' measured data lives (``datasets/external/``, see its README).

Gavel's throughputs and the GPUScheduler authors' tables are copied into the repository so
every clone has them; ``$GPUSCOPE_DATA`` points gpuscope at another copy.
"""

from __future__ import annotations

import os
from pathlib import Path

from gpuscope.paths import bundled


def data_dir() -> Path:
    """The external-data folder: ``$GPUSCOPE_DATA`` if set, else ``datasets/external``."""
    env = os.environ.get("GPUSCOPE_DATA")
    return Path(env) if env else bundled("external")


def gavel_dir() -> Path:
    return data_dir() / "gavel"


def gpuscheduler_dir() -> Path:
    return data_dir() / "gpuscheduler"
