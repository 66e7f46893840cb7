"""JobSpec and its validation (the catalog's names: ``gpuscope.jobs.catalog``, re-exported here;
queue I/O: ``gpuscope.jobs.queue``; datasets: ``gpuscope.jobs.datasets``).

A job is a model, a dataset, an optimizer, a batch size and a number of epochs (seed 001
Tables 3–4). ``steps_per_epoch`` shortens a run for profiling; left unset it is the dataset's
size divided by the batch size. A job may carry a user-supplied graph file instead of a
catalog model, and scheduling fields (arrival, due date, tardiness weight).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from gpuscope.core.errors import InputError
from gpuscope.jobs.catalog import (  # noqa: F401  (re-exported: the job catalog's names)
    LLAMA_PARAMS,
    MODEL_ANY_KIND,
    MODEL_DATASETS,
    MODEL_FAMILY,
    MODELS,
    OPTIMIZERS,
    PRECISIONS,
    TABLE3_CNNS,
    TABLE3_GENERATIVE,
    TABLE4_CNNS,
    TABLE4_GENERATIVE,
    TABLE_BATCH_SIZES,
    TABLE_EPOCHS,
    TABLE_OPTIMIZERS,
    TRANSFORMERS,
    model_params,
)
from gpuscope.jobs.datasets import (  # noqa: F401  (re-exported: the job catalog's datasets)
    DATASET_KINDS,
    DATASET_PARAMS,
    DATASETS,
    DatasetSpec,
    parse_dataset,
    shape_dataset,
)


class FieldError(InputError):
    """An ``InputError`` about one job field (``field``), so queue readers can name it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def module_file(module: str) -> str | None:
    """The file of a ``path/to/file.py:factory`` module source, or None for an importable
    ``package.module:factory`` (the one rule the loader, the queue reader and the digest use)."""
    target = module.rpartition(":")[0]
    return target if target.endswith(".py") or "/" in target or "\\" in target else None


def module_problem(module: str) -> str | None:
    """Why the factory of a ``path/to/file.py:factory`` source cannot be there, found without
    running the file: it does not exist, is not Python, or binds no top-level ``factory``
    (def, class, assignment or import, also under a top-level ``if``/``try``). None when it
    may be there, and for ``package.module:factory`` sources (finding those imports code)."""
    path = module_file(module)
    if path is None:
        return None
    p = Path(path)
    if not p.is_file():
        return f"module file {path} does not exist"
    st = p.stat()
    return _factory_problem(str(p), module.rpartition(":")[2], st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=256)
def _factory_problem(path: str, factory: str, mtime_ns: int, size: int) -> str | None:
    """:func:`module_problem` of one file version (memoised: a queue repeats its modules)."""
    import ast
    import difflib

    try:
        tree = ast.parse(Path(path).read_bytes(), filename=path)
    except SyntaxError as e:
        return f"module file {path} is not valid Python: {e.msg} (line {e.lineno})"
    except (OSError, ValueError) as e:
        return f"module file {path} cannot be read: {e}"
    names: set[str] = set()
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            todo += [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", []),
                     *(s for h in getattr(node, "handlers", []) for s in h.body)]
    if factory in names or names & {"*", "__getattr__"}:
        return None
    close = difflib.get_close_matches(factory, sorted(names), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"module file {path} defines no {factory!r}{hint}"


def source_model_name(module: str | None = None, hf: str | None = None) -> str:
    """Default model name of a ``module`` or ``hf`` source: ``examples/my_model.py:build`` ->
    ``my_model.build``; ``gpt2:n_layer=36`` -> ``hf-gpt2``; ``cfg/config.json`` -> ``hf-cfg``."""
    if module:
        path, _, factory = module.rpartition(":")
        stem = Path(path).stem if path.endswith(".py") else path.rsplit(".", 1)[-1]
        return f"{stem}.{factory}"
    if hf:
        if hf.endswith(".json"):
            p = Path(hf)
            return f"hf-{p.parent.name or p.stem}" if p.stem == "config" else f"hf-{p.stem}"
        return f"hf-{hf.split(':', 1)[0].strip()}"
    raise InputError("a model source needs a module or an hf architecture")


def source_digest(module: str | None = None, hf: str | None = None) -> str:
    """sha1 of a model source: its spelling plus the bytes of the file it names (the module's
    ``.py`` file, found without importing it, or the HF ``config.json``), so an edited model
    saved under the same name gets a new graph key, hence a new cache entry and prediction."""
    src = str(module or hf or "")
    path: Path | None = None
    if module:
        target = module.rpartition(":")[0]
        if module_file(module) is not None:
            path = Path(target)
        else:
            import importlib.util

            try:
                spec = importlib.util.find_spec(target)
            except (ImportError, ValueError):
                spec = None
            path = Path(spec.origin) if spec is not None and spec.origin else None
    elif hf and hf.endswith(".json"):
        path = Path(hf)
    content = b""
    if path is not None and path.is_file():
        st = path.stat()
        content = _file_digest(str(path.resolve()), st.st_mtime_ns, st.st_size).encode()
    return hashlib.sha1(src.encode() + b"\0" + content).hexdigest()


@functools.lru_cache(maxsize=256)
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    """sha1 of a file's bytes (memoised per path, mtime and size)."""
    return hashlib.sha1(Path(path).read_bytes()).hexdigest()


def _slug(text: str) -> str:
    """File-name-safe form of a parametric dataset name (``tokens:seq=1024`` -> ``tokens_seq1024``)."""
    return re.sub(r"[^A-Za-z0-9_.]+", "_", text.replace("=", ""))


@dataclass(frozen=True)
class JobSpec:
    """One training job.

    Attributes:
        model: catalog model name (``MODELS``), or any name when ``graph``, ``module`` or
            ``hf`` gives the model.
        dataset: a ``DATASETS`` name or a parametric string (``tokens:seq=512,vocab=30522``,
            see ``parse_dataset``); stored in canonical form.
        optimizer: one of ``OPTIMIZERS``.
        batch_size: samples per forward/backward pass (micro-batch), > 0.
        epochs: passes over the data, > 0.
        steps_per_epoch: optional override (short profiling runs); default dataset size /
            (batch_size x grad_accum) optimizer steps.
        framework: framework the job is written in (``pytorch`` or ``tensorflow``).
        graph: optional path to a user-supplied graph file (JSON, .pb, .pbtxt).
        arrival_s: submission time in seconds from the start of a queue.
        due_s: optional due date in seconds (cost-aware schedulers).
        weight: tardiness weight.
        job_id: identifier within a queue; assigned by the queue readers when absent.
        precision: ``fp32``, ``tf32``, ``amp-fp16`` or ``amp-bf16`` (``PRECISIONS``).
        grad_accum: micro-batches per optimizer step (gradient accumulation), >= 1.
        module: ``path/to/file.py:factory`` or ``package.module:factory`` building the model.
        hf: Hugging Face architecture ``ARCH[:key=value,...]`` or a ``config.json`` path.
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
    precision: str = "fp32"
    grad_accum: int = 1
    module: str | None = None
    hf: str | None = None

    def __post_init__(self) -> None:
        try:
            name, spec = parse_dataset(self.dataset)
        except InputError as e:
            raise FieldError("dataset", str(e)) from None
        object.__setattr__(self, "dataset", name)  # canonical form: equal datasets, equal keys
        if self.optimizer not in OPTIMIZERS:
            raise FieldError("optimizer",
                f"unknown optimizer {self.optimizer!r}; expected one of {', '.join(OPTIMIZERS)}"
            )
        if self.precision not in PRECISIONS:
            raise FieldError("precision",
                f"unknown precision {self.precision!r}; expected one of {', '.join(PRECISIONS)}"
            )
        sources = [k for k in ("graph", "module", "hf") if getattr(self, k) is not None]
        if len(sources) > 1:
            raise FieldError("model", f"a job takes one model source, got {' and '.join(sources)}")
        if self.module is not None and (":" not in self.module or not self.module.rpartition(":")[2]):
            raise FieldError("module",
                f"module {self.module!r}: expected path/to/file.py:factory or package.module:factory"
            )
        if not sources:
            base, mparams = model_params(self.model)
            if mparams:  # canonical: only the keys that differ from the defaults, fixed order
                changed = [f"{k}={v}" for k, v in mparams.items() if v != LLAMA_PARAMS[k]]
                object.__setattr__(self, "model", f"{base}:{','.join(changed)}" if changed else base)
            if base not in MODEL_DATASETS:
                raise FieldError("model",
                    f"unknown model {self.model!r}; expected one of {', '.join(MODELS)} "
                    "(or give a graph file, a module or an hf architecture)"
                )
            if (self.dataset not in MODEL_DATASETS[base]
                    and spec.kind not in MODEL_ANY_KIND.get(base, ())):
                kinds = "".join(f" or any {k} dataset" for k in MODEL_ANY_KIND.get(base, ()))
                raise FieldError("dataset",
                    f"model {self.model!r} is defined for "
                    f"{'/'.join(MODEL_DATASETS[base])}{kinds}, not {self.dataset!r}"
                )
        elif not self.model:
            raise FieldError("model", "model name must not be empty")
        for name in ("batch_size", "epochs", "grad_accum"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise FieldError(name, f"{name} must be a positive integer, got {v!r}")
        spe = self.steps_per_epoch
        if spe is not None and (isinstance(spe, bool) or not isinstance(spe, int) or spe <= 0):
            raise FieldError("steps_per_epoch", f"steps_per_epoch must be a positive integer, got {spe!r}")
        if self.framework not in ("pytorch", "tensorflow"):
            raise FieldError("framework", f"unknown framework {self.framework!r}; expected pytorch or tensorflow")
        if not math.isfinite(self.arrival_s) or self.arrival_s < 0:
            raise FieldError("arrival_s", f"arrival_s must be a finite number >= 0, got {self.arrival_s!r}")
        if self.due_s is not None and not math.isfinite(self.due_s):
            raise FieldError("due_s", f"due_s must be finite, got {self.due_s!r}")
        if not math.isfinite(self.weight) or self.weight < 0:
            raise FieldError("weight", f"weight must be a finite number >= 0, got {self.weight!r}")

    # -- derived -----------------------------------------------------------------------------
    @property
    def dataset_spec(self) -> DatasetSpec:
        return parse_dataset(self.dataset)[1]

    @property
    def source(self) -> str:
        """Where the model comes from: ``catalog``, ``graph``, ``module`` or ``hf``."""
        for k in ("graph", "module", "hf"):
            if getattr(self, k) is not None:
                return k
        return "catalog"

    @property
    def samples_per_step(self) -> int:
        """Samples per optimizer step: batch_size x grad_accum."""
        return self.batch_size * self.grad_accum

    @property
    def steps(self) -> int:
        """Optimizer steps per epoch actually run: the override, else
        ceil(dataset size / (batch_size x grad_accum))."""
        if self.steps_per_epoch is not None:
            return self.steps_per_epoch
        return math.ceil(self.dataset_spec.train_size / self.samples_per_step)

    @property
    def total_steps(self) -> int:
        return self.steps * self.epochs

    @property
    def graph_key(self) -> str:
        """Key of the job's computational graph: it depends on model (and its source),
        dataset, optimizer, batch size, precision and gradient accumulation, not on epochs or
        the device (design.md, Encoded graph). Catalog fp32 jobs keep their historic keys."""
        if self.graph:
            base = Path(self.graph).stem
        elif self.module or self.hf:
            base = f"{self.model}.{source_digest(self.module, self.hf)[:8]}"
        else:
            base = _slug(self.model)
        key = f"{base}-{_slug(self.dataset)}-{self.optimizer}-b{self.batch_size}"
        if self.precision != "fp32":
            key += f"-{self.precision}"
        if self.grad_accum != 1:
            key += f"-ga{self.grad_accum}"
        return key

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
            raise FieldError(unknown[0], f"unknown job field(s): {', '.join(unknown)}")
        d = dict(d)
        src = {k: str(d[k]).strip() for k in ("module", "hf") if d.get(k) not in (None, "")}
        if src and d.get("model") in (None, ""):
            d["model"] = source_model_name(src.get("module"), src.get("hf"))
        missing = [k for k in ("model", "dataset", "optimizer", "batch_size", "epochs") if k not in d]
        if missing:
            raise FieldError(missing[0], f"job is missing field(s): {', '.join(missing)}")
        kw: dict[str, Any] = {}
        for k, v in d.items():
            if isinstance(v, str):
                v = v.strip()
                if v == "" and k not in ("model", "dataset", "optimizer"):
                    continue
            if k in ("batch_size", "epochs", "steps_per_epoch", "grad_accum"):
                kw[k] = _to_int(k, v)
            elif k in ("arrival_s", "due_s", "weight"):
                kw[k] = _to_float(k, v)
            elif k in ("model", "optimizer", "framework", "precision"):
                kw[k] = str(v).strip().lower()
            elif k == "dataset":
                kw[k] = str(v).strip()
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
        raise FieldError(name, f"{name} must be an integer, got {v!r}") from None
    if not f.is_integer():
        raise FieldError(name, f"{name} must be an integer, got {v!r}")
    return int(f)


def _to_float(name: str, v: Any) -> float | None:
    if v is None:
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        raise FieldError(name, f"{name} must be a number, got {v!r}") from None


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
                for opt in TABLE_OPTIMIZERS:
                    for bs in TABLE_BATCH_SIZES:
                        for ep in TABLE_EPOCHS:
                            jobs.append(JobSpec(m, ds, opt, bs, ep, steps_per_epoch=steps_per_epoch))
    from gpuscope.jobs.queue import assign_ids

    return assign_ids(jobs)

