"""The command line starts light: ``gpuscope --help``, every ``gpuscope <cmd> --help`` and the
base layer load neither torch, pandas, pydantic nor numpy (docs/design.md, CLI). Times are
printed by ``benchmarks/cli_startup.py``, not asserted here."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("torch", "pandas", "pydantic", "numpy", "tensorflow", "scipy", "sklearn")

HELP_OF_EVERY_COMMAND = f"""
import argparse, contextlib, io, json, sys
from gpuscope.cli import build_parser

def commands(parser, prefix=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*prefix, name)
                yield from commands(sub, (*prefix, name))

parser = build_parser()
seen = []
for argv in [(), *commands(parser)]:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        try:
            parser.parse_args([*argv, "--help"])
        except SystemExit:
            pass
    seen.append([" ".join(argv), len(out.getvalue())])
print(json.dumps([seen, sorted(m for m in {HEAVY!r} if m in sys.modules)]))
"""


def _python(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout


def test_help_of_every_command_loads_no_heavy_library() -> None:
    seen, heavy = json.loads(_python(HELP_OF_EVERY_COMMAND))
    names = {argv for argv, _ in seen}
    assert {"", "estimate", "train", "allocate", "schedule", "profile steps", "demo"} <= names
    assert all(chars > 100 for _, chars in seen)  # each printed its help
    assert heavy == []


def test_the_base_layer_imports_light() -> None:
    code = ("import importlib, pkgutil, sys, gpuscope.core as c; "
            "[importlib.import_module(f'gpuscope.core.{m.name}') for m in pkgutil.iter_modules(c.__path__)]; "
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    assert _python(code).strip() == "[]"


def test_python_m_gpuscope_help() -> None:
    proc = subprocess.run([sys.executable, "-m", "gpuscope", "--help"], capture_output=True,
                          text=True, check=True)
    assert proc.stdout.startswith("usage: gpuscope") and "estimate" in proc.stdout
