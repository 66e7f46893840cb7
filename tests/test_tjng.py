"""gpuscope.core.tjng: the t_jng contract and the reference instance folder."""

from __future__ import annotations

import filecmp
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpuscope.core.errors import InputError
from gpuscope.core.tjng import (
    JOBS_FILE,
    NODES_FILE,
    TIMES_FILE,
    TJNG_COLUMNS,
    catalog_from_tjng,
    instance_jobs_meta,
    instance_to_tjng,
    read_instance,
    read_tjng,
    tjng_to_instance,
    validate_tjng,
    write_instance,
    write_tjng,
)

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "reference-instance"


def _tjng() -> pd.DataFrame:
    return pd.DataFrame({
        "job_id": ["a", "a", "a", "b"], "node_type": ["K80", "K80", "M60", "K80"],
        "n_gpus": [1, 2, 1, 1], "exec_time_s": [100.0, 60.0, 90.0, 50.0],
        "cost_per_h": [0.56, 1.13, 0.62, 0.56], "source": "test",
    })


def test_validate_normalises_and_sorts() -> None:
    t = validate_tjng(_tjng().iloc[::-1])
    assert list(t.columns) == list(TJNG_COLUMNS)
    assert list(t.job_id) == ["a", "a", "a", "b"] and t.n_gpus.dtype == np.int64


@pytest.mark.parametrize("change, msg", [
    (lambda d: d.drop(columns="cost_per_h"), "missing column"),
    (lambda d: d.iloc[:0], "no rows"),
    (lambda d: d.assign(n_gpus=[1, 0, 1, 1]), "n_gpus"),
    (lambda d: d.assign(n_gpus=[1, 1.5, 1, 1]), "n_gpus"),
    (lambda d: d.assign(exec_time_s=[1.0, -2.0, 1.0, 1.0]), "exec_time_s"),
    (lambda d: d.assign(exec_time_s=[1.0, np.inf, 1.0, 1.0]), "finite"),
    (lambda d: d.assign(cost_per_h=[1.0, -1.0, 1.0, 1.0]), "cost_per_h"),
    (lambda d: d.assign(n_gpus=[1, 1, 1, 1]), "duplicated"),
    (lambda d: d.assign(job_id=["a", "", "a", "b"]), "empty"),
])
def test_validate_rejects(change, msg) -> None:
    with pytest.raises(InputError, match=msg):
        validate_tjng(change(_tjng()))


def test_tjng_file_round_trip(tmp_path: Path) -> None:
    for name in ("t.csv", "t.parquet"):
        write_tjng(_tjng(), tmp_path / name)
        pd.testing.assert_frame_equal(read_tjng(tmp_path / name), validate_tjng(_tjng()))
    with pytest.raises(InputError, match="unsupported"):
        write_tjng(_tjng(), tmp_path / "t.txt")


def test_example_instance_reads_and_writes_back_byte_for_byte(tmp_path: Path) -> None:
    inst = read_instance(EXAMPLE)
    assert inst.nodes == ["n1", "n2"] and len(inst.jobs) == 3 and len(inst.times) == 18
    write_instance(inst, tmp_path)
    for f in (JOBS_FILE, TIMES_FILE, NODES_FILE):
        assert filecmp.cmp(EXAMPLE / f, tmp_path / f, shallow=False), f


def test_tjng_instance_conversions_round_trip() -> None:
    inst = read_instance(EXAMPLE)
    t = instance_to_tjng(inst)
    # J1_0 on K80 x2: 45825.89 s, cheapest K80 VM with 2 GPUs is NC12 at 1.13 $/h
    row = t[(t.job_id == "J1_0") & (t.node_type == "K80") & (t.n_gpus == 2)].iloc[0]
    assert row.exec_time_s == 45825.89 and row.cost_per_h == 1.13
    back = tjng_to_instance(t, instance_jobs_meta(inst), vm_catalog=inst.catalog(), n_nodes=2)
    pd.testing.assert_frame_equal(back.times, inst.times, check_dtype=False)
    assert np.allclose(back.jobs.MinExecTime, inst.jobs.MinExecTime)
    assert np.allclose(back.jobs.MaxExecTime, inst.jobs.MaxExecTime)


def test_tjng_to_instance_default_catalog() -> None:
    meta = pd.DataFrame({"job_id": ["a", "b"], "submission_s": [0, 5], "due_s": [100, 200],
                         "weight": [0.01, 0.02]})
    cat = catalog_from_tjng(_tjng())
    assert set(cat.VMtype) == {"K80x1", "K80x2", "M60x1"}
    inst = tjng_to_instance(_tjng(), meta, n_nodes=3)
    # K80x2 offers g = 1 and 2 for job a: rows a/K80x1/1, a/K80x2/1, a/K80x2/2, a/M60x1/1, b/K80x1/1, b/K80x2/1
    assert len(inst.times) == 6 and inst.nodes == ["n1", "n2", "n3"]
    assert inst.jobs.set_index("UniqueJobsID").loc["a", "MinExecTime"] == 60.0


@pytest.mark.parametrize("file, text, msg", [
    (NODES_FILE, "Node\nn1\n", "header"),
    (TIMES_FILE, "UniqueJobsID,VMtype\nJ1_0,x\n", "missing column"),
    (JOBS_FILE, None, "missing file"),
])
def test_malformed_instance_one_line_error(tmp_path: Path, file, text, msg) -> None:
    for f in EXAMPLE.iterdir():
        shutil.copyfile(f, tmp_path / f.name)
    if text is None:
        (tmp_path / file).unlink()
    else:
        (tmp_path / file).write_text(text)
    with pytest.raises(InputError, match=msg) as e:
        read_instance(tmp_path)
    assert "\n" not in str(e.value)
