"""Others' data: the project's measured tables, Gavel's throughputs in its own structure, and
the larger files read by path (one error line when absent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuscope.core.data import external_path, gavel_throughputs, gavel_trace, measured_table
from gpuscope.core.errors import InputError

SOURCES = {"stanford-futuredata/gavel", "ai-sprint-eu-project/GPUScheduler"}


@pytest.mark.parametrize("name", ["gavel-throughputs", "gavel-colocations", "gpuscheduler-alexnet",
                                  "gpuscheduler-vm-costs", "andreas-jobs", "andreas-node-costs"])
def test_every_row_cites_its_source(name: str) -> None:
    t = measured_table(name)
    assert len(t) > 0
    assert set(t["source_repo"]) <= SOURCES and t["source_commit"].str.fullmatch("[0-9a-f]{40}").all()
    assert t["source_file"].notna().all()


def test_gavel_structure_from_the_tables() -> None:
    th, co = measured_table("gavel-throughputs"), measured_table("gavel-colocations")
    d = gavel_throughputs()
    assert list(d) == ["k80", "p100", "v100"]
    assert sum(len(v) for v in d.values()) == len(th)
    r = th.iloc[0]
    assert d[r.device][f"('{r.job_type}', {r.n_gpus})"]["null"] == r.steps_per_s
    c = co.iloc[0]
    pair = d[c.device][f"('{c.job_type}', 1)"][f"('{c.co_job_type}', 1)"]
    assert pair == [c.steps_per_s, c.co_steps_per_s]
    # every job type has its identical pair (the emulator's time-slicing calibration)
    single = th[th.n_gpus == 1]
    same = co[co.job_type == co.co_job_type]
    assert len(same) == len(single)


def test_gavel_json_given_by_path(tmp_path: Path) -> None:
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"k80": {"('A3C', 1)": {"null": 2.5}}}))
    assert gavel_throughputs(f) == {"k80": {"('A3C', 1)": {"null": 2.5}}}
    with pytest.raises(InputError, match="cannot read Gavel's throughputs"):
        gavel_throughputs(tmp_path / "missing.json")


def test_larger_files_are_read_by_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUSCOPE_DATA", str(tmp_path))
    with pytest.raises(InputError, match="set GPUSCOPE_DATA") as e:
        gavel_trace("6c71a0")
    assert str(tmp_path / "gavel" / "msr-traces-seed0" / "6c71a0.trace") in str(e.value)
    (tmp_path / "gavel" / "msr-traces-seed0").mkdir(parents=True)
    (tmp_path / "gavel" / "msr-traces-seed0" / "6c71a0.trace").write_text("")
    assert gavel_trace("6c71a0") == tmp_path / "gavel" / "msr-traces-seed0" / "6c71a0.trace"
    assert external_path("gavel", what="Gavel's data") == tmp_path / "gavel"
