"""The corpus build key covers everything a row depends on (export cached by
content, resumable build): a changed calibration, device catalog or feature code must not let
a build resume from stale parts."""

from __future__ import annotations

import shutil
from pathlib import Path

from gpuscope.predictor.physics.corpus import build_key, key_sources


def test_key_sources_cover_calibration_catalog_and_features() -> None:
    names = {p.name for p in key_sources()}
    assert {"calibration.json", "devices.toml", "perf.py", "analytic.py", "run_stats.py",
            "features.py", "labeling.py"} <= names
    assert all(p.is_file() for p in key_sources())


def test_key_changes_with_any_source_byte(tmp_path: Path) -> None:
    srcs = key_sources()
    copies = []
    for i, p in enumerate(srcs):
        q = tmp_path / f"{i}-{p.name}"
        shutil.copyfile(p, q)
        copies.append(q)
    base = build_key(copies)
    assert build_key(copies) == base  # deterministic
    for name in ("calibration.json", "devices.toml"):
        q = next(c for c in copies if c.name.endswith(name))
        orig = q.read_bytes()
        q.write_bytes(orig + b"\n")
        assert build_key(copies) != base, name
        q.write_bytes(orig)
    assert build_key(copies) == base
