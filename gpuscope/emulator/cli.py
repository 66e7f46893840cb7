"""``gpuscope emulate``: emulated campaigns into runs folders, kernel tables priced; ``gpuscope
emulator fit``: a profiled GPU's figures (docs/emulator.md)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
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

    e = subparsers.add_parser("emulator", help="emulator maintenance: fit a profiled GPU's "
                                               "figures")
    sub = e.add_subparsers(dest="emulator_command", metavar="ACTION", required=True,
                           parser_class=type(e))
    f = sub.add_parser(
        "fit", help="fit a GPU's catalog figures on its kernel sweep (gpuscope profile kernels)",
        description="Fit the compute peaks (FP32, TF32, FP16/BF16 tensor cores), DRAM "
                    "bandwidth and host floors of DEVICE on its kernel sweep, the kernel "
                    "model's class parameters held, and write OUT/devices.toml (its catalog "
                    "entry, for --catalog), OUT/kernel_params.json (the kernel parameters with "
                    "its floors) and OUT/fit.json (scales, floors, fit quality). "
                    "docs/emulator.md, Kernel model.")
    f.add_argument("--kernels", required=True, help="kernel table (.parquet or .csv)")
    f.add_argument("--device", required=True,
                   help="the profiled device (its --device-name in the table); a catalog GPU, "
                        "or a new one with --like")
    f.add_argument("--like", help="catalog GPU to start a new GPU's figures from, e.g. h100")
    f.add_argument("-o", "--out", required=True, help="output folder")
    f.add_argument("--kernel-params", default=None,
                   help="kernel-model parameters JSON (default: the fitted ones)")
    add_catalog_option(f)
    f.set_defaults(func=_fit)


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


def _fit(args: argparse.Namespace) -> int:
    """``gpuscope emulator fit``: a profiled GPU's catalog entry (``calibration.profiled``)."""
    import sys

    from gpuscope.core.io import check_output_folder, output_folder, read_table
    from gpuscope.emulator.calibration.profiled import fit_profiled, write_profiled
    from gpuscope.emulator.kernels import KernelParams, default_kernel_params

    inputs = [args.kernels, args.kernel_params, args.catalog]
    check_output_folder(args.out, "emulator fit", inputs)
    df = read_table(args.kernels, "kernel table")
    params = (KernelParams.load(args.kernel_params) if args.kernel_params
              else default_kernel_params())
    like = args.like.strip().lower() if args.like else None
    res = fit_profiled(df, args.device.strip().lower(), params, like, str(args.kernels))
    with output_folder(args.out, "emulator fit", inputs) as tmp:  # replaced as a whole
        written = write_profiled(res, tmp, inputs)
    paths = {k: str(Path(args.out) / Path(v).name) for k, v in written.items()}
    if res.report["provenance"] == "cpu-only":
        sys.stderr.write(f"note: {args.kernels} was measured without a GPU (device_kind "
                         f"{res.report['device_kind']}): the fitted figures describe CPU "
                         "times, not a GPU\n")
    r = res.report
    print(json.dumps({"device": res.name, **paths, "rows": r["rows"], "scales": r["scales"],
                      "bw_scale": r["bw_scale"], "median_abs_log": r["median_abs_log"]}))
    return 0
