"""The ``sacct`` path of ``gpuscope slurm collect`` (a cluster with accounting, no jobcomp file):
fake ``sacct``/``squeue``/no ``scontrol`` on PATH print known rows; the actual table's times,
nodes and states must be the ones worked out by hand from those rows."""

from __future__ import annotations

import json
import math
import stat
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest

from gpuscope.slurm.collect import _expand_brackets, actual_table, finished_ids, read_sacct
from gpuscope.slurm.submit import SUBMISSION

T0 = datetime(2026, 11, 24, 10, 0, 0).timestamp()
# JobID|State|Start|End|NodeList|ExitCode, as `sacct -n -P -X -o ...` prints them
SACCT = """101|COMPLETED|2026-11-24T10:00:10|2026-11-24T10:00:50|a100-[1-2]|0:0
102|CANCELLED by 1000|2026-11-24T10:00:20|2026-11-24T10:00:30|v100-1|0:15
103|RUNNING|2026-11-24T10:00:40|Unknown|v100-1|0:0
"""


def _tool(d: Path, name: str, body: str) -> None:
    p = d / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (tmp_path / "sacct.out").write_text(SACCT)
    # sacct answers only for the ids it is asked about (-j a,b,c is its 4th-5th argument)
    _tool(bin_, "sacct", f'echo "$@" >> {tmp_path}/sacct.args\n'
          f'for id in $(echo "$5" | tr , " "); do grep "^$id|" {tmp_path}/sacct.out; done\nexit 0\n')
    _tool(bin_, "squeue", "exit 0\n")  # finished jobs are no longer in squeue
    # scontrol deliberately absent: hostlists are expanded by gpuscope itself
    return {"PATH": f"{bin_}:/usr/bin:/bin"}


def _submission(d: Path) -> tuple[dict, pd.DataFrame]:
    sub = pd.DataFrame({
        "job_id": ["j0", "j1", "j2"], "slurm_job_id": ["101", "102", "103"],
        "node": ["a100-1;a100-2", "v100-1", "v100-1"], "gpus": [8, 1, 1],
        "gpu_type": ["a100", "v100", "v100"], "arrival_s": [0.0, 5.0, 5.0],
        "start_s": [10.0, 20.0, 40.0], "finish_s": [50.0, 30.0, 90.0]})
    sub.to_csv(d / "slurm_jobs.csv", index=False)
    meta = {"plan": "p", "record": "slurm_jobs.csv", "t0_epoch": T0, "time_scale": 2.0,
            "jobcomp": None}
    (d / SUBMISSION).write_text(json.dumps(meta))
    return meta, sub


def test_read_sacct_parses_states_and_skips_missing(env: dict[str, str]) -> None:
    rows = read_sacct(["101", "102", "999"], env)
    assert set(rows) == {"101", "102"}
    assert rows["102"]["JobState"] == "CANCELLED"  # "CANCELLED by 1000" -> its first word
    assert rows["101"]["NodeList"] == "a100-[1-2]"
    assert read_sacct([], env) == {}
    assert read_sacct(["101"], {"PATH": "/nonexistent"}) == {}  # no sacct: empty, not a crash


def test_actual_table_from_sacct(tmp_path: Path, env: dict[str, str]) -> None:
    meta, sub = _submission(tmp_path)
    act = actual_table(meta, sub, tmp_path, env).set_index("job_id")
    # 101: started 10 s, ended 50 s after t0 -> plan seconds 5 and 25 at time scale 2
    assert act.loc["j0", "start_s"] == pytest.approx(5.0)
    assert act.loc["j0", "finish_s"] == pytest.approx(25.0)
    assert act.loc["j0", "jct_s"] == pytest.approx(25.0)
    assert act.loc["j0", "status"] == "ok"
    assert act.loc["j0", "node"] == "a100-1;a100-2"  # expanded without scontrol = as planned
    assert act.loc["j1", "status"] == "cancelled"
    assert act.loc["j1", "finish_s"] == pytest.approx(15.0)
    assert act.loc["j2", "slurm_state"] == "RUNNING"  # not final: no finish time
    assert math.isnan(act.loc["j2", "finish_s"]) and act.loc["j2", "start_s"] == 20.0


def test_finished_ids_asks_sacct_only_for_unfinished(tmp_path: Path, env: dict[str, str]) -> None:
    meta, _ = _submission(tmp_path)
    assert finished_ids(meta, ["101", "102", "103"], env) == {"101", "102"}
    args = (tmp_path / "sacct.args").read_text().split()
    assert "101,102,103" in args and "-X" in args


def test_expand_brackets() -> None:
    assert _expand_brackets("a100-[1-2,4],v100-1") == ["a100-1", "a100-2", "a100-4", "v100-1"]
    assert _expand_brackets("n[08-10]") == ["n08", "n09", "n10"]
    assert _expand_brackets("bad[x-y]") == ["bad[x-y]"]

