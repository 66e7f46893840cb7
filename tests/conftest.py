"""Test-wide settings.

* Every test sees the bundled device catalog only: the user catalog
  (``~/.config/gpuscope/devices.toml``) of the machine running the suite is never read, and a
  ``--catalog`` a test passes does not outlive it.
* ``catalog_graphs`` traces each training-step graph once per session: the catalog export
  test and the Fig. 7 order test read the same CIFAR-10 SGD graphs (a trace costs seconds).
* Each process computes on one OpenMP thread (``OMP_NUM_THREADS=1`` unless the caller set it,
  inherited by the commands and jobs the tests start): the suite runs on shared 2-core
  machines, where a second thread spinning against other processes makes small CPU steps and
  tree fits many times slower. The tests check results, not parallel speed.
* Commands print no phase lines or progress bars (``GPUSCOPE_QUIET``), so the stderr of a
  failing command is exactly its one error line; ``tests/test_cli_feedback.py`` unsets it to
  check the feedback itself.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("GPUSCOPE_QUIET", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch, numpy's BLAS or sklearn load


@pytest.fixture(autouse=True)
def _no_user_catalog(tmp_path_factory: pytest.TempPathFactory,
                     monkeypatch: pytest.MonkeyPatch) -> None:
    none = Path(tmp_path_factory.getbasetemp()) / "no-user-catalog" / "devices.toml"
    monkeypatch.setenv("GPUSCOPE_USER_DEVICES", str(none))


class GraphMemo:
    """``export_graph`` by graph key, for one test session (``GraphCache``'s ``get_or_export``
    without the disk). Callers only read the graphs it returns."""

    def __init__(self) -> None:
        self._graphs: dict[str, Any] = {}

    def get_or_export(self, job: Any) -> Any:
        from gpuscope.graphs import export_graph

        if job.graph_key not in self._graphs:
            self._graphs[job.graph_key] = export_graph(job)
        return self._graphs[job.graph_key]


@pytest.fixture(scope="session")
def catalog_graphs() -> GraphMemo:
    return GraphMemo()
