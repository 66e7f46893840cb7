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
missing-file           46     an input path that does not exist
dir-as-file            33     an input file that is a directory
malformed              51     garbage CSV / JSON / TOML / parquet / checkpoint / graph files
empty-file             33     zero-byte inputs of every format
wrong-columns          26     tables with renamed or missing columns, garbage values in files
output-under-file      25     an output path whose parent is a regular file
output-unwritable      25     an output under /proc (root ignores chmod)
output-is-dir          12     a file output that is an existing directory
output-is-file         13     a folder output that is an existing file
output-is-input        17     an output path that is one of the command's inputs
bad-enum               17     values outside an option's choices
unknown-option         38     an option no subcommand has (every subcommand)
unreachable            6      a Ray address refusing connections, state folders that are files
special-file           99     every file input a FIFO, /dev/zero or a socket (never opened)
huge-file              33     every file input a sparse file over the input size limit
nesting                18     JSON and TOML inputs nested 2,000 levels deep
tampered               19     checkpoints missing or mistyping a key, a zip bomb, an mDRL
                              checkpoint of another shape, labels with NaN/inf/negative times
                              or text targets, a labels FIFO, encoded edges out of range,
                              traces with an extension type, bad metadata or infinite times
linked-output          74     every output a symlink, a symlink loop, a FIFO or /dev/null
stale-output           30     every folder output holding the user's files or another
                              command's output
user-code              9      --module factories that exit, abort, os._exit or raise
=====================  =====  ============================================================
total                  934    cases over 38 subcommands
=====================  =====  ============================================================

The hostile families (special-file to user-code) run with ``GPUSCOPE_MAX_INPUT_MB=64``, so
their bombs stay small. Outside the sweep (what must work, exit 0): formula cells in every CSV
command, output folders replaced as a whole, user code in a queue, the graph cache, a
byte-order mark, and a full disk (exit 2, nothing left).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from badinput_cases import BASE, Case, build_inputs, number_cases, output_cases
from badinput_hostile import HOSTILE_WORDS, build_hostile_inputs, hostile_cases
from badinput_named import file_inputs, named_cases

from gpuscope.cli import build_parser, main
from gpuscope.core.data import REPO_DATASETS

CASES: list[Case] = (named_cases() + output_cases() + number_cases(build_parser())
                     + hostile_cases(file_inputs()))


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Valid and malformed inputs, built once (graph, runs and instance by gpuscope itself)."""
    d = tmp_path_factory.mktemp("sweep")
    build_inputs(d)
    build_hostile_inputs(d)
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
    "bad-enum": r"invalid choice|must be an integer",
    "unknown-option": r"unrecognized arguments",
    **HOSTILE_WORDS,
}


@pytest.mark.parametrize("family,argv", [c[::2] for c in CASES],
                         ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_bad_input(family: str, argv: list[str], sweep_dir: Path, capfd: pytest.CaptureFixture[str],
                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(sweep_dir / "cwd")
    monkeypatch.setenv("GPUSCOPE_SLURM_STATE_DIR", str(sweep_dir / "out" / "slurm"))
    monkeypatch.setenv("GPUSCOPE_MAX_MEMORY_MB", "2048")  # the same limit on every machine
    monkeypatch.setenv("GPUSCOPE_MAX_INPUT_MB", "64")  # the sweep's bombs stay small
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


def _run(argv: list[str], capfd: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capfd.readouterr()
    rc = main(argv)
    out, err = capfd.readouterr()
    return rc, out, err


FORMULA_IDS = ("=1+2", "+cmd", "-x", "@SUM(A1)", "-2")


def test_formula_cells(tmp_path: Path, capfd: pytest.CaptureFixture[str],
                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Job ids a spreadsheet would evaluate work in every CSV command; each CSV output holds
    them with a leading quote, and gpuscope reads them back unchanged."""
    from gpuscope.core.io import read_csv

    monkeypatch.chdir(tmp_path)
    q = tmp_path / "q.csv"
    q.write_text("job_id,model,dataset,optimizer,batch_size,epochs\n" + "".join(
        f'"{i}",lenet,cifar10,sgd,8,{n + 1}\n' for n, i in enumerate(FORMULA_IDS)))
    rc, out, err = _run(["predict", "--model", str(REPO_DATASETS / "checkpoints" / "v100.pt"),
                         "--jobs", str(q), "-o", str(tmp_path / "p.csv")], capfd)
    assert rc == 0, err
    raw = (tmp_path / "p.csv").read_text()
    assert "\n'=1+2," in raw and "\n'-x," in raw and "\n'-2," in raw
    assert tuple(read_csv(tmp_path / "p.csv")["job_id"]) == FORMULA_IDS
    rc, out, err = _run(["estimate", "--jobs", str(q), "--devices", "v100", "--format", "csv",
                         "--quiet"], capfd)
    assert rc == 0, err
    assert "\n'@SUM(A1),lenet," in out and "\n@SUM" not in out
    rc, out, err = _run(["tjng", "--jobs", str(q), "--cluster", "v100:1", "-o",
                         str(tmp_path / "tj")], capfd)
    assert rc == 0, err
    assert set(read_csv(tmp_path / "tj" / "tjng.csv")["job_id"]) == set(FORMULA_IDS)
    rc, out, err = _run(["allocate", "--jobs", str(q), "--cluster", "v100:1", "-o",
                         str(tmp_path / "al")], capfd)
    assert rc == 0, err
    plan = next((tmp_path / "al").glob("plan_*.csv"))
    assert "\n'+cmd," in plan.read_text()


def test_output_folders_replace_as_a_whole(tmp_path: Path, capfd: pytest.CaptureFixture[str],
                                           sweep_dir: Path) -> None:
    """A second run into the same folder leaves only its own files; a folder holding a file of
    the user's is refused and left as it was; the runs folder read is never written."""
    out = tmp_path / "sch"
    inst = str(sweep_dir / "inst")
    assert _run(["schedule", "--instance", inst, "--method", "fifo", "--full-log", "-o",
                 str(out)], capfd)[0] == 0
    assert (out / "schedule.csv").is_file()
    assert _run(["schedule", "--instance", inst, "--method", "edf", "-o", str(out)], capfd)[0] == 0
    assert not (out / "schedule.csv").exists()  # the first run's file did not survive
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sch"]  # no temporary left
    (out / "notes.txt").write_text("mine\n")
    rc, _, err = _run(["schedule", "--instance", inst, "--method", "fifo", "-o", str(out)], capfd)
    assert rc == 2 and "notes.txt" in err and (out / "notes.txt").read_text() == "mine\n"
    runs = sweep_dir / "runs" / "v100"
    before = _snapshot(runs)
    assert _run(["profile", "build-dataset", "--runs", str(runs), "-o", str(tmp_path / "ds"),
                 "--quiet"], capfd)[0] == 0
    assert _snapshot(runs) == before  # reading the ledger wrote nothing beside it


def test_user_code_in_a_queue_and_the_graph_cache(tmp_path: Path, sweep_dir: Path,
                                                  capfd: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """In a queue, a factory that exits or aborts fails its own job only; a tampered cache
    entry is rebuilt; an unwritable cache folder is one warning, not a failure."""
    monkeypatch.setenv("GPUSCOPE_CACHE", str(tmp_path / "cache"))
    q = tmp_path / "q.csv"
    f = sweep_dir / "factory.py"
    q.write_text("job_id,model,dataset,optimizer,batch_size,epochs,module\n"
                 f"ok,lenet,cifar10,sgd,8,1,\nex,,tabular:features=4,sgd,2,1,{f}:exits\n"
                 f"ab,,tabular:features=4,sgd,2,1,{f}:aborts\n")
    rc, out, err = _run(["estimate", "--jobs", str(q), "--devices", "v100", "--format", "csv",
                         "--quiet"], capfd)
    assert rc == 0, err
    rows = {line.split(",")[0]: line for line in out.splitlines()[1:]}
    assert ",ok," in rows["ok"] and ",error," in rows["ex"] and "SIGABRT" in rows["ab"]
    assert "sys.exit" in err and "SIGABRT" in err and "Traceback" not in err
    entry = next((tmp_path / "cache" / "graphs").glob("lenet-*.json.gz"))
    import gzip

    head, _, body = gzip.decompress(entry.read_bytes()).decode().partition("\n")
    entry.write_bytes(gzip.compress(f"{head}\n{body.replace('lenet', 'tampered')}".encode()))
    argv = ["estimate", "--model", "lenet", "--dataset", "cifar10", "--batch-size", "8",
            "--devices", "v100", "--format", "csv", "--quiet"]
    rc, out2, err = _run(argv, capfd)
    assert rc == 0 and "tampered" not in gzip.decompress(entry.read_bytes()).decode()
    monkeypatch.setenv("GPUSCOPE_CACHE", str(sweep_dir / "afile" / "cache"))  # under a file
    rc, out3, err = _run(argv, capfd)
    assert rc == 0 and out3 == out2, err
    assert err.count("warning: graph cache") == 1


def test_bom_queue_and_full_disk(tmp_path: Path, capfd: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A queue starting with a UTF-8 byte-order mark reads; a full disk is one line that says
    so, and nothing partial or temporary is left."""
    from badinput_cases import QUEUE

    q = tmp_path / "q.csv"
    q.write_bytes("\ufeff".encode() + QUEUE.encode())
    assert _run(["jobs", "check", str(q)], capfd)[0] == 0
    import os as os_

    real_fsync = os_.fsync

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os_, "fsync", full)
    out = tmp_path / "gen"
    rc, _, err = _run(["schedule", "generate", "--nodes", "2", "-o", str(out)], capfd)
    monkeypatch.setattr(os_, "fsync", real_fsync)
    assert rc == 2 and "disk is full" in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.csv"]
