"""The job-queue format: one pydantic model, its JSON Schema in the docs, the
template, and errors that name the row and the field."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from gpuscope.cli import main
from gpuscope.core.errors import InputError
from gpuscope.jobs.catalog import OPTIMIZERS, PRECISIONS
from gpuscope.jobs.queue import read_queue
from gpuscope.jobs.schema import JobRow, queue_json_schema, template_jobs
from gpuscope.jobs.spec import JobSpec

DOC = Path(__file__).resolve().parents[1] / "docs" / "queue.md"


def test_schema_model_has_exactly_the_jobspec_fields() -> None:
    assert list(JobRow.model_fields) == [f.name for f in dataclasses.fields(JobSpec)]
    props = queue_json_schema()["$defs"]["JobRow"]["properties"]
    assert props["optimizer"]["enum"] == list(OPTIMIZERS)  # the catalog's, not a copy
    assert props["precision"]["enum"] == list(PRECISIONS)
    assert props["batch_size"]["minimum"] == 1 and props["weight"]["default"] == 1.0
    assert queue_json_schema()["$defs"]["JobRow"]["required"] == [
        "dataset", "optimizer", "batch_size", "epochs"]


def test_docs_hold_the_current_schema() -> None:
    block = re.search(r"```json\n(.*?)\n```", DOC.read_text(), re.S)
    assert block is not None
    assert json.loads(block.group(1)) == queue_json_schema()


def test_template_round_trip_and_schema_validation(tmp_path, capsys) -> None:
    for ext in ("csv", "json"):
        out = tmp_path / f"q.{ext}"
        assert main(["jobs", "template", "-o", str(out)]) == 0
        jobs = read_queue(out)
        assert [j.job_id for j in jobs] == [j.job_id for j in template_jobs()]
        assert {j.source for j in jobs} == {"catalog", "module", "hf"}
    rows = json.loads((tmp_path / "q.json").read_text())
    for r in rows:  # the written JSON queue validates against the pydantic model
        JobRow.model_validate(r)
    with pytest.raises(ValidationError):
        JobRow.model_validate({**rows[0], "batch_size": 0})
    with pytest.raises(ValidationError):
        JobRow.model_validate({**rows[0], "colour": "red"})
    assert main(["jobs", "template", "-o", str(tmp_path / "q.csv")]) == 2  # no overwrite
    capsys.readouterr()
    assert main(["jobs", "check", str(tmp_path / "q.csv")]) == 0
    assert "4 jobs OK" in capsys.readouterr().out


def test_template_runs_from_any_folder_and_keeps_an_edited_module(tmp_path, capsys) -> None:
    """The template's module job names a copy of the example next to the queue, so it reads
    and traces outside the repository; an existing copy is never overwritten."""
    from gpuscope.jobs.schema import EXAMPLE_MODULE

    out = tmp_path / "elsewhere" / "q.csv"
    assert main(["jobs", "template", "-o", str(out)]) == 0
    copy = out.parent / "my_model.py"
    assert copy.read_text() == EXAMPLE_MODULE.read_text()
    job = next(j for j in read_queue(out) if j.source == "module")
    assert job.module == f"{copy}:build"  # resolved next to the queue file
    from gpuscope.workloads.sources import load_factory
    assert callable(load_factory(job.module))
    bad = tmp_path / "bad" / "q.txt"
    assert main(["jobs", "template", "-o", str(bad)]) == 2
    assert not (bad.parent / "my_model.py").exists()  # nothing written for a refused output
    copy.write_text("# edited\n")
    assert main(["jobs", "template", "-o", str(out.with_suffix(".json"))]) == 0
    assert copy.read_text() == "# edited\n" and "kept as it was" in capsys.readouterr().out


def test_check_names_a_missing_module_file(tmp_path, capsys) -> None:
    q = tmp_path / "q.csv"
    q.write_text("job_id,model,dataset,optimizer,batch_size,epochs,module\n"
                 "a,resnet50,imagenet,sgd,8,1,\n"
                 "b,,tokens,adamw,8,1,models/nope.py:build\n"
                 "c,,tokens,adamw,8,1,other/gone.py:build\n")
    assert main(["jobs", "check", str(q)]) == 2
    err = capsys.readouterr().err
    assert "job b: module file models/nope.py does not exist (and 1 more)" in err
    assert err.count("\n") == 1  # one line


@pytest.mark.parametrize("row, needle", [
    ("a,resnet50,imagenet,sgd,0,1", "row 2 (line 3) job_id a, field 'batch_size'"),
    ("a,resnet50,imagenet,lamb,8,1", "row 2 (line 3) job_id a, field 'optimizer'"),
    ("a,resnet50,svhn,sgd,8,1", "field 'dataset': unknown dataset 'svhn'"),
    ("a,nope,imagenet,sgd,8,1", "field 'model'"),
    ("a,resnet50,imagenet,sgd,8,x", "field 'epochs': epochs must be an integer"),
    (",gpt2,imagenet,adam,8,1", "row 2 (line 3), field 'dataset': model 'gpt2' is defined for"),
])
def test_errors_name_row_and_field(tmp_path, row: str, needle: str) -> None:
    q = tmp_path / "q.csv"
    q.write_text("job_id,model,dataset,optimizer,batch_size,epochs\n"
                 "ok,resnet20,cifar10,adam,8,1\n" + row + "\n")
    with pytest.raises(InputError) as e:
        read_queue(q)
    assert needle in str(e.value)


def test_json_errors_name_row_and_unknown_field(tmp_path) -> None:
    q = tmp_path / "q.json"
    q.write_text(json.dumps([{"model": "lenet", "dataset": "mnist", "optimizer": "sgd",
                              "batch_size": 8, "epochs": 1, "colour": "red"}]))
    with pytest.raises(InputError, match=r"row 1, field 'colour': unknown job field"):
        read_queue(q)


def test_relative_module_paths_resolve_next_to_the_queue(tmp_path, monkeypatch) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "net.py").write_text("from torch import nn\ndef build():\n"
                                             "    return nn.Linear(4, 2)\n")
    q = tmp_path / "sub" / "q.csv"
    q.write_text("module,dataset,optimizer,batch_size,epochs\n"
                 "net.py:build,tabular:features=4,adam,2,1\n")
    monkeypatch.chdir(tmp_path)
    (job,) = read_queue(q)
    assert job.module == f"{tmp_path / 'sub' / 'net.py'}:build"
