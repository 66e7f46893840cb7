"""What a long command tells its user while it works, on stderr (stdout carries results).

* :func:`phase`: one line naming the step a command enters (``loading 2 datasets ...``), for
  steps that take seconds and have no natural count;
* :func:`bar`: a tqdm bar over items. On a terminal it appears after 2 s and redraws in place;
  written to a file or a pipe (a log, a CI job) it prints its state (in ASCII) every 30 s and
  at the end instead of redrawing ten times a second.

``--quiet`` of a command, or ``GPUSCOPE_QUIET=1`` for every command, silences both (a script
that wants a failing command's stderr to be its one error line sets it).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any

#: Environment variable that silences phase lines and bars of every command.
QUIET_ENV: str = "GPUSCOPE_QUIET"


def silenced(quiet: bool = False) -> bool:
    """Whether feedback is off: ``quiet`` (a command's ``--quiet``) or ``$GPUSCOPE_QUIET``."""
    return quiet or os.environ.get(QUIET_ENV, "").strip() not in ("", "0")


def phase(message: str, *, quiet: bool = False) -> None:
    """``message ...`` as one line on stderr, flushed at once."""
    if not silenced(quiet):
        sys.stderr.write(f"{message} ...\n")
        sys.stderr.flush()


def bar(iterable: Iterable[Any] | None = None, *, desc: str, unit: str = "it",
        total: float | None = None, quiet: bool = False, **kw: Any) -> Any:
    """A tqdm bar on stderr (see the module docstring); ``kw`` go to ``tqdm``."""
    from tqdm import tqdm

    tty = sys.stderr.isatty()
    opts: dict[str, Any] = ({"delay": 2.0, "mininterval": 0.1} if tty
                            else {"mininterval": 30.0, "ascii": True})
    return tqdm(iterable, desc=desc, unit=unit, total=total, file=sys.stderr,
                disable=silenced(quiet), **{**opts, **kw})
