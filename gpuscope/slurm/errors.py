"""The Slurm engine's error: one line on stderr and exit code 2, like every gpuscope error."""

from __future__ import annotations

from gpuscope.errors import InputError


class SlurmError(InputError):
    """A local cluster cannot start or stop, or Slurm refused a command (message: one line)."""
