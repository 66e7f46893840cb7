"""Where gpuscope's bundled data lives.

Every module finds bundled files (device catalog, emulated and measured datasets,
checkpoints, others' measured data) through :func:`bundled`, so packaging can move the data
in one place. ``GPUSCOPE_DATASETS`` overrides the root (tests, read-only installs).
"""

from __future__ import annotations

import os
from pathlib import Path

#: The repository's ``datasets/`` folder (an editable install or a source checkout).
REPO_DATASETS: Path = Path(__file__).resolve().parents[1] / "datasets"


def data_root() -> Path:
    """Root folder of the bundled data (``$GPUSCOPE_DATASETS`` if set)."""
    env = os.environ.get("GPUSCOPE_DATASETS")
    return Path(env) if env else REPO_DATASETS


def bundled(*parts: str) -> Path:
    """Path of a bundled file or folder, e.g. ``bundled("checkpoints", "v100.pt")``."""
    return data_root().joinpath(*parts)
