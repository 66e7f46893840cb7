"""JobSpec, the workload catalog's names, and job-queue I/O (CSV and JSON).

A job is a model, a dataset, an optimizer, a batch size and a number of epochs (seed 001
Tables 3–4). ``steps_per_epoch`` shortens a run for profiling; left unset it is the dataset's
size divided by the batch size. A job may carry a user-supplied graph file instead of a
catalog model, and scheduling fields (arrival, due date, tardiness weight).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from gpuscope.errors import InputError


@dataclass(frozen=True)
class DatasetSpec:
    """Shape and size of a training dataset (synthetic data with the real shapes)."""

    name: str
    channels: int
    height: int
    width: int
    num_classes: int
    train_size: int

    @property
    def sample_shape(self) -> tuple[int, int, int]:
        return (self.channels, self.height, self.width)


DATASETS: dict[str, DatasetSpec] = {
    "imagenet": DatasetSpec("imagenet", 3, 224, 224, 1000, 1_281_167),
    "cifar10": DatasetSpec("cifar10", 3, 32, 32, 10, 50_000),
    "mnist": DatasetSpec("mnist", 1, 28, 28, 10, 60_000),
}

OPTIMIZERS: tuple[str, ...] = ("sgd", "adam")

#: Seed 001 Table 3: the predictor's training workloads.
TABLE3_CNNS: tuple[str, ...] = (
    "vgg11", "vgg16", "vgg19", "lenet", "googlenet", "densenet40_k12", "densenet100_k12",
    "inception3", "inception4", "resnet20", "resnet50", "resnet101",
)
TABLE3_GENERATIVE: tuple[str, ...] = ("dcgan", "conditional_gan", "cvae")
#: Seed 001 Table 4: the scheduler's workload, models the predictor never sees in training.
TABLE4_CNNS: tuple[str, ...] = ("trivial", "alexnet", "resnet32")
TABLE4_GENERATIVE: tuple[str, ...] = ("gan",)
TABLE_BATCH_SIZES: tuple[int, ...] = (8, 16, 32, 64)
TABLE_EPOCHS: tuple[int, ...] = (10, 20)

#: model -> datasets it is defined for.
MODEL_DATASETS: dict[str, tuple[str, ...]] = {
    **{m: ("imagenet", "cifar10") for m in TABLE3_CNNS + TABLE4_CNNS},
    **{m: ("mnist",) for m in TABLE3_GENERATIVE + TABLE4_GENERATIVE},
}
MODELS: tuple[str, ...] = tuple(MODEL_DATASETS)

#: Model families, for the split that holds out whole families (seed 001 Table 4's idea).
MODEL_FAMILY: dict[str, str] = {
    "vgg11": "vgg", "vgg16": "vgg", "vgg19": "vgg", "lenet": "lenet", "googlenet": "inception",
    "inception3": "inception", "inception4": "inception", "densenet40_k12": "densenet",
    "densenet100_k12": "densenet", "resnet20": "resnet", "resnet32": "resnet",
    "resnet50": "resnet", "resnet101": "resnet", "dcgan": "gan", "conditional_gan": "gan",
    "gan": "gan", "cvae": "vae", "trivial": "trivial", "alexnet": "alexnet",
}


@dataclass(frozen=True)
class JobSpec:
    """One training job.

    Attributes:
        model: catalog model name (``MODELS``), or any name when ``graph`` is given.
        dataset: ``imagenet``, ``cifar10`` or ``mnist``.
        optimizer: ``sgd`` or ``adam``.
        batch_size: samples per step, > 0.
        epochs: passes over the data, > 0.
        steps_per_epoch: optional override (short profiling runs); default dataset size / batch.
        framework: framework the job is written in (``pytorch`` or ``tensorflow``).
        graph: optional path to a user-supplied graph file (JSON, .pb, .pbtxt).
        arrival_s: submission time in seconds from the start of a queue.
        due_s: optional due date in seconds (cost-aware schedulers).
        weight: tardiness weight.
        job_id: identifier within a queue; assigned by the queue readers when absent.
    """

    model: str
    dataset: str
    optimizer: str
    batch_size: int
    epochs: int
    steps_per_epoch: int | None = None
    framework: str = "pytorch"
    graph: str | None = None
    arrival_s: float = 0.0
    due_s: float | None = None
    weight: float = 1.0
    job_id: str | None = None

    def __post_init__(self) -> None:
        if self.dataset not in DATASETS:
            raise InputError(
                f"unknown dataset {self.dataset!r}; expected one of {', '.join(DATASETS)}"
            )
        if self.optimizer not in OPTIMIZERS:
            raise InputError(
                f"unknown optimizer {self.optimizer!r}; expected one of {', '.join(OPTIMIZERS)}"
            )
        if self.graph is None:
            if self.model not in MODEL_DATASETS:
                raise InputError(
                    f"unknown model {self.model!r}; expected one of {', '.join(MODELS)} "
                    "(or give a graph file)"
                )
            if self.dataset not in MODEL_DATASETS[self.model]:
                raise InputError(
                    f"model {self.model!r} is defined for "
                    f"{'/'.join(MODEL_DATASETS[self.model])}, not {self.dataset!r}"
                )
        for name in ("batch_size", "epochs"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise InputError(f"{name} must be a positive integer, got {v!r}")
        spe = self.steps_per_epoch
        if spe is not None and (isinstance(spe, bool) or not isinstance(spe, int) or spe <= 0):
            raise InputError(f"steps_per_epoch must be a positive integer, got {spe!r}")
        if self.framework not in ("pytorch", "tensorflow"):
            raise InputError(f"unknown framework {self.framework!r}; expected pytorch or tensorflow")
        if not math.isfinite(self.arrival_s) or self.arrival_s < 0:
            raise InputError(f"arrival_s must be a finite number >= 0, got {self.arrival_s!r}")
        if self.due_s is not None and not math.isfinite(self.due_s):
            raise InputError(f"due_s must be finite, got {self.due_s!r}")
        if not math.isfinite(self.weight) or self.weight < 0:
            raise InputError(f"weight must be a finite number >= 0, got {self.weight!r}")

    # -- derived -----------------------------------------------------------------------------
    @property
    def dataset_spec(self) -> DatasetSpec:
        return DATASETS[self.dataset]

    @property
    def steps(self) -> int:
        """Steps per epoch actually run: the override, else ceil(dataset size / batch)."""
        if self.steps_per_epoch is not None:
            return self.steps_per_epoch
        return math.ceil(self.dataset_spec.train_size / self.batch_size)

    @property
    def total_steps(self) -> int:
        return self.steps * self.epochs

    @property
    def graph_key(self) -> str:
        """Key of the job's computational graph: it depends on model, dataset, optimizer and
        batch size, not on epochs or the device (design.md, Encoded graph)."""
        base = Path(self.graph).stem if self.graph else self.model
        return f"{base}-{self.dataset}-{self.optimizer}-b{self.batch_size}"

    @property
    def key(self) -> str:
        """Key of the run configuration: graph key plus epochs and steps per epoch."""
        spe = f"-s{self.steps_per_epoch}" if self.steps_per_epoch is not None else ""
        return f"{self.graph_key}-e{self.epochs}{spe}"

    def with_(self, **changes: Any) -> JobSpec:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> JobSpec:
        """Build from a mapping (JSON object, CSV row); converts numeric strings, rejects
        unknown keys with one clear message."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise InputError(f"unknown job field(s): {', '.join(unknown)}")
        missing = [k for k in ("model", "dataset", "optimizer", "batch_size", "epochs") if k not in d]
        if missing:
            raise InputError(f"job is missing field(s): {', '.join(missing)}")
        kw: dict[str, Any] = {}
        for k, v in d.items():
            if isinstance(v, str):
                v = v.strip()
                if v == "" and k not in ("model", "dataset", "optimizer"):
                    continue
            if k in ("batch_size", "epochs", "steps_per_epoch"):
                kw[k] = _to_int(k, v)
            elif k in ("arrival_s", "due_s", "weight"):
                kw[k] = _to_float(k, v)
            elif k in ("model", "dataset", "optimizer", "framework"):
                kw[k] = str(v).strip().lower()
            else:
                kw[k] = None if v is None else str(v)
        return cls(**kw)

    @classmethod
    def from_json_file(cls, path: str | Path) -> JobSpec:
        try:
            d = json.loads(Path(path).read_text())
        except OSError as e:
            raise InputError(f"cannot read job file {path}: {e.strerror}") from None
        except json.JSONDecodeError as e:
            raise InputError(f"job file {path} is not valid JSON: {e.msg} (line {e.lineno})") from None
        if not isinstance(d, dict):
            raise InputError(f"job file {path} must hold one JSON object")
        return cls.from_dict(d)


def _to_int(name: str, v: Any) -> int | None:
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be an integer, got {v!r}") from None
    if not f.is_integer():
        raise InputError(f"{name} must be an integer, got {v!r}")
    return int(f)


def _to_float(name: str, v: Any) -> float | None:
    if v is None:
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number, got {v!r}") from None


# -- queues ----------------------------------------------------------------------------------
QUEUE_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(JobSpec))


def _assign_ids(jobs: Sequence[JobSpec]) -> list[JobSpec]:
    width = max(3, len(str(len(jobs))))
    out = [j if j.job_id else j.with_(job_id=f"j{i:0{width}d}") for i, j in enumerate(jobs)]
    ids = [j.job_id for j in out]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise InputError(f"duplicate job_id(s) in queue: {', '.join(map(str, dup[:5]))}")
    return out


def read_queue(path: str | Path) -> list[JobSpec]:
    """Read a job queue from ``.csv`` (one job a row, header = JobSpec fields) or ``.json``
    (a list of job objects, or ``{"jobs": [...]}``). Jobs without ``job_id`` get ``j000``…"""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".json"):
        raise InputError(f"job queue {path}: unsupported extension {suffix!r} (use .csv or .json)")
    try:
        text = path.read_text()
    except OSError as e:
        raise InputError(f"cannot read job queue {path}: {e.strerror}") from None
    rows: list[dict[str, Any]]
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"job queue {path} is not valid JSON: {e.msg} (line {e.lineno})") from None
        if isinstance(data, dict) and "jobs" in data:
            data = data["jobs"]
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise InputError(f"job queue {path} must be a JSON list of job objects")
        rows = data
    else:
        reader = csv.DictReader(text.splitlines())
        if not reader.fieldnames:
            raise InputError(f"job queue {path} is empty")
        rows = [dict(r) for r in reader]
    jobs = []
    for i, r in enumerate(rows):
        try:
            jobs.append(JobSpec.from_dict(r))
        except InputError as e:
            raise InputError(f"job queue {path}, job {i}: {e}") from None
    if not jobs:
        raise InputError(f"job queue {path} holds no jobs")
    return _assign_ids(jobs)


def write_queue(jobs: Iterable[JobSpec], path: str | Path) -> Path:
    """Write a queue as ``.csv`` or ``.json`` (chosen by the extension)."""
    path = Path(path)
    jobs = _assign_ids(list(jobs))
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".json":
        path.write_text(json.dumps([j.to_dict() for j in jobs], indent=1) + "\n")
    elif path.suffix.lower() == ".csv":
        with path.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(QUEUE_COLUMNS))
            w.writeheader()
            for j in jobs:
                w.writerow({k: ("" if v is None else v) for k, v in j.to_dict().items()})
    else:
        raise InputError(f"{path}: unsupported extension {path.suffix!r} (use .csv or .json)")
    return path


def table_jobs(table: int = 3, steps_per_epoch: int | None = None) -> list[JobSpec]:
    """The job matrix of seed 001 Table 3 (432 jobs) or Table 4 (128 jobs), in a fixed order."""
    if table == 3:
        cnns, gens = TABLE3_CNNS, TABLE3_GENERATIVE
    elif table == 4:
        cnns, gens = TABLE4_CNNS, TABLE4_GENERATIVE
    else:
        raise InputError(f"seed 001 has job tables 3 and 4, not {table}")
    jobs = []
    for models in (cnns, gens):
        for m in models:
            for ds in MODEL_DATASETS[m]:
                for opt in OPTIMIZERS:
                    for bs in TABLE_BATCH_SIZES:
                        for ep in TABLE_EPOCHS:
                            jobs.append(JobSpec(m, ds, opt, bs, ep, steps_per_epoch=steps_per_epoch))
    return _assign_ids(jobs)
