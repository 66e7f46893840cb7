"""The job-queue format as one pydantic model (``JobRow``) and its JSON Schema (issue 12).

A queue is a ``.csv`` file (header = field names, one job a row, empty cell = default) or a
``.json`` file (a list of job objects, or ``{"jobs": [...]}``). ``JobRow`` documents every
field; ``gpuscope.jobs.queue.read_queue`` parses rows into ``JobSpec`` (tests keep the two field lists
equal) and names the row and the field of any error. ``gpuscope jobs schema`` prints
``queue_json_schema()``; ``gpuscope jobs template`` writes ``template_jobs()``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gpuscope.jobs.spec import OPTIMIZERS, PRECISIONS, JobSpec

Optimizer = Literal["sgd", "momentum", "adam", "adamw", "rmsprop", "adagrad", "none"]
Precision = Literal["fp32", "tf32", "amp-fp16", "amp-bf16"]
assert set(Optimizer.__args__) == set(OPTIMIZERS)  # type: ignore[attr-defined]
assert set(Precision.__args__) == set(PRECISIONS)  # type: ignore[attr-defined]


class JobRow(BaseModel):
    """One job of a queue (a CSV row or a JSON object)."""

    model_config = ConfigDict(extra="forbid", title="gpuscope job")

    model: str | None = Field(None, description=(
        "Catalog model (`gpuscope workloads list`, e.g. resnet50, gpt2, "
        "llama:dim=4096,layers=32), or a free name when graph/module/hf gives the model "
        "(default: derived from the module or hf source). Required for catalog jobs."))
    dataset: str = Field(description=(
        "Dataset name (imagenet, cifar10, mnist, wikitext2, wikitext103, multi30k, "
        "wmt16_en_de, ml20m, monet2photo, pong, mnist_seq) or KIND:key=value,... "
        "(tokens:seq=512,vocab=30522; sequence:steps=28,features=28; tabular:features=100; "
        "image:c=3,h=224,w=224,classes=1000; optional samples=N)."))
    optimizer: Optimizer = Field(description="sgd = SGD momentum 0.9; momentum = Nesterov; "
                                             "none = forward + backward only")
    batch_size: int = Field(gt=0, description="samples per forward/backward pass (micro-batch)")
    epochs: int = Field(gt=0, description="passes over the dataset")
    steps_per_epoch: int | None = Field(None, gt=0, description=(
        "override of ceil(dataset size / (batch_size x grad_accum)) optimizer steps"))
    framework: Literal["pytorch", "tensorflow"] = "pytorch"
    graph: str | None = Field(None, description="user graph file (.json, .json.gz, .pb, .pbtxt)")
    arrival_s: float = Field(0.0, ge=0, description="submission time, s from the queue's start")
    due_s: float | None = Field(None, description="due date, s (cost-aware schedulers)")
    weight: float = Field(1.0, ge=0, description="tardiness weight")
    job_id: str | None = Field(None, description="unique id; j000, j001, ... when absent")
    precision: Precision = Field("fp32", description="amp-* traced under autocast")
    grad_accum: int = Field(1, gt=0, description="micro-batches per optimizer step")
    module: str | None = Field(None, description="path/to/file.py:factory or "
                                                 "package.module:factory returning an nn.Module")
    hf: str | None = Field(None, description="Hugging Face ARCH[:key=value,...] (e.g. "
                                             "gpt2:n_layer=36,n_embd=1280,n_head=20) or a "
                                             "config.json path; random weights, no network")


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
