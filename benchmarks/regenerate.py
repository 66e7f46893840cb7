"""Regenerate everything the emulator's figures feed, after a change of the emulator's model
(``EMULATOR_VERSION`` bumped, a refit, a catalog edit): one command, one progress line per
stage, stopping at the first stage that fails.

Stages, in the order they depend on each other (each is an ordinary command of its own,
rerun alone when only it is stale):

1. ``bundles``: the 7 emulated datasets, ``datasets/emulated/*`` (``emulator_bundle.py``;
   ``tests/test_emulator_bundle.py`` checks them against the code);
2. ``corpus``: the predictor's architecture corpus, ``datasets/corpus``
   (``gpuscope predictor corpus``; its build key covers the emulator's sources);
3. ``checkpoints``: the 15 emulated checkpoints, ``datasets/checkpoints``
   (``predictor_checkpoints.py``; ``amd-epyc.pt``, trained on measured runs, is kept);
4. ``allocator``: the allocator's tables and figures (``allocator_experiments.py``);
5. ``fidelity``, ``h100``, ``scalar-ops``, ``seed001``: the emulator's figures and tables in
   ``results/`` (``results/README.md`` names each file's command).

Fits are not part of it: run them first, on their fit sets, and commit the parameters
(``emulator_kernels.py --write``, ``emulator_vs_gpu.py --fit``, ``emulator_fidelity.py
--write``; docs/emulator.md). Run it at low priority on a shared machine::

    nice -n 10 python benchmarks/regenerate.py [--from STAGE] [--only STAGE,...] [--list]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
#: (name, command) in dependency order.
STAGES: list[tuple[str, list[str]]] = [
    ("bundles", [PY, "benchmarks/emulator_bundle.py"]),
    ("corpus", [PY, "-m", "gpuscope", "predictor", "corpus", "-o", "datasets/corpus",
                "--per-arch", "2", "--quiet"]),
    ("checkpoints", [PY, "benchmarks/predictor_checkpoints.py", "--measured", "",
                     "--epochs", "100", "--patience", "15"]),
    ("allocator", [PY, "benchmarks/allocator_experiments.py"]),
    ("fidelity", [PY, "benchmarks/emulator_fidelity.py", "--figure",
                  "results/figures/emulator_gavel.png"]),
    ("h100", [PY, "benchmarks/emulator_vs_gpu.py", "--write"]),
    ("scalar-ops", [PY, "benchmarks/emulator_scalar_ops.py", "--csv",
                    "results/tables/emulator_scalar_ops.csv"]),
    ("seed001", [PY, "benchmarks/emulator_seed001.py", "--figures"]),
]
NAMES: list[str] = [n for n, _ in STAGES]


def pick(start: str | None, only: str | None) -> list[tuple[str, list[str]]]:
    """The stages to run: all, from ``start`` on, or the comma list ``only``."""
    for name in [start] if start else (only.split(",") if only else []):
        if name not in NAMES:
            raise SystemExit(f"unknown stage {name!r}; stages: {', '.join(NAMES)}")
    if only:
        return [s for s in STAGES if s[0] in only.split(",")]
    return STAGES[NAMES.index(start):] if start else STAGES


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from", dest="start", default=None, help="start at this stage")
    ap.add_argument("--only", default=None, help="comma list of stages")
    ap.add_argument("--list", action="store_true", help="print the stages and exit")
    a = ap.parse_args()
    stages = pick(a.start, a.only)
    if a.list:
        for name, cmd in stages:
            print(f"{name}: {' '.join(c if c else repr(c) for c in cmd)}")
        return 0
    log_dir = ROOT / "runs" / "regenerate"
    log_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    for i, (name, cmd) in enumerate(stages, 1):
        log = log_dir / f"{name}.log"
        print(f"[{i}/{len(stages)}] {name}: {' '.join(cmd[1:])} (log {log.relative_to(ROOT)})",
              flush=True)
        t1 = time.perf_counter()
        with log.open("w") as fh:
            rc = subprocess.call(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT)
        took = time.perf_counter() - t1
        if rc != 0:
            print(f"[{i}/{len(stages)}] {name} FAILED (exit {rc}) after {took:.0f} s; see {log}; "
                  f"resume with --from {name}", flush=True)
            return rc
        tail = log.read_text().strip().splitlines()[-1:] or [""]
        print(f"[{i}/{len(stages)}] {name} done in {took:.0f} s ({time.perf_counter() - t0:.0f} s "
              f"in all): {tail[0][:160]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
