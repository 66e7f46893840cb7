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
import math
import re
from dataclasses import MISSING, asdict, dataclass, fields, replace
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
from gpuscope.jobs.fields import (  # noqa: F401  (FieldError re-exported)
    NUMBER_FIELDS,
    OPTIONAL,
    REQUIRED,
    SKIP,
    TEXT_FIELDS,
    FieldError,
    canonical_names,
    check_field,
    convert_field,
)


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
    if not p.exists():
        return f"module file {path} does not exist"
    st = p.stat()  # a folder, FIFO or device is named by the reader
    return _factory_problem(str(p), module.rpartition(":")[2], st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=256)
def _factory_problem(path: str, factory: str, mtime_ns: int, size: int) -> str | None:
    """:func:`module_problem` of one file version (memoised: a queue repeats its modules)."""
    import ast
    import difflib

    from gpuscope.core.io import read_bytes

    try:
        tree = ast.parse(read_bytes(path, "module file"), filename=path)
    except SyntaxError as e:
        return f"module file {path} is not valid Python: {e.msg} (line {e.lineno})"
    except ValueError as e:  # a special, huge or unreadable file; NUL bytes
        return str(e) if isinstance(e, InputError) else f"module file {path} cannot be read: {e}"
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
    from gpuscope.core.io import read_bytes

    return hashlib.sha1(read_bytes(path, "model source file")).hexdigest()


@functools.lru_cache(maxsize=4096)
def _slug(text: str) -> str:
    """File-name-safe form of a parametric dataset name (``tokens:seq=1024`` -> ``tokens_seq1024``;
    memoised: a queue of 10**6 jobs names a few hundred models and datasets)."""
    return re.sub(r"[^A-Za-z0-9_.]+", "_", text.replace("=", ""))


@dataclass(frozen=True, slots=True)
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
        for name, max_len in TEXT_FIELDS.items():  # the rules: gpuscope.jobs.fields
            v = getattr(self, name)
            if v is not None and (type(v) is not str or len(v) > max_len):
                check_field(name, v)
        model, dataset = canonical_names(self.model, self.dataset, self.optimizer,
                                         self.precision, self.framework, self.graph is not None,
                                         self.module, self.hf is not None)
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "dataset", dataset)  # canonical: equal datasets, equal keys
        for name, (integer, low, high) in NUMBER_FIELDS.items():
            v = getattr(self, name)
            if v is None and name in OPTIONAL:
                continue
            if (type(v) is not int if integer else type(v) not in (int, float)) \
                    or not low <= v <= high:  # also refuses NaN
                check_field(name, v)

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
        """Build from a mapping (JSON object, CSV row): each cell through
        :func:`~gpuscope.jobs.fields.convert_field` (numeric strings parsed, ``true`` not a
        number, names lower-cased); unknown or missing fields are one clear message."""
        unknown = [k for k in d if k not in _FIELD_NAMES]
        if unknown:
            names = sorted(map(str, unknown))
            raise FieldError(names[0], f"unknown job field(s): {', '.join(names)}")
        kw = {k: v for k, v in ((k, convert_field(k, v)) for k, v in d.items()) if v is not SKIP}
        if kw.get("model") in (None, "") and (kw.get("module") or kw.get("hf")):
            kw["model"] = source_model_name(kw.get("module"), kw.get("hf")).lower()
        missing = [k for k in REQUIRED if k not in kw]
        if missing:
            raise FieldError(missing[0], f"job is missing field(s): {', '.join(missing)}")
        return cls(**kw)

    @classmethod
    def trusted_rows(cls, columns: dict[str, list[Any]], n: int) -> list[JobSpec]:
        """``n`` jobs from columns of values already converted and checked (value by value
        and name combination by combination, as ``gpuscope.jobs.queue`` does for a CSV
        queue), built without checking them again; :data:`SKIP` or an absent column is
        the field's default."""
        cols = [[_DEFAULTS[f] if v is SKIP else v for v in columns[f]] if f in columns
                else [_DEFAULTS[f]] * n for f in _DEFAULTS]
        return list(map(_BUILD, *cols))

    @classmethod
    def from_json_file(cls, path: str | Path) -> JobSpec:
        from gpuscope.core.io import read_json

        return cls.from_dict(read_json(path, "job file", kind=dict))


_FIELD_NAMES: frozenset[str] = frozenset(f.name for f in fields(JobSpec))
_DEFAULTS: dict[str, Any] = {f.name: (None if f.default is MISSING else f.default)
                             for f in fields(JobSpec)}


def _builder() -> Any:
    """A function taking every field positionally and returning a JobSpec without
    ``__post_init__``: the assignments dataclasses generates for ``__init__`` (3 us a job,
    half of a generic loop), for :meth:`JobSpec.trusted_rows`."""
    names = list(_DEFAULTS)
    body = "".join(f"    set_(job, {f!r}, {f})\n" for f in names)
    src = f"def build({', '.join(names)}):\n    job = new(cls)\n{body}    return job\n"
    scope: dict[str, Any] = {"new": object.__new__, "cls": JobSpec, "set_": object.__setattr__}
    exec(src, scope)  # noqa: S102 - code built from the dataclass's own field names
    return scope["build"]


_BUILD = _builder()


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

