"""Errors that the CLI turns into one line on stderr and exit code 2."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input from the user: an unknown name, an out-of-range number, a malformed file.

    The message must name the problem in one line; ``gpuscope.cli`` prints it as
    ``gpuscope: error: <message>`` and exits with code 2, without a traceback.
    """


class CheckpointError(InputError):
    """A checkpoint that cannot be used: other version, other target set, corrupt file."""


class SlurmError(InputError):
    """A local cluster cannot start or stop, or Slurm refused a command (message: one line)."""
