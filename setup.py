"""Ships the bundled data of ``datasets/`` inside the wheel as ``gpuscope/_data`` (issue 18).

Everything else is configured in pyproject.toml. The repository keeps ``datasets/`` at the top
(design.md, Layout); a built wheel (``pip install .``, not editable) gets the files that the
defaults of ``demo``, ``predict``, ``allocate``, ``tjng``, ``schedule`` and ``specon`` read, so an
installed gpuscope runs from any directory. :func:`gpuscope.core.data.bundled` looks in
``gpuscope/_data`` first and falls back to the repository's ``datasets/`` (editable installs).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
DATASETS = ROOT / "datasets"
#: Top-level entries of ``datasets/`` that ship; a user's own folders there (corpora, new
#: campaigns) do not.
SHIPPED = ("devices.toml", "cluster-*.toml", "campaigns", "checkpoints", "emulated", "measured")
#: File kinds that ship from those entries.
SUFFIXES = {".toml", ".json", ".parquet", ".pt", ".md", ".csv", ""}


def bundled_files() -> list[Path]:
    """The files of ``datasets/`` that go into the wheel, relative to ``datasets/``."""
    out: list[Path] = []
    for pattern in SHIPPED:
        for top in sorted(DATASETS.glob(pattern)):
            files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
            out += [p.relative_to(DATASETS) for p in files
                    if p.suffix in SUFFIXES and not p.name.startswith(".")]
    return out


class BuildPyWithData(build_py):
    """``build_py`` that copies the bundled data into ``<build_lib>/gpuscope/_data``."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):  # editable: paths.py reads datasets/ itself
            return
        dest = Path(self.build_lib) / "gpuscope" / "_data"
        for rel in bundled_files():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(DATASETS / rel, target)


if __name__ == "__main__":  # setuptools runs this file as __main__; tests import it
    setup(cmdclass={"build_py": BuildPyWithData})
