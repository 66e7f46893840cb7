"""Reproduce seed 001's allocation experiments and write the committed tables and figures.

    .venv/bin/python benchmarks/allocator_experiments.py [--model-dir datasets/checkpoints]
        [--truth datasets/emulated] [--gavel ../shared/data/gavel] [--gavel-only]

Writes results/tables/allocator_*.md and results/figures/allocator_*.png:

* allocator_table9.md — Tables 8/9/14: six jobs one minute apart, scores, allocation, JCT;
* allocator_table4_seed.md — Tables 10–20 on one gtx1080, rtx2070, titanx (FIFO and SJF for
  every policy; ablations), emulated ground truth;
* allocator_table4_modern.md — the same on one v100, t4, a100, h100;
* allocator_gavel.md — execution-time policies on Gavel's measured throughputs (measured).

It prints the headline figures: each predicted policy's average JCT against the oracle's, and
gpuscope's ``ect`` against comp-eff (the allocator's goals).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpuscope.allocator.reproduce import reproduce_gavel, reproduce_seed001  # noqa: E402
from gpuscope.core.data import external_dir  # noqa: E402


def _avg_jct(md: str, label: str) -> float | None:
    """The "Average JCT" cell of row ``label`` in the first pipe table of ``md``."""
    col = None
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if col is None and "Average JCT" in cells:
            col = cells.index("Average JCT")
        elif col is not None and cells and cells[0] == label:
            return float(re.sub(",", "", cells[col]))
    return None


def headline(name: str, md: str) -> None:
    first = md.split("**Ablation")[0]
    for order in ("FIFO", "SJF"):
        oracle = _avg_jct(first, f"Oracle (true exec time) ({order})")
        ce = _avg_jct(first, f"Proposed Model, comp-eff ({order})")
        et = _avg_jct(first, f"Proposed Model, exec time ({order})")
        ect = _avg_jct(first, f"gpuscope ECT ({order})")
        if None in (oracle, ce, et, ect):
            continue
        print(f"{name} {order}: avg JCT / oracle: exec-time {et / oracle:.3f}, "
              f"comp-eff {ce / oracle:.3f}, ect {ect / oracle:.3f} (goal <= 1.10); "
              f"ect / comp-eff {ect / ce:.3f} (goal < 1)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-dir", default=str(ROOT / "datasets" / "checkpoints"))
    ap.add_argument("--truth", default=str(ROOT / "datasets" / "emulated"))
    ap.add_argument("--gavel", default=str(external_dir() / "gavel"),
                    help="Gavel's throughputs JSON and traces (default $GPUSCOPE_DATA/gavel or ../shared/data/gavel)")
    ap.add_argument("--tables", default=str(ROOT / "results" / "tables"))
    ap.add_argument("--figures", default=str(ROOT / "results" / "figures"))
    ap.add_argument("--gavel-only", action="store_true")
    a = ap.parse_args()
    if Path(a.gavel).is_dir():
        print(reproduce_gavel(a.gavel, a.tables, a.figures))
    else:
        print(f"Gavel's data not found at {a.gavel} (give --gavel or set GPUSCOPE_DATA): "
              "allocator_gavel.md not written", file=sys.stderr)
    if a.gavel_only:
        return 0
    out = reproduce_seed001(a.model_dir, a.truth, a.tables, a.figures)
    for k, v in out.items():
        print(v)
        if k.startswith("table4"):
            headline(k, v)
    return 0


if __name__ == "__main__":
    sys.exit(main())
