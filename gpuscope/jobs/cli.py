"""``gpuscope jobs``: the queue format — ``schema`` (JSON Schema), ``template`` (an example
queue), ``check`` (read a queue, print its jobs or the first error, naming row and field)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from gpuscope.core.errors import InputError


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("jobs", help="job queue format: schema, template, check")
    sub = p.add_subparsers(dest="jobs_command", metavar="ACTION", parser_class=type(p))
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])
    s = sub.add_parser("schema", help="print the JSON Schema of a job queue")
    s.add_argument("-o", "--output", help="also write it to this file")
    s.set_defaults(func=_schema)
    t = sub.add_parser("template", help="write an example queue (.csv or .json)")
    t.add_argument("-o", "--output", default="queue.csv", help="output file (default queue.csv)")
    t.add_argument("--force", action="store_true", help="overwrite an existing file")
    t.set_defaults(func=_template)
    c = sub.add_parser("check", help="read a queue and list its jobs (or its first error)")
    c.add_argument("queue")
    c.set_defaults(func=_check)


def _schema(a: argparse.Namespace) -> int:
    from gpuscope.core.io import check_output, write_text
    from gpuscope.jobs.schema import queue_json_schema

    if a.output:
        check_output(a.output, what="schema")
    text = json.dumps(queue_json_schema(), indent=1)
    print(text)
    if a.output:
        write_text(a.output, text + "\n", what="schema")
    return 0


def _template(a: argparse.Namespace) -> int:
    from gpuscope.core.io import check_output, read_text, write_text
    from gpuscope.jobs.queue import write_queue
    from gpuscope.jobs.schema import EXAMPLE_MODULE, template_jobs

    out = check_output(a.output, what="queue")
    if out.exists() and not a.force:
        raise InputError(f"{out} exists; pass --force to overwrite it")
    # the module job names a file next to the queue (queues resolve relative paths there), so
    # the example runs from any folder; the queue goes first (write_queue refuses a bad
    # extension before anything is written) and a user's edited module is never overwritten
    jobs = template_jobs(EXAMPLE_MODULE.name)
    write_queue(jobs, out)  # atomic: a temp file renamed into place
    module = out.parent / EXAMPLE_MODULE.name
    kept = module.exists()
    if not kept:
        write_text(module, read_text(EXAMPLE_MODULE, "example module"), what="example module")
    print(f"wrote {len(jobs)} example jobs -> {out} "
          f"(fields: gpuscope jobs schema; check: gpuscope jobs check {out}); "
          f"module job: {module} ({'kept as it was' if kept else 'written'})")
    return 0


def _check(a: argparse.Namespace) -> int:
    from gpuscope.jobs.queue import check_sources, read_queue_columns

    cols = read_queue_columns(a.queue)  # distinct jobs and per-row arrays
    check_sources(cols, a.queue)  # files and factory names, read without running them
    # each distinct job's line once; a row's line is its id and that text, in one buffered
    # write (10**6 prints took 8 s, 10**6 formatted jobs 6 s)
    tail = [f": {j.model} ({j.source}) {j.dataset} {j.optimizer} b{j.batch_size}"
            f" x{j.grad_accum} {j.precision} {j.epochs} epoch(s), {j.total_steps:,} steps\n"
            for j in cols.distinct]
    sys.stdout.write("".join(map(str.__add__, cols.job_id, map(tail.__getitem__,
                                                                 cols.code.tolist()))))
    print(f"{len(cols)} jobs OK")
    return 0
