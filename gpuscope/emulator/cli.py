"""``gpuscope emulate``: emulated campaigns into runs folders (docs/emulator.md)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from gpuscope.cluster.cli import add_catalog_option


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "emulate",
        help="emulate a profiling campaign on catalog GPUs (writes runs folders), or price kernels",
        description=(
            "Emulate every job of CAMPAIGN (a campaign TOML, e.g. campaigns/table3.toml) on each "
            "catalog device and write one runs folder per device (<out>/<device>/: ledger.sqlite "
            "+ traces/, provenance=emulated), resumable; then `gpuscope profile build-dataset`. "
            "`gpuscope emulate kernels --input K.parquet [--devices D] -o out.parquet` instead "
            "prices a kernel table in NeuSight's schema (op + shape columns, a device column or "
            "--devices) and writes its rows back with pred_ms (docs/emulator.md, Kernel model)."
        ),
    )
    p.add_argument("campaign", help="campaign TOML file, a bundled campaign by name "
                   "(emulated-table3, table3, ...), or `kernels` to price a kernel table")
    p.add_argument("--devices", default=None,
                   help="comma-separated catalog devices (datasets/devices.toml), e.g. gtx1080,rtx2070,titanx")
    p.add_argument("--input", default=None, help="kernels: the kernel table (.parquet or .csv)")
    p.add_argument("-o", "--output", default=None, help="kernels: output table (.parquet or .csv)")
    p.add_argument("--kernel-params", default=None,
                   help="kernels: kernel-model parameters JSON (default: the fitted ones)")
    p.add_argument("--out", default="runs/emulated", help="output root (default runs/emulated)")
    p.add_argument("--seed", type=int, default=0, help="noise seed (default 0)")
    p.add_argument("--graph-cache", default=None, help="graph cache folder (default ~/.cache/gpuscope/graphs)")
    p.add_argument("--params", default=None, help="emulator parameters JSON (default: calibrated)")
    add_catalog_option(p)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from gpuscope.cluster.devices import parse_device_list
    from gpuscope.core.errors import InputError

    if args.campaign == "kernels":
        return _kernels(args)
    if not args.devices:
        raise InputError("emulate: --devices is required for a campaign")
    devices = parse_device_list(args.devices)  # unknown name: exit 2 before work
    from gpuscope.core.io import check_output
    from gpuscope.emulator.params import EmulatorParams, default_params
    from gpuscope.emulator.runs import CostCache, emulate_campaign
    from gpuscope.profiling import load_campaign

    check_output(args.out, [args.campaign, args.params, args.catalog], kind="dir",
                 what="runs root")
    camp = load_campaign(args.campaign)
    params = EmulatorParams.load(args.params) if args.params else default_params()
    summary = emulate_campaign(
        camp.jobs, devices, args.out, seed=args.seed, params=params, period_s=camp.period_s,
        costs=CostCache(cache_dir=args.graph_cache), progress=not args.quiet,
    )
    print(json.dumps({"campaign": camp.name, "out": args.out, "runs": summary}))
    return 0


def _kernels(args: argparse.Namespace) -> int:
    """``gpuscope emulate kernels``: a NeuSight-schema table priced row by row."""
    import pandas as pd

    from gpuscope.cluster.devices import parse_device_list
    from gpuscope.core.errors import InputError
    from gpuscope.core.io import check_output, read_table, write_table
    from gpuscope.emulator.kernels import KernelParams, default_kernel_params, predict_table

    if not args.input or not args.output:
        raise InputError("emulate kernels: needs --input TABLE and -o OUTPUT")
    check_output(args.output, [args.input, args.kernel_params, args.catalog], what="kernel table")
    df = read_table(args.input, "kernel table")
    if args.devices:
        names = [d.name for d in parse_device_list(args.devices)]
        df = pd.concat([df.assign(device=n) for n in names], ignore_index=True)
    elif "device" not in df.columns:
        raise InputError(f"kernel table {args.input} has no device column: give --devices")
    params = (KernelParams.load(args.kernel_params) if args.kernel_params
              else default_kernel_params())
    out = df.assign(pred_ms=predict_table(df, params))  # the catalog with --catalog's GPUs
    write_table(out, args.output, [args.input], "kernel table")
    print(json.dumps({"rows": len(out), "out": args.output, "provenance": "emulated"}))
    return 0
