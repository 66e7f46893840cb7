"""Test-wide settings.

* Every test sees the bundled device catalog only: the user catalog
  (``~/.config/gpuscope/devices.toml``) of the machine running the suite is never read, and a
  ``--catalog`` a test passes does not outlive it.
* Commands print no phase lines or progress bars (``GPUSCOPE_QUIET``), so the stderr of a
  failing command is exactly its one error line; ``tests/test_cli_feedback.py`` unsets it to
  check the feedback itself.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("GPUSCOPE_QUIET", "1")


@pytest.fixture(autouse=True)
def _no_user_catalog(tmp_path_factory: pytest.TempPathFactory,
                     monkeypatch: pytest.MonkeyPatch) -> None:
    none = Path(tmp_path_factory.getbasetemp()) / "no-user-catalog" / "devices.toml"
    monkeypatch.setenv("GPUSCOPE_USER_DEVICES", str(none))
