"""Packaging: an installed wheel finds its bundled data without the repository.

``gpuscope.core.data.bundled`` looks in ``$GPUSCOPE_DATASETS``, then the package's ``_data`` folder
(which ``setup.py`` fills in a built wheel), then the repository's ``datasets/``. The slow test
builds the real wheel and runs ``gpuscope demo`` from it in a folder outside the repository.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from gpuscope.core import data as paths

ROOT = Path(__file__).resolve().parents[1]
#: What the demo and the predict/allocate defaults read (seed 001 Table 4 cluster).
DEMO_FILES = ["devices.toml"] + [
    f"{kind}/{dev}{suffix}"
    for dev in ("gtx1080", "rtx2070", "titanx")
    for kind, suffix in (("checkpoints", ".pt"), ("checkpoints", "-driple.pt"),
                         ("emulated", "/labels.parquet"), ("emulated", "/graphs.parquet"),
                         ("emulated", "/vocab.json"))
]


def _setup_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpuscope_setup", ROOT / "setup.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # setup() runs only as __main__
    return mod


def test_bundled_resolves_from_package_data_without_repo(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "site-packages" / "gpuscope" / "_data"
    (pkg / "checkpoints").mkdir(parents=True)
    (pkg / "devices.toml").write_text("# catalog\n")
    monkeypatch.delenv("GPUSCOPE_DATASETS", raising=False)
    monkeypatch.setattr(paths, "PACKAGE_DATA", pkg)
    monkeypatch.setattr(paths, "REPO_DATASETS", tmp_path / "site-packages" / "datasets")
    assert paths.data_root() == pkg
    assert paths.bundled("checkpoints", "v100.pt") == pkg / "checkpoints" / "v100.pt"


def test_package_data_wins_over_a_foreign_datasets_folder(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Beside an installed package sits site-packages/datasets (Hugging Face's): not ours."""
    site = tmp_path / "site-packages"
    (site / "datasets").mkdir(parents=True)
    (site / "datasets" / "devices.toml").write_text("# not gpuscope's\n")
    (site / "gpuscope" / "_data").mkdir(parents=True)
    (site / "gpuscope" / "_data" / "devices.toml").write_text("# catalog\n")
    monkeypatch.delenv("GPUSCOPE_DATASETS", raising=False)
    monkeypatch.setattr(paths, "PACKAGE_DATA", site / "gpuscope" / "_data")
    monkeypatch.setattr(paths, "REPO_DATASETS", site / "datasets")
    assert paths.bundled("devices.toml") == site / "gpuscope" / "_data" / "devices.toml"


def test_env_wins_then_repo_is_the_fallback(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paths, "PACKAGE_DATA", tmp_path / "no-package-data")
    monkeypatch.setattr(paths, "REPO_DATASETS", tmp_path / "repo" / "datasets")
    monkeypatch.delenv("GPUSCOPE_DATASETS", raising=False)
    assert paths.data_root() == tmp_path / "repo" / "datasets"
    monkeypatch.setenv("GPUSCOPE_DATASETS", str(tmp_path / "mine"))
    assert paths.bundled("x.toml") == tmp_path / "mine" / "x.toml"


def test_wheel_file_list_has_what_the_defaults_read() -> None:
    shipped = {str(p) for p in _setup_module().bundled_files()}
    missing = [f for f in DEMO_FILES if f not in shipped]
    assert not missing, missing
    # every bundled checkpoint and dataset the predict/allocate defaults may pick ships
    for sub in ("checkpoints", "emulated", "measured"):
        # dotfiles (a regeneration's output-folder record) are local, never shipped
        tracked = {str(p.relative_to(ROOT / "datasets"))
                   for p in (ROOT / "datasets" / sub).rglob("*")
                   if p.is_file() and not p.name.startswith(".")}
        assert tracked and tracked <= shipped, sorted(tracked - shipped)[:5]
    assert not any(s.startswith("corpus/") for s in shipped)


@pytest.mark.slow
def test_built_wheel_runs_the_demo_outside_the_repository(tmp_path: Path) -> None:
    """Build the wheel from a copy of the tree, unpack it, run ``gpuscope demo`` from /tmp."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "constraints.txt"):
        shutil.copy2(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "_data", "corpus")
    shutil.copytree(ROOT / "gpuscope", src / "gpuscope", ignore=ignore)
    shutil.copytree(ROOT / "datasets", src / "datasets", ignore=ignore)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "--disable-pip-version-check", "-w",
                    str(tmp_path / "dist"), str(src)], check=True, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("gpuscope-*.whl")
    assert wheel.stat().st_size < 20e6, wheel.stat().st_size
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"gpuscope/_data/{f}" for f in DEMO_FILES} <= names
    assert "gpuscope/py.typed" in names
    assert "gpuscope/jobs/templates/my_model.py" in names  # `gpuscope jobs template` copies it
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    env = {k: v for k, v in os.environ.items() if k not in ("GPUSCOPE_DATASETS", "PYTHONPATH")}
    env["PYTHONPATH"] = str(site)
    run = subprocess.run([sys.executable, "-c", "import sys; from gpuscope.cli import main; "
                          "import gpuscope.core.data as p; print(p.data_root()); sys.argv[1:] = "
                          "['demo']; main()"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.splitlines()[0] == str(site / "gpuscope" / "_data")
    assert "allocator demo finished" in run.stdout
