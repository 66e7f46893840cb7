"""JobSpec validation, derived keys, queue I/O, and the seed 001 job tables."""

from __future__ import annotations

import json

import pytest

from gpuscope.core.errors import InputError
from gpuscope.jobs.queue import read_queue, write_queue
from gpuscope.jobs.spec import JobSpec, table_jobs


def test_steps_default_is_dataset_size_over_batch() -> None:
    j = JobSpec("resnet20", "cifar10", "sgd", 64, 10)
    assert j.steps == 782  # ceil(50_000 / 64)
    assert j.total_steps == 7820
    assert JobSpec("resnet20", "cifar10", "sgd", 64, 10, steps_per_epoch=5).total_steps == 50


def test_graph_key_ignores_epochs_and_key_does_not() -> None:
    a = JobSpec("vgg16", "imagenet", "adam", 32, 10)
    b = JobSpec("vgg16", "imagenet", "adam", 32, 20)
    assert a.graph_key == b.graph_key == "vgg16-imagenet-adam-b32"
    assert a.key != b.key


@pytest.mark.parametrize(
    "kw, needle",
    [
        (dict(model="nope"), "unknown model 'nope'"),
        (dict(dataset="svhn"), "unknown dataset 'svhn'"),
        (dict(optimizer="lamb"), "unknown optimizer 'lamb'"),
        (dict(batch_size=0), "batch_size must be >= 1"),
        (dict(epochs=-1), "epochs must be >= 1"),
        (dict(batch_size=True), "batch_size must be an integer"),
        (dict(batch_size=10**30), "batch_size must be <= 2147483647"),
        (dict(arrival_s=1e300), "arrival_s must be <= 1e\\+12"),
        (dict(job_id="j" * 300), "job_id is 300 characters long"),
        (dict(model=3), "model must be text"),
        (dict(steps_per_epoch=0), "steps_per_epoch"),
        (dict(model="dcgan"), "defined for mnist"),
        (dict(weight=-1.0), "weight"),
    ],
)
def test_bad_jobs_raise_one_clear_error(kw: dict, needle: str) -> None:
    base = dict(model="resnet50", dataset="imagenet", optimizer="sgd", batch_size=8, epochs=1)
    with pytest.raises(InputError, match=needle):
        JobSpec(**{**base, **kw})


def test_user_graph_allows_any_model_name() -> None:
    j = JobSpec("mynet", "cifar10", "sgd", 8, 1, graph="graphs/mynet.pbtxt")
    assert j.graph_key == "mynet-cifar10-sgd-b8"


def test_from_dict_converts_strings_and_rejects_unknown_fields() -> None:
    j = JobSpec.from_dict({"model": "LeNet", "dataset": "cifar10", "optimizer": "SGD",
                           "batch_size": "16", "epochs": "2.0", "due_s": ""})
    assert (j.model, j.optimizer, j.batch_size, j.epochs, j.due_s) == ("lenet", "sgd", 16, 2, None)
    with pytest.raises(InputError, match="unknown job field"):
        JobSpec.from_dict({"model": "lenet", "dataset": "cifar10", "optimizer": "sgd",
                           "batch_size": 1, "epochs": 1, "colour": "red"})
    with pytest.raises(InputError, match="batch_size must be an integer"):
        JobSpec.from_dict({"model": "lenet", "dataset": "cifar10", "optimizer": "sgd",
                           "batch_size": "8.5", "epochs": 1})


@pytest.mark.parametrize("ext", [".csv", ".json"])
def test_queue_round_trip(tmp_path, ext: str) -> None:
    jobs = [
        JobSpec("resnet50", "imagenet", "adam", 32, 10, arrival_s=60.0, due_s=3600.0, weight=0.01),
        JobSpec("gan", "mnist", "sgd", 8, 20, steps_per_epoch=100),
    ]
    path = write_queue(jobs, tmp_path / f"q{ext}")
    back = read_queue(path)
    assert [j.job_id for j in back] == ["j000", "j001"]
    assert [j.with_(job_id=None) for j in back] == jobs


def test_queue_errors_name_the_job(tmp_path) -> None:
    p = tmp_path / "q.json"
    p.write_text(json.dumps([{"model": "resnet50", "dataset": "imagenet", "optimizer": "sgd",
                              "batch_size": 8, "epochs": 0}]))
    with pytest.raises(InputError, match="row 1, field 'epochs': epochs must be >= 1"):
        read_queue(p)
    p.write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        read_queue(p)
    with pytest.raises(InputError, match="cannot read job queue"):
        read_queue(tmp_path / "missing.csv")
    with pytest.raises(InputError, match="unsupported extension"):
        read_queue(tmp_path / "q.txt")


def test_seed001_tables_have_the_papers_sizes() -> None:
    t3 = table_jobs(3)
    # 12 CNNs x 2 datasets x 2 optimizers x 4 batch sizes x 2 epochs + 3 GANs x 1 x 2 x 4 x 2
    assert len(t3) == 12 * 2 * 2 * 4 * 2 + 3 * 2 * 4 * 2 == 432
    assert len({j.key for j in t3}) == 432
    t4 = table_jobs(4)
    assert len(t4) == 3 * 2 * 2 * 4 * 2 + 1 * 2 * 4 * 2 == 112
    assert {j.model for j in t4} == {"trivial", "alexnet", "resnet32", "gan"}
