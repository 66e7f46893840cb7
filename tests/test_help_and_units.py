"""Every ``--help`` states every default; every column of the tables the commands write has a
unit (its suffix, or docs/outputs.md); the docs define "peak" as the labeler computes it."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pandas as pd
import pytest

from gpuscope.cli import build_parser, main

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _leaves(p: argparse.ArgumentParser, name: str = "") -> list[tuple[str, argparse.ArgumentParser]]:
    out = []
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for n, sp in dict(a.choices).items():
                out += _leaves(sp, f"{name} {n}".strip())
    return out or [(name, p)]


def test_every_help_states_every_default(capsys: pytest.CaptureFixture[str]) -> None:
    missing = []
    for name, p in _leaves(build_parser()):
        fmt = p._get_formatter()
        for a in p._actions:
            if not a.option_strings or a.default is None or a.default is False \
                    or a.default is argparse.SUPPRESS or a.help == argparse.SUPPRESS:
                continue
            text = fmt._expand_help(a) if a.help is not None else ""
            if "default" not in text.lower():
                missing.append(f"{name} {a.option_strings[-1]}")
    assert not missing, missing
    for cmd, opt, default in (("allocate", "--order", "fifo"), ("tjng", "--seed", "0"),
                              ("estimate", "--devices", "all"), ("schedule", "--method", "")):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        text = text[text.index("options:"):]  # past the usage line
        block = text[text.index(opt):][:300]
        assert "default" in block and default in block, (cmd, block)


def _documented() -> tuple[set[str], set[str]]:
    text = (DOCS / "outputs.md").read_text()
    suffixes = set(re.findall(r"`(_[a-z_]+)`", text.split("## Columns")[0]))
    names = set(re.findall(r"`([A-Za-z][A-Za-z0-9_<>]*)`", text.split("## Columns")[1]))
    return suffixes, names


def _has_unit(col: str, suffixes: set[str], names: set[str]) -> bool:
    if col in names or any(col.endswith(s) for s in suffixes):
        return True
    return col.startswith("nmse_") and "nmse_<target>" in names


def test_every_output_column_has_a_unit(tmp_path: Path, monkeypatch) -> None:
    from gpuscope.core.targets import TARGETS
    from gpuscope.core.tjng import JOBS_COLUMNS, TIMES_COLUMNS, TJNG_COLUMNS
    from gpuscope.emulator.table import COLUMNS
    from gpuscope.profiling.labeling import LABEL_COLUMNS

    cols: dict[str, set[str]] = {
        "estimate": set(COLUMNS), "profile label": set(LABEL_COLUMNS),
        "tjng": {*TJNG_COLUMNS, *JOBS_COLUMNS, *TIMES_COLUMNS, "Nodes"},
        "predict": {"job_id", "device", *TARGETS, "step_s", "oom_prob", "oom", "in_domain",
                    "domain_reason", "device_kind"},
    }
    monkeypatch.chdir(tmp_path)
    truth = Path(__file__).resolve().parents[1] / "datasets" / "emulated"
    assert main(["allocate", "--jobs", "table8", "--cluster", "gtx1080:1,titanx:1",
                 "--policy", "oracle", "--truth", str(truth), "-o", "al"]) == 0
    assert main(["schedule", "generate", "--source", "alexnet", "--nodes", "2", "--seed", "1",
                 "-o", "inst"]) == 0
    assert main(["schedule", "--instance", "inst", "--method", "greedy", "--seed", "1",
                 "-o", "sch"]) == 0
    pytest.importorskip("torch")
    assert main(["mdrl", "eval", "--partitions", "A100", "--episodes", "2", "--no-oracle",
                 "--quiet", "-o", "ev"]) == 0
    for f in sorted(tmp_path.rglob("*.csv")):
        cols[str(f.relative_to(tmp_path))] = set(pd.read_csv(f, nrows=0).columns)
    cols["mdrl train.csv"] = {"partition", "episode", "u_term"}
    assert {"al/metrics.csv", "al/per_device.csv", "sch/jobs.csv", "ev/eval.csv"} <= set(cols)
    suffixes, names = _documented()
    bad = {f: sorted(c for c in cs if not _has_unit(c, suffixes, names))
           for f, cs in cols.items()}
    assert not any(bad.values()), {f: c for f, c in bad.items() if c}


def test_one_definition_of_peak() -> None:
    """The glossary and the design page say what ``labeling.robust_peak`` computes."""
    from gpuscope.core.targets import PEAK_FRACTION, PEAK_QUANTILE

    q, f = f"{round(100 * PEAK_QUANTILE)}th percentile", f"{round(100 * PEAK_FRACTION)} %"
    for page in ("glossary.md", "design.md"):
        text = " ".join((DOCS / page).read_text().split())
        para = text[text.index("eak consumption"):][:500]
        assert q in para and "steady" in para and f in para, page
