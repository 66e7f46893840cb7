"""``gpuscope devices list|show|add`` and the ``--catalog`` option of every command that takes
device names (:func:`add_catalog_option`).

    gpuscope devices add my-gpu --like a100 --spec mem_gb=48,sm_count=84,boost_clock_mhz=1740
    gpuscope devices add my-gpu --from-nvml --like a100   # on the GPU's host: NVML's figures
    gpuscope devices list
    gpuscope devices show my-gpu
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from gpuscope.core.errors import InputError

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


def _catalog_type(text: str) -> str:
    """``--catalog FILE``: the user catalog of this process (``devices.use_catalog``); a bad
    file is the parser's one-line error."""
    from gpuscope.cluster.devices import use_catalog

    try:
        return str(use_catalog(text))
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_catalog_option(p: argparse.ArgumentParser) -> None:
    """``--catalog FILE``: a device catalog (TOML) whose GPUs join the bundled ones for this
    command (default: the user catalog ``gpuscope devices add`` writes, if it exists)."""
    p.add_argument("--catalog", type=_catalog_type, metavar="FILE",
                   help="your device catalog (TOML, docs/devices.md) added to the bundled "
                        "one (default: ~/.config/gpuscope/devices.toml when it exists)")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("devices", help="the GPU catalog: list, show, add a new GPU type")
    sub = p.add_subparsers(dest="devices_command", metavar="ACTION", required=True,
                           parser_class=type(p))
    ls = sub.add_parser("list", help="every GPU type: bundled and yours")
    add_catalog_option(ls)
    ls.set_defaults(func=_list)
    sh = sub.add_parser("show", help="every field of one GPU type, with its source")
    sh.add_argument("name")
    add_catalog_option(sh)
    sh.set_defaults(func=_show)
    a = sub.add_parser(
        "add", help="describe a new GPU type in your catalog",
        description="Write a GPU type to your device catalog (never the bundled one). Fields "
                    "come from --spec, from NVML (--from-nvml), and the rest from --like "
                    "(peaks and bandwidth scaled by SM count x clock).")
    a.add_argument("name", help="the new GPU type's name (lower case: letters, digits, . - _)")
    a.add_argument("--like", help="catalog GPU to take the missing fields from, e.g. a100")
    a.add_argument("--spec", help="fields as KEY=VALUE,... e.g. mem_gb=48,sm_count=84")
    a.add_argument("--from-nvml", action="store_true",
                   help="read name, memory, SMs, clocks, bandwidth from this host's GPU")
    a.add_argument("--gpu-index", type=int, default=0, help="GPU that --from-nvml reads")
    a.add_argument("--catalog", metavar="FILE",
                   help="catalog file to write (default: ~/.config/gpuscope/devices.toml)")
    a.add_argument("--force", action="store_true", help="replace your entry of that name")
    a.set_defaults(func=_add)


def _origin() -> dict[str, str]:
    from gpuscope.cluster.devices import user_catalog_path, user_devices

    return {n: f"user ({user_catalog_path()})" for n in user_devices()}


def _list(args: argparse.Namespace) -> int:
    from gpuscope.cluster.devices import load_catalog

    cat, origin = load_catalog(), _origin()
    head = ("name", "arch", "fp32 TFLOP/s", "fp16 tensor", "tf32 tensor", "mem GB", "GB/s",
            "SMs", "catalog")
    rows = [head] + [(d.name, d.arch, f"{d.fp32_tflops:g}", f"{d.tensor_tflops:g}",
                      f"{d.tf32_tflops:g}", f"{d.mem_gb:g}", f"{d.mem_bw_gbs:g}",
                      str(d.sm_count), origin.get(d.name, "bundled"))
                     for d in sorted(cat.values(), key=lambda d: d.name)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return 0


def _show(args: argparse.Namespace) -> int:
    from gpuscope.cluster.devices import get_device

    d = get_device(args.name)
    print(f"{d.name} ({_origin().get(d.name, 'bundled')})")
    for k, v in d.to_dict().items():
        if k == "name":
            continue
        src = d.sources.get(k, "")
        print(f"  {k:<20} {v!s:<28} {src}")
    return 0


def _add(args: argparse.Namespace) -> int:
    from gpuscope.cluster.devices import _parse, load_catalog, user_catalog_path
    from gpuscope.cluster.usercatalog import HEADER, new_entry, parse_spec, read_entries, to_toml
    from gpuscope.core.io import write_text

    name = args.name.strip()
    if not _NAME.match(name):
        raise InputError(f"device name {name!r}: lower-case letters, digits, '.', '-', '_' "
                         "(like h100 or my-gpu)")
    path = Path(args.catalog) if args.catalog else user_catalog_path()
    if path.resolve() == _bundled_path():
        raise InputError(f"{path} is the bundled catalog; devices add writes your own "
                         "(default ~/.config/gpuscope/devices.toml)")
    entries = read_entries(path)
    from gpuscope.cluster.devices import DEFAULT_CATALOG

    bundled = load_catalog(DEFAULT_CATALOG)
    if name in bundled:
        raise InputError(f"{name!r} is a bundled GPU type (gpuscope devices show {name}); "
                         "give your device another name")
    if name in entries and not args.force:
        raise InputError(f"{name!r} is already in {path}; --force replaces it")
    known = {**bundled, **(load_catalog(path) if entries else {})}
    fields = None
    if args.from_nvml:
        from gpuscope.cluster.nvml import gpu_spec

        spec, sources, ident = gpu_spec(index=args.gpu_index)
        fields = (spec, sources)
        sys.stderr.write(f"NVML: {ident['name']}, {ident['memory_total_mb']:.0f} MiB, driver "
                         f"{ident['driver']}: {', '.join(f'{k}={v}' for k, v in spec.items())}\n")
    entry, guessed = new_entry(name, args.like, parse_spec(args.spec), fields, known)
    spec_obj = _parse(name, entry, path)  # the same checks as loading: a bad value fails here
    entries[name] = entry
    write_text(path, to_toml(entries, HEADER), what="device catalog")
    print(f"added {spec_obj.name} ({spec_obj.arch}, {spec_obj.fp32_tflops:g} FP32 TFLOP/s, "
          f"{spec_obj.mem_gb:g} GB, {spec_obj.mem_bw_gbs:g} GB/s, {spec_obj.sm_count} SMs) "
          f"to {path}")
    if guessed:
        sys.stderr.write(f"note: {', '.join(guessed)} taken from {args.like} (peaks and "
                         "bandwidth scaled by SM count x clock): give them with --spec "
                         "KEY=VALUE if you know better (gpuscope devices show "
                         f"{name})\n")
    return 0


def _bundled_path() -> Path:
    from gpuscope.cluster.devices import DEFAULT_CATALOG

    return DEFAULT_CATALOG.resolve()
