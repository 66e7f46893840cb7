"""The job-queue format as one pydantic model (``JobRow``) and its JSON Schema.

A queue is a ``.csv`` file (header = field names, one job a row, empty cell = default) or a
``.json`` file (a list of job objects, or ``{"jobs": [...]}``). ``JobRow`` is derived from
``JobSpec``: its fields, their types and defaults, and the choices of ``optimizer``,
``precision`` and ``framework`` (the catalog's tuples) exist once, there; this module adds only
what a schema says beyond them (a description and the bounds of each field).
``gpuscope.jobs.queue.read_queue`` parses rows into ``JobSpec`` without pydantic (a queue of
10**6 rows) and names the row and the field of any error. ``gpuscope jobs schema`` prints
``queue_json_schema()``; ``gpuscope jobs template`` writes ``template_jobs()``.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any, Literal, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model

from gpuscope.jobs.catalog import FRAMEWORKS, OPTIMIZERS, PRECISIONS
from gpuscope.jobs.fields import NUMBER_FIELDS, TEXT_FIELDS
from gpuscope.jobs.spec import JobSpec

#: Per JobSpec field: its description in the schema (its bounds are the reader's,
#: ``jobs.fields``: :func:`_bounds`).
FIELD_DOCS: dict[str, str] = {
    "model": ("Catalog model (`gpuscope workloads list`, e.g. resnet50, gpt2, "
              "llama:dim=4096,layers=32), or a free name when graph/module/hf gives the model "
              "(default: derived from the module or hf source). Required for catalog jobs."),
    "dataset": ("Dataset name (imagenet, cifar10, mnist, wikitext2, wikitext103, multi30k, "
                "wmt16_en_de, ml20m, monet2photo, pong, mnist_seq) or KIND:key=value,... "
                "(tokens:seq=512,vocab=30522; sequence:steps=28,features=28; tabular:features=100; "
                "image:c=3,h=224,w=224,classes=1000; optional samples=N)."),
    "optimizer": "sgd = SGD momentum 0.9; momentum = Nesterov; none = forward + backward only",
    "batch_size": "samples per forward/backward pass (micro-batch)",
    "epochs": "passes over the dataset",
    "steps_per_epoch": ("override of ceil(dataset size / (batch_size x grad_accum)) optimizer "
                        "steps"),
    "framework": "framework the job is written in",
    "graph": "user graph file (.json, .json.gz, .pb, .pbtxt)",
    "arrival_s": "submission time, s from the queue's start",
    "due_s": "due date, s (cost-aware schedulers)",
    "weight": "tardiness weight",
    "job_id": "unique id; j000, j001, ... when absent",
    "precision": "amp-* traced under autocast",
    "grad_accum": "micro-batches per optimizer step",
    "module": "path/to/file.py:factory or package.module:factory returning an nn.Module",
    "hf": ("Hugging Face ARCH[:key=value,...] (e.g. gpt2:n_layer=36,n_embd=1280,n_head=20) or "
           "a config.json path; random weights, no network"),
}
#: Fields whose value is one of a catalog tuple.
_CHOICES: dict[str, tuple[str, ...]] = {"optimizer": OPTIMIZERS, "precision": PRECISIONS,
                                        "framework": FRAMEWORKS}


def _bounds(name: str) -> dict[str, float]:
    """The pydantic ``Field`` bounds of a field: the numbers' and the texts' of
    ``jobs.fields``, which the queue reader applies (one set of rules for both)."""
    if name in NUMBER_FIELDS:
        _, low, high = NUMBER_FIELDS[name]
        return {"ge": low, "le": high}
    return {"max_length": TEXT_FIELDS[name]} if name in TEXT_FIELDS else {}


def _row_fields() -> dict[str, Any]:
    """``create_model`` arguments: one ``(type, Field)`` per JobSpec field, in its order."""
    hints = get_type_hints(JobSpec)
    out: dict[str, Any] = {}
    for f in fields(JobSpec):
        doc, bounds = FIELD_DOCS[f.name], _bounds(f.name)
        kind: Any = Literal.__getitem__(_CHOICES[f.name]) if f.name in _CHOICES \
            else hints[f.name]
        default: Any = ... if f.default is MISSING else f.default
        if f.name == "model":  # a row may leave it to its module or hf source
            kind, default = str | None, None
        out[f.name] = (kind, Field(default, description=doc, **bounds))  # type: ignore[call-overload]
    return out


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid", title="gpuscope job")


#: One job of a queue (a CSV row or a JSON object).
JobRow: type[BaseModel] = create_model("JobRow", __base__=_Row,
                                       __doc__="One job of a queue (a CSV row or a JSON object).",
                                       **_row_fields())


def queue_json_schema() -> dict[str, Any]:
    """JSON Schema of a JSON queue: an array of ``JobRow`` objects (or ``{"jobs": [...]}``)."""
    row = JobRow.model_json_schema()
    defs = row.pop("$defs", {})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "gpuscope job queue",
        "description": "A list of jobs (a .json queue); a .csv queue has the same fields as "
                       "columns, empty cells taking the defaults.",
        "oneOf": [
            {"type": "array", "items": {"$ref": "#/$defs/JobRow"}},
            {"type": "object", "properties": {"jobs": {"type": "array",
                                                       "items": {"$ref": "#/$defs/JobRow"}}},
             "required": ["jobs"], "additionalProperties": False},
        ],
        "$defs": {**defs, "JobRow": row},
    }


#: The example user module ``template_jobs`` names (a copy goes next to the template queue).
EXAMPLE_MODULE: Path = Path(__file__).resolve().parent / "templates" / "my_model.py"


def template_jobs(module_path: str = "my_model.py") -> list[JobSpec]:
    """An example queue: catalog CNN and LM jobs, a user module (``module_path``, a copy of
    :data:`EXAMPLE_MODULE`), a Hugging Face config."""
    return [
        JobSpec("resnet50", "imagenet", "sgd", 64, 90, job_id="resnet50-imagenet"),
        JobSpec("gpt2", "wikitext103", "adamw", 8, 3, precision="amp-bf16", grad_accum=4,
                arrival_s=60.0, job_id="gpt2-wt103", due_s=86400.0, weight=2.0),
        JobSpec("my_model.build", "tokens:seq=512,vocab=30522", "adamw", 8, 1,
                module=f"{module_path}:build", arrival_s=120.0, job_id="my-model"),
        JobSpec("hf-llama", "tokens:seq=1024", "adamw", 4, 1, precision="amp-bf16",
                hf="llama:num_hidden_layers=16,hidden_size=2048,num_attention_heads=16,"
                   "num_key_value_heads=4,intermediate_size=5632",
                arrival_s=180.0, job_id="hf-llama"),
    ]


__all__ = ["EXAMPLE_MODULE", "JobRow", "queue_json_schema", "template_jobs"]
