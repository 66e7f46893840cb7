"""``gpuscope emulate``: emulated campaigns into runs folders (issue 4; docs/emulator.md)."""

from __future__ import annotations

import argparse
import json
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "emulate",
        help="emulate a profiling campaign on catalog GPUs (writes runs folders)",
        description=(
            "Emulate every job of CAMPAIGN (a campaign TOML, e.g. campaigns/table3.toml) on each "
            "catalog device and write one runs folder per device (<out>/<device>/: ledger.sqlite "
            "+ traces/, provenance=emulated), resumable; then `gpuscope profile build-dataset`."
        ),
    )
    p.add_argument("campaign", help="campaign TOML file")
    p.add_argument("--devices", required=True,
                   help="comma-separated catalog devices (datasets/devices.toml), e.g. gtx1080,rtx2070,titanx")
    p.add_argument("--out", default="runs/emulated", help="output root (default runs/emulated)")
    p.add_argument("--seed", type=int, default=0, help="noise seed (default 0)")
    p.add_argument("--graph-cache", default=None, help="graph cache folder (default ~/.cache/gpuscope/graphs)")
    p.add_argument("--params", default=None, help="emulator parameters JSON (default: calibrated)")
    p.add_argument("--catalog", default=None, help="device catalog TOML (default datasets/devices.toml)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from gpuscope.cluster.devices import parse_device_list

    devices = parse_device_list(args.devices, args.catalog)  # unknown name: exit 2 before work
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
