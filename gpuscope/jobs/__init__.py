"""What a job is: its specification, the model/dataset catalog, queue files and their schema.

* :class:`JobSpec` (``spec``): model (catalog name, ``--module file.py:factory``, ``--hf``
  config or graph file), dataset, optimizer, batch size, epochs, precision, arrival/due times;
  ``table_jobs(3|4)``: seed 001's job tables;
* ``read_queue`` / ``write_queue`` / ``QUEUE_COLUMNS`` (``queue``): CSV/JSON/TOML queues;
* :class:`DatasetSpec`, ``parse_dataset``, ``DATASETS`` (``datasets``): shaped datasets such as
  ``tokens:seq=512``;
* ``MODELS``, ``OPTIMIZERS``, ``PRECISIONS``, ``MODEL_FAMILY`` (``catalog``);
* ``JobRow``, ``queue_json_schema`` (``schema``): the pydantic schema of one queue row.

Names load on first use (:mod:`gpuscope.core.lazy`), so ``gpuscope --help`` imports none of them.
"""

from __future__ import annotations

from gpuscope.core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "JobSpec": ".spec", "FieldError": ".spec", "table_jobs": ".spec", "module_file": ".spec",
    "module_problem": ".spec",
    "read_queue": ".queue", "write_queue": ".queue", "QUEUE_COLUMNS": ".queue",
    "assign_ids": ".queue", "check_sources": ".queue", "missing_files": ".queue",
    "DatasetSpec": ".datasets", "DATASETS": ".datasets", "parse_dataset": ".datasets",
    "shape_dataset": ".datasets",
    "MODELS": ".catalog", "OPTIMIZERS": ".catalog", "PRECISIONS": ".catalog",
    "MODEL_FAMILY": ".catalog",
    "JobRow": ".schema", "queue_json_schema": ".schema",
})
