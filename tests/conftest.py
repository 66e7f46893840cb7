"""Every test sees the bundled device catalog only: the user catalog
(``~/.config/gpuscope/devices.toml``) of the machine running the suite is never read, and a
``--catalog`` a test passes does not outlive it."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _no_user_catalog(tmp_path_factory: pytest.TempPathFactory,
                     monkeypatch: pytest.MonkeyPatch) -> None:
    none = Path(tmp_path_factory.getbasetemp()) / "no-user-catalog" / "devices.toml"
    monkeypatch.setenv("GPUSCOPE_USER_DEVICES", str(none))
