"""``gpuscope graph``: export, show and summarise training-step graphs.

    gpuscope graph export --model resnet50 --dataset imagenet --optimizer adam --batch-size 32 -o g.json
    gpuscope graph export --job job.json -o g.json --encode      # also writes g.parquet
    gpuscope graph export --module examples/my_model.py:build --dataset tokens:seq=512 \
        --batch-size 8 --optimizer adamw --precision amp-bf16 -o g.json
    gpuscope graph export --hf gpt2:n_layer=36,n_embd=1280,n_head=20 --dataset tokens:seq=1024 \
        --batch-size 4 -o g.json
    gpuscope graph show g.json                                   # .json / .pb / .pbtxt
    gpuscope graph summary --table 3 --models resnet20,lenet

Heavy libraries (torch, tensorflow) are imported inside the handlers.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gpuscope.core.errors import InputError
from gpuscope.core.io import check_output
from gpuscope.core.limits import check_memory, pos_int
from gpuscope.core.progress import phase
from gpuscope.workloads.args import add_job_arguments, job_from_args


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("graph", help="export, show and summarise computational graphs")
    sub = p.add_subparsers(dest="graph_command", metavar="ACTION", parser_class=type(p))
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])

    e = sub.add_parser("export", help="export a job's training-step graph to a file")
    add_job_arguments(e, epochs=False)
    e.add_argument("--framework", default="pytorch", help="pytorch (default) or tensorflow")
    e.add_argument("-o", "--output", required=True, help="output file (.json, .json.gz, .pbtxt, .pb)")
    e.add_argument("--encode", action="store_true",
                   help="also encode (Driple, K groups) into <output stem>.parquet")
    e.add_argument("--vocab", help="op vocabulary JSON for --encode (default: fit on this graph)")
    e.add_argument("--k", type=pos_int, default=100, help="groups for --encode (default 100)")
    e.add_argument("--features", default="driple", help="driple (default) or rich")
    e.set_defaults(func=_export)

    s = sub.add_parser("show", help="print a graph file's summary and op histograms")
    s.add_argument("file")
    s.add_argument("--top", type=pos_int, default=25, help="ops listed in the op histogram")
    s.set_defaults(func=_show)

    m = sub.add_parser("summary", help="catalog graph summary table (seed 001 Table 3 or 4)")
    m.add_argument("--table", type=int, default=3, choices=(3, 4))
    m.add_argument("--models", help="comma-separated subset of the table's models")
    m.add_argument("--batch-size", type=pos_int, default=32)
    m.add_argument("--optimizers", default="sgd,adam")
    m.add_argument("-o", "--output", help="also write the table as CSV")
    m.set_defaults(func=_summary)


def _job_from_args(a: argparse.Namespace) -> Any:
    return job_from_args(a, "graph export")


def _export(a: argparse.Namespace) -> int:
    import time

    if a.graph:  # the user graph's own job, not imagenet / batch 1 / sgd
        from gpuscope.graphs.files import recorded_job
        from gpuscope.workloads.args import fill_from_graph

        fill_from_graph(a, recorded_job(a.graph))
    job = _job_from_args(a)
    if a.features not in ("driple", "rich"):
        raise InputError(f"unknown feature mode {a.features!r}; expected driple or rich")
    inputs = [a.graph, a.job, a.vocab, a.hf_config, str(a.module).rpartition(":")[0] or None]
    out = check_output(a.output, inputs, what="graph")
    if a.encode:
        check_memory(f"--k {a.k} (a K x K adjacency)", 8 * a.k**2)
        check_output(_encoded_path(out), inputs, what="encoded graph")
        if a.vocab:
            from gpuscope.graphs import OpVocabulary

            OpVocabulary.load(a.vocab)  # a corrupt vocabulary fails before the export
    phase(f"tracing the training step of {job.model}" if not job.graph else f"reading {job.graph}")
    from gpuscope.graphs import OpVocabulary, encode, export_graph, save_encoded, write_graph

    t0 = time.perf_counter()
    g = export_graph(job)
    dt = time.perf_counter() - t0
    out = write_graph(g, a.output)
    print(f"{job.graph_key}: {g.num_nodes} nodes, {g.num_edges} edges, "
          f"{g.total_flops() / 1e9:.2f} GFLOPs/step, exported in {dt:.2f} s -> {out}")
    if a.encode:
        vocab = OpVocabulary.load(a.vocab) if a.vocab else OpVocabulary().fit([g])
        data = encode(g, vocab, k=a.k, features=a.features)
        enc = save_encoded(_encoded_path(out), {job.graph_key: data})
        print(f"encoded: x {tuple(data.x.shape)}, edge_index {tuple(data.edge_index.shape)} -> {enc}")
    return 0


def _encoded_path(out: Path) -> Path:
    name = out.name[: -len(".json.gz")] if out.name.endswith(".json.gz") else out.stem
    return out.with_name(name + ".parquet")


def _show(a: argparse.Namespace) -> int:
    from gpuscope.graphs import read_graph

    g = read_graph(a.file)
    meta = ", ".join(f"{k}={v}" for k, v in g.meta.items() if not isinstance(v, (dict, list)))
    print(f"graph {g.name}: {g.num_nodes} nodes, {g.num_edges} edges")
    if meta:
        print(f"  meta: {meta}")
    flops = g.total_flops()
    print(f"  known FLOPs: {flops / 1e9:.3f} G "
          f"(forward {g.total_flops('forward') / 1e9:.3f}, backward "
          f"{g.total_flops('backward') / 1e9:.3f}, optimizer {g.total_flops('optimizer') / 1e9:.3f})")
    print(f"  output tensors: {g.total_out_bytes() / 2**20:.1f} MiB")
    phases = {p: sum(1 for n in g.nodes if n.phase == p) for p in ("forward", "backward", "optimizer", "data", "unknown")}
    print("  phases: " + ", ".join(f"{p} {c}" for p, c in phases.items() if c))
    hist = g.op_histogram().most_common()
    print(f"op histogram ({len(hist)} op types):")
    for op, c in hist[: a.top]:
        print(f"  {c:7d}  {op}")
    if len(hist) > a.top:
        print(f"  ... {len(hist) - a.top} more op types")
    print("class histogram:")
    for cls, c in g.class_histogram().most_common():
        print(f"  {c:7d}  {cls}")
    return 0


def _summary(a: argparse.Namespace) -> int:
    import pandas as pd

    from gpuscope.graphs import catalog_summary
    from gpuscope.jobs.spec import table_jobs

    if a.output:
        check_output(a.output, what="table")
    jobs = table_jobs(a.table)
    table_models = list(dict.fromkeys(j.model for j in jobs))
    opts = [o.strip() for o in a.optimizers.split(",") if o.strip()]
    bad = [o for o in opts if o not in ("sgd", "adam")]
    if bad or not opts:
        raise InputError(f"unknown optimizer(s) {', '.join(bad) or '(none)'}; expected sgd,adam")
    if a.models:
        wanted = [m.strip() for m in a.models.split(",") if m.strip()]
        unknown = [m for m in wanted if m not in table_models]
        if unknown:
            raise InputError(f"model(s) {', '.join(unknown)} not in table {a.table}; "
                             f"expected some of {', '.join(table_models)}")
        jobs = [j for j in jobs if j.model in wanted]
    jobs = [j.with_(batch_size=a.batch_size) for j in jobs if j.optimizer in opts]
    df = catalog_summary(jobs, progress=True)
    with pd.option_context("display.max_rows", None, "display.width", 160):
        print(df.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    if a.output:
        from gpuscope.core.io import write_table

        write_table(df, a.output, what="table")
    return 0
