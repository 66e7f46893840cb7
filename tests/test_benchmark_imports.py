"""Benchmarks and research scripts run outside the suite, so a moved or renamed name would
only show when someone runs them: every ``from gpuscope... import name`` (and
``from research... import``) in ``benchmarks/`` and ``research/``, inside functions too, must
resolve against the package as it is."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted([*ROOT.glob("benchmarks/*.py"), *ROOT.glob("research/**/*.py")])


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    out = []
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module \
                and n.module.split(".")[0] in ("gpuscope", "research"):
            out.append((n.lineno, n.module, [a.name for a in n.names if a.name != "*"]))
        elif isinstance(n, ast.Import):
            out += [(n.lineno, a.name, []) for a in n.names if a.name.split(".")[0] == "gpuscope"]
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_imported_name_exists(path: Path) -> None:
    missing = []
    for line, module, names in _imports(path):
        try:
            mod = importlib.import_module(module)
        except ImportError as e:
            if getattr(e, "name", "") and not str(e.name).startswith(("gpuscope", "research")):
                pytest.skip(f"optional dependency {e.name} missing")
            missing.append(f"line {line}: {module} ({e})")
            continue
        for name in names:
            if not hasattr(mod, name):
                try:
                    importlib.import_module(f"{module}.{name}")
                except ImportError:
                    missing.append(f"line {line}: {module}.{name}")
    assert not missing, missing


def test_a_renamed_name_is_caught(tmp_path: Path) -> None:
    f = tmp_path / "b.py"
    f.write_text("def main():\n    from gpuscope.core.data import no_such_helper\n")
    (line, module, names), = _imports(f)
    assert (module, names) == ("gpuscope.core.data", ["no_such_helper"])
    assert not hasattr(importlib.import_module(module), "no_such_helper")
