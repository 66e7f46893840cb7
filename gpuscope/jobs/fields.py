"""The rules of a job's fields, in one place: text lengths, number bounds, the conversion
of a queue cell, and the catalog check of a job's names (memoised per combination).

``JobSpec.__post_init__`` applies them to one job; the queue reader applies the same
functions to each distinct value of a column, so a 10**6-row queue is checked in seconds.
"""

from __future__ import annotations

import functools
from typing import Any

from gpuscope.core.errors import InputError
from gpuscope.core.limits import (
    MAX_INT,
    MAX_NAME_LEN,
    MAX_PATH_LEN,
    MAX_SECONDS,
    MAX_WEIGHT,
    check_number,
    check_text,
    parse_number,
)
from gpuscope.jobs.catalog import (
    LLAMA_PARAMS,
    MODEL_ANY_KIND,
    MODEL_DATASETS,
    MODELS,
    OPTIMIZERS,
    PRECISIONS,
    model_params,
)
from gpuscope.jobs.datasets import parse_dataset


class FieldError(InputError):
    """An ``InputError`` about one job field (``field``), so queue readers can name it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


#: Longest text each string field may hold (names vs. paths and source spellings).
TEXT_FIELDS: dict[str, int] = {
    "model": MAX_NAME_LEN, "dataset": MAX_NAME_LEN, "optimizer": MAX_NAME_LEN,
    "framework": MAX_NAME_LEN, "job_id": MAX_NAME_LEN, "precision": MAX_NAME_LEN,
    "graph": MAX_PATH_LEN, "module": MAX_PATH_LEN, "hf": MAX_PATH_LEN,
}
#: ``(integer, low, high)`` of every numeric field.
NUMBER_FIELDS: dict[str, tuple[bool, float, float]] = {
    "batch_size": (True, 1, MAX_INT), "epochs": (True, 1, MAX_INT),
    "steps_per_epoch": (True, 1, MAX_INT), "grad_accum": (True, 1, MAX_INT),
    "arrival_s": (False, 0.0, MAX_SECONDS), "due_s": (False, -MAX_SECONDS, MAX_SECONDS),
    "weight": (False, 0.0, MAX_WEIGHT),
}
#: Fields a queue row must give (``model`` may come from ``module``/``hf`` instead).
REQUIRED: tuple[str, ...] = ("model", "dataset", "optimizer", "batch_size", "epochs")
#: Fields that may be None.
OPTIONAL: frozenset[str] = frozenset({"steps_per_epoch", "due_s", "graph", "job_id", "module",
                                      "hf"})
#: Text fields kept when empty (an empty model or dataset is an error, not a default).
REQUIRED_TEXT: frozenset[str] = frozenset({"model", "dataset", "optimizer"})
#: Text fields compared in lower case.
LOWER_FIELDS: frozenset[str] = frozenset({"model", "optimizer", "framework", "precision"})
#: What :func:`convert_field` returns for an empty cell: the field takes its default.
SKIP: Any = object()


def convert_field(name: str, v: Any) -> Any:
    """One queue cell (text from a CSV, or a JSON value) as the field's Python value:
    numbers parsed (``true`` is not a number), names lower-cased, an empty cell
    :data:`SKIP`; ``FieldError`` otherwise. Bounds are :func:`check_field`'s."""
    if isinstance(v, str):
        v = v.strip()
        if v == "" and name not in REQUIRED_TEXT:
            return SKIP
    elif v is None:
        return SKIP
    if name in NUMBER_FIELDS:
        try:
            return parse_number(v, integer=NUMBER_FIELDS[name][0])
        except ValueError as e:
            raise FieldError(name, f"{name} {e}") from None
    if isinstance(v, (bool, dict, list)) or not isinstance(v, (str, int, float)):
        raise FieldError(name, f"{name} must be text, got {type(v).__name__}")
    v = str(v)
    return v.lower() if name in LOWER_FIELDS else v


def check_field(name: str, v: Any) -> Any:
    """``v`` if it is within the field's bounds (text length, number range), else
    ``FieldError``. None passes for optional fields."""
    if v is None and name in OPTIONAL:
        return v
    if name in TEXT_FIELDS:
        try:
            return check_text(name, v, max_len=TEXT_FIELDS[name])
        except InputError as e:
            raise FieldError(name, str(e)) from None
    integer, low, high = NUMBER_FIELDS[name]
    try:
        return check_number(name, v, integer=integer, low=low, high=high)
    except InputError as e:
        raise FieldError(name, str(e)) from None


@functools.lru_cache(maxsize=4096)
def canonical_names(model: str, dataset: str, optimizer: str, precision: str, framework: str,
                    graph: bool, module: str | None, hf: bool) -> tuple[str, str]:
    """The canonical ``(model, dataset)`` of a job's name fields, or :class:`FieldError`
    (memoised: a queue of 10**6 rows repeats a few hundred combinations)."""
    try:
        name, spec = parse_dataset(dataset)
    except InputError as e:
        raise FieldError("dataset", str(e)) from None
    if optimizer not in OPTIMIZERS:
        raise FieldError("optimizer",
                         f"unknown optimizer {optimizer!r}; expected one of {', '.join(OPTIMIZERS)}")
    if precision not in PRECISIONS:
        raise FieldError("precision",
                         f"unknown precision {precision!r}; expected one of {', '.join(PRECISIONS)}")
    if framework not in ("pytorch", "tensorflow"):
        raise FieldError("framework",
                         f"unknown framework {framework!r}; expected pytorch or tensorflow")
    sources = [k for k, v in (("graph", graph), ("module", module is not None), ("hf", hf)) if v]
    if len(sources) > 1:
        raise FieldError("model", f"a job takes one model source, got {' and '.join(sources)}")
    if module is not None and (":" not in module or not module.rpartition(":")[2]):
        raise FieldError("module",
                         f"module {module!r}: expected path/to/file.py:factory or "
                         "package.module:factory")
    if sources:
        if not model:
            raise FieldError("model", "model name must not be empty")
        return model, name
    try:
        base, mparams = model_params(model)
    except InputError as e:
        raise FieldError("model", str(e)) from None
    if mparams:  # canonical: only the keys that differ from the defaults, fixed order
        changed = [f"{k}={v}" for k, v in mparams.items() if v != LLAMA_PARAMS[k]]
        model = f"{base}:{','.join(changed)}" if changed else base
    if base not in MODEL_DATASETS:
        raise FieldError("model",
                         f"unknown model {model!r}; expected one of {', '.join(MODELS)} "
                         "(or give a graph file, a module or an hf architecture)")
    if name not in MODEL_DATASETS[base] and spec.kind not in MODEL_ANY_KIND.get(base, ()):
        kinds = "".join(f" or any {k} dataset" for k in MODEL_ANY_KIND.get(base, ()))
        raise FieldError("dataset",
                         f"model {model!r} is defined for {'/'.join(MODEL_DATASETS[base])}"
                         f"{kinds}, not {name!r}")
    return model, name
