"""Where gpuscope's bundled data lives.

Every module finds bundled files (device catalog, emulated and measured datasets,
checkpoints, others' measured data) through :func:`bundled`, so packaging can move the data
in one place. The root is, in order (issue 18, item 7):

1. ``$GPUSCOPE_DATASETS`` when set (tests, read-only installs, a user's own data);
2. ``gpuscope/_data`` inside the installed package, which a built wheel carries
   (``pip install .``; ``setup.py`` copies ``datasets/`` there);
3. the repository's ``datasets/`` (an editable install or a source checkout).

A wheel is checked before the repository because an installed package's parent is
``site-packages``, where another distribution's ``datasets`` folder (Hugging Face's) may sit.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The bundled data inside an installed wheel (absent in a source checkout).
PACKAGE_DATA: Path = Path(__file__).resolve().parent / "_data"
#: The repository's ``datasets/`` folder (an editable install or a source checkout).
REPO_DATASETS: Path = Path(__file__).resolve().parents[1] / "datasets"


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
