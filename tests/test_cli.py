"""The top-level command: help, version, and one-line errors with exit code 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gpuscope import __version__
from gpuscope.cli import main


def test_version(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_help_lists_commands(capsys) -> None:
    assert main([]) == 0
    assert "usage: gpuscope" in capsys.readouterr().out


def test_unknown_command_is_one_line_exit_2() -> None:
    r = subprocess.run([sys.executable, "-m", "gpuscope.cli", "frobnicate"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "invalid choice" in lines[0] and "Traceback" not in r.stderr
