"""The job options every command that takes one job shares (``graph export``, ``estimate``).

    --model NAME | --module FILE.py:FACTORY | --module pkg.mod:FACTORY | --hf ARCH[:k=v,...]
    | --hf-config config.json | --graph FILE         (one model source)
    --dataset NAME|KIND:k=v,... | --input-shape 3x224x224
    --optimizer --batch-size --epochs --precision --grad-accum --steps-per-epoch
    --job job.json                                  (all of it from a JobSpec JSON file)

Queue files (``.csv``/``.json``) carry the same fields as columns (``gpuscope.jobs.spec``).
It lives with the workloads because a module factory may declare its own dataset, which only
building it (on the meta device, torch inside ``job_from_args``) can tell; importing this
module loads neither torch nor pandas, so the commands' parsers stay light.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gpuscope.core.errors import InputError
from gpuscope.core.limits import pos_int
from gpuscope.jobs.spec import (
    OPTIMIZERS,
    PRECISIONS,
    JobSpec,
    module_problem,
    shape_dataset,
    source_model_name,
)


def add_job_arguments(p: argparse.ArgumentParser, *, graph: bool = True,
                      epochs: bool = True) -> None:
    """Add the job options (see the module docstring) to ``p``."""
    g = p.add_argument_group("job (one model source)")
    g.add_argument("--job", help="job JSON file (JobSpec fields) instead of the options below")
    g.add_argument("--model", help="catalog model name (gpuscope workloads list)")
    g.add_argument("--module", help="path/to/file.py:factory or package.module:factory "
                                    "returning an nn.Module (or (module, input spec))")
    g.add_argument("--hf", help="Hugging Face architecture and config overrides, "
                                "e.g. gpt2:n_layer=36,n_embd=1280,n_head=20 (random weights)")
    g.add_argument("--hf-config", help="Hugging Face config.json (random weights)")
    if graph:
        g.add_argument("--graph", help="user-supplied graph file (.json, .pb, .pbtxt)")
    g.add_argument("--name", help="model name for a --module/--hf job (default: derived)")
    d = p.add_argument_group("data and training")
    d.add_argument("--dataset", help="dataset name or KIND:key=value,... "
                                     "(e.g. imagenet, wikitext103, tokens:seq=512,vocab=30522)")
    d.add_argument("--input-shape", help="per-sample input shape instead of --dataset, "
                                         "e.g. 3x224x224, 28x28, 100")
    d.add_argument("--optimizer", help=f"one of {', '.join(OPTIMIZERS)} (default: a --graph "
                                       "file's, else sgd)")
    d.add_argument("--batch-size", type=pos_int, help="samples per forward/backward pass")
    if epochs:
        d.add_argument("--epochs", type=pos_int, default=1)
    d.add_argument("--precision", help=f"one of {', '.join(PRECISIONS)} (default: a --graph "
                                       "file's, else fp32)")
    d.add_argument("--grad-accum", type=pos_int,
                   help="micro-batches per optimizer step (gradient accumulation; default: a "
                        "--graph file's, else 1)")
    d.add_argument("--steps-per-epoch", type=pos_int, help="override of dataset size / batch")


def fill_from_graph(a: argparse.Namespace, recorded: dict[str, object]) -> list[str]:
    """Set the job options the user left out from what a ``--graph`` file records
    (``graphs.files.recorded_job``): its model name, dataset, batch size, optimizer,
    precision, gradient accumulation. Returns ``"field value"`` for each one taken."""
    taken = []
    for field in ("model", "dataset", "batch_size", "optimizer", "precision", "grad_accum"):
        if field == "dataset" and getattr(a, "input_shape", None):
            continue
        if getattr(a, field, None) is None and field in recorded:
            setattr(a, field, recorded[field])
            taken.append(f"{field} {recorded[field]}")
    return taken


def job_from_args(a: argparse.Namespace, command: str = "this command") -> JobSpec:
    """The JobSpec the job options describe (``InputError`` naming what is missing)."""
    if getattr(a, "job", None):
        return JobSpec.from_json_file(a.job)
    srcs = {k: v for k, v in (("--model", a.model), ("--module", a.module), ("--hf", a.hf),
                              ("--hf-config", a.hf_config),
                              ("--graph", getattr(a, "graph", None))) if v}
    if not srcs:
        raise InputError(f"{command} needs a model: --model, --module, --hf or --hf-config "
                         "(or --job FILE)")
    if len(srcs) > 1 and not (set(srcs) == {"--model", "--graph"}):
        raise InputError(f"give one model source, not {' and '.join(srcs)}")
    if a.hf_config and not str(a.hf_config).endswith(".json"):
        raise InputError(f"--hf-config {a.hf_config}: expected a .json file")
    if a.hf and str(a.hf).endswith(".json"):
        raise InputError("--hf takes ARCH[:key=value,...]; use --hf-config for a config file")
    hf = a.hf or a.hf_config
    graph = getattr(a, "graph", None)
    if a.dataset and a.input_shape:
        raise InputError("give --dataset or --input-shape, not both")
    dataset = a.dataset or (shape_dataset(a.input_shape) if a.input_shape else None)
    problem = module_problem(a.module) if a.module else None
    if problem is not None:  # a wrong path or factory name fails here, before torch loads
        raise InputError(problem)
    if dataset is None and a.module:
        from gpuscope.workloads.sources import module_dataset

        dataset = module_dataset(a.module)
    if dataset is None and graph:
        dataset = "imagenet"
    if a.batch_size is None and graph:
        a.batch_size = 1
    missing = [n for n, v in (("--dataset", dataset), ("--batch-size", a.batch_size)) if v is None]
    if missing:
        raise InputError(f"{command} needs {', '.join(missing)} (or --job FILE)")
    if a.module or hf:
        model = a.name or source_model_name(a.module, hf)
    else:
        model = a.model or Path(str(graph)).stem
    return JobSpec.from_dict({
        "model": model, "dataset": dataset, "optimizer": a.optimizer or "sgd",
        "batch_size": a.batch_size, "epochs": getattr(a, "epochs", 1),
        "steps_per_epoch": a.steps_per_epoch, "framework": getattr(a, "framework", "pytorch"),
        "graph": graph, "precision": a.precision or "fp32", "grad_accum": a.grad_accum or 1,
        "module": a.module, "hf": hf,
    })


__all__ = ["add_job_arguments", "job_from_args"]
