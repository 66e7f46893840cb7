"""The one command, ``gpuscope``.

Each stage registers its own subcommands from ``gpuscope/<stage>/cli.py``, which defines
``register(subparsers) -> None``; every subcommand sets ``func`` (a callable taking the parsed
``argparse.Namespace`` and returning an exit code) with ``parser.set_defaults(func=...)``.
Stage CLI modules import heavy libraries (torch, tensorflow) inside their handlers so that
``gpuscope --help`` stays fast.

Bad input raises ``gpuscope.errors.InputError``; ``main`` prints it as one line and exits 2.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence

from gpuscope import __version__
from gpuscope.errors import InputError

#: Stage CLI modules, in pipeline order. A module that does not exist yet is skipped.
STAGE_CLIS: tuple[str, ...] = (
    "gpuscope.jobs_cli",
    "gpuscope.graphs.cli",
    "gpuscope.workloads.cli",
    "gpuscope.profiling.cli",
    "gpuscope.emulator.cli",
    "gpuscope.emulator.estimate_cmd",
    "gpuscope.predictor.cli",
    "gpuscope.allocator.cli",
    "gpuscope.schedulers.cli",
    "gpuscope.mdrl.cli",
    "gpuscope.specon.cli",
    "gpuscope.slurm.cli",
    "gpuscope.demo",
)


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="gpuscope",
        description=(
            "Profile GPUs with real training jobs, predict jobs' resource use from their "
            "computational graphs, allocate heterogeneous GPU clusters, export t_jng tables."
        ),
    )
    parser.add_argument("--version", action="version", version=f"gpuscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    for mod_name in STAGE_CLIS:
        try:
            if importlib.util.find_spec(mod_name) is None:
                continue
        except ModuleNotFoundError:  # the stage package itself is not there yet
            continue
        mod = importlib.import_module(mod_name)
        mod.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 0 if args.command is None else 2
    try:
        rc = func(args)
    except InputError as e:
        sys.stderr.write(f"gpuscope: error: {e}\n")
        return 2
    except BrokenPipeError:  # `gpuscope graph show g.json | head`: the reader left, not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        sys.stderr.write("gpuscope: interrupted; finished work is kept\n")
        return 130
    return int(rc or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
