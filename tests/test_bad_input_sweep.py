"""Bad-input sweep over every subcommand.

Each case runs ``gpuscope.cli.main(argv)`` in-process and asserts exit code 2, exactly one
line on stderr, no traceback, and that no file under the sweep's folder (inputs, the working
directory, the output folder) was created, removed or changed. Inputs live in a temporary
folder built once per module. The families (counts are checked by ``test_family_counts``):

=====================  =====  ============================================================
family                 cases  what
=====================  =====  ============================================================
unknown-name           36     unknown models, devices, policies, methods, sources, partitions
number-range           48     zero / out-of-range values refused by the commands themselves
number-parse           212    every numeric option: negative, NaN, infinite, huge (generated)
oversized              14     counts whose memory estimate exceeds the limit, queue/node caps
missing-file           43     an input path that does not exist
dir-as-file            30     an input file that is a directory
malformed              48     garbage CSV / JSON / TOML / parquet / checkpoint / graph files
empty-file             30     zero-byte inputs of every format
wrong-columns          26     tables with renamed or missing columns, garbage values in files
output-under-file      25     an output path whose parent is a regular file
output-unwritable      25     an output under /proc (root ignores chmod)
output-is-dir          12     a file output that is an existing directory
output-is-file         13     a folder output that is an existing file
output-is-input        17     an output path that is one of the command's inputs
bad-enum               17     values outside an option's choices
unknown-option         38     an option no subcommand has (every subcommand)
unreachable            6      a Ray address refusing connections, state folders that are files
=====================  =====  ============================================================
total                  640    cases over 38 subcommands
=====================  =====  ============================================================
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from badinput_cases import BASE, Case, build_inputs, number_cases, output_cases
from badinput_named import named_cases

from gpuscope.cli import build_parser, main

CASES: list[Case] = named_cases() + output_cases() + number_cases(build_parser())


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Valid and malformed inputs, built once (graph, runs and instance by gpuscope itself)."""
    d = tmp_path_factory.mktemp("sweep")
    build_inputs(d)
    return d


def test_queue_duplicate_check_is_linear() -> None:
    """A 100k-job queue once spent 95 s in a quadratic duplicate-id check."""
    import time

    from gpuscope.core.errors import InputError
    from gpuscope.jobs.queue import assign_ids
    from gpuscope.jobs.spec import JobSpec

    jobs = [JobSpec("lenet", "cifar10", "sgd", 8, 1, job_id=f"j{i}") for i in range(100_000)]
    t0 = time.perf_counter()
    assert len(assign_ids(jobs)) == 100_000
    assert time.perf_counter() - t0 < 5.0
    with pytest.raises(InputError, match="duplicate job_id"):
        assign_ids([*jobs, jobs[7]])


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) if p.is_file()
            else (-1, 0) for p in root.rglob("*")}


#: What the one line must say, per family: a case that fails for another reason than the one
#: it was written for (an earlier check) does not pass.
FAMILY_WORDS: dict[str, str] = {
    "missing-file": r"no such|not exist|not found|missing|not a runs folder|no slurm_submission"
                    r"|not a directory",
    "dir-as-file": r"director|not a (regular )?file|not exist|missing|not a runs folder|no such"
                   r"|not found",
    "output-under-file": r"is a file|not a folder|Not a directory",
    "output-unwritable": r"/proc|not writable|cannot write|cannot create",
    "output-is-dir": r"is a directory",
    "output-is-file": r"is a file|not a folder|Not a directory",
    "output-is-input": r"input",
    "oversized": r"limit",
    "number-parse": r"argument --",
    "bad-enum": r"invalid choice|expected an integer",
    "unknown-option": r"unrecognized arguments",
}


@pytest.mark.parametrize("family,argv", [c[::2] for c in CASES],
                         ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_bad_input(family: str, argv: list[str], sweep_dir: Path, capfd: pytest.CaptureFixture[str],
                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(sweep_dir / "cwd")
    monkeypatch.setenv("GPUSCOPE_SLURM_STATE_DIR", str(sweep_dir / "out" / "slurm"))
    monkeypatch.setenv("GPUSCOPE_MAX_MEMORY_MB", "2048")  # the same limit on every machine
    argv = [a.replace("{d}", str(sweep_dir)) for a in argv]
    before = _snapshot(sweep_dir)
    capfd.readouterr()
    try:
        rc = main(argv)
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 1
    out, err = capfd.readouterr()
    assert "Traceback" not in err, err
    assert rc == 2, f"exit {rc}; stderr: {err[-500:]}"
    lines = err.strip("\n").splitlines()
    assert len(lines) == 1, f"{len(lines)} stderr lines: {err[-800:]}"
    if family in FAMILY_WORDS:
        assert re.search(FAMILY_WORDS[family], lines[0], re.I), f"{family}: {lines[0]}"
    after = _snapshot(sweep_dir)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert not changed, f"files changed: {changed[:5]}"


def test_family_counts() -> None:
    """At least 300 cases; the docstring's table lists every family with its count; every
    subcommand has cases; ids are unique."""
    fams = Counter(c[0] for c in CASES)
    assert sum(fams.values()) >= 300
    table = {k: int(v) for k, v in re.findall(r"^([a-z-]+)\s+(\d+)\s", __doc__ or "", re.M)}
    assert table.pop("total") == len(CASES)
    assert table == dict(fams)
    for cmd in BASE:
        assert any(c[2][:len(cmd.split())] == cmd.split() for c in CASES), cmd
    assert len({c[1] for c in CASES}) == len(CASES), "case ids must be unique"
