"""Import layering (docs/design.md, Layout): data flows one way through the rooms.

Every ``import`` of every module counts, the ones inside functions too. A room imports its own
modules, the base layer (``core``, then ``jobs``, ``cluster``, ``slurm``) and the stages to its
left, never one to its right; ``mdrl`` and ``specon`` are standalone reproductions that import
the base layer only; ``core`` imports no room. Only the package's top modules (``cli``,
``api``, ``testing``, ``__init__``, ``__main__``) import any room, and nothing in the package
imports ``research``.
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "gpuscope"
#: Base layer, then the pipeline stages in data-flow order.
ORDER: tuple[str, ...] = ("core", "jobs", "cluster", "slurm", "workloads", "graphs", "profiling",
                          "emulator", "predictor", "allocator", "schedulers")
BASE: tuple[str, ...] = ORDER[:4]
ALLOWED: dict[str, set[str]] = {r: set(ORDER[: i + 1]) for i, r in enumerate(ORDER)}
ALLOWED |= {r: {*BASE, r} for r in ("mdrl", "specon")}


def imported(path: Path) -> list[tuple[int, str]]:
    """``(line, dotted name)`` of every import in ``path``; ``from gpuscope import x`` gives
    ``gpuscope.x``, relative imports are resolved against the module's package."""
    package = ["gpuscope", *path.relative_to(PKG).parent.parts]
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) + 1 - node.level] if node.level else [])
            mod = ".".join(p for p in (base, node.module or "") if p)
            out += [(node.lineno, f"{mod}.{a.name}" if mod == "gpuscope" else mod)
                    for a in node.names]
    return out


def test_no_room_imports_one_to_its_right() -> None:
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        room = rel.parts[0] if len(rel.parts) > 1 else None
        for line, name in imported(path):
            parts = name.split(".")
            if parts[0] == "research":
                bad.append(f"{rel}:{line} imports {name}")
            if parts[0] != "gpuscope" or room is None or len(parts) == 1:
                continue
            if parts[1] not in ALLOWED[room] | {room, "__version__"}:
                bad.append(f"{rel}:{line} ({room}) imports {name}")
    assert not bad, "\n".join(bad)


def test_every_room_has_a_place_in_the_order() -> None:
    rooms = {p.name for p in PKG.iterdir() if (p / "__init__.py").is_file()}
    assert rooms == set(ALLOWED)
