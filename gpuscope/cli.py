"""The one command, ``gpuscope``.

Each stage registers its own subcommands from ``gpuscope/<stage>/cli.py``, which defines
``register(subparsers) -> None``; every subcommand sets ``func`` (a callable taking the parsed
``argparse.Namespace`` and returning an exit code) with ``parser.set_defaults(func=...)``;
``demo`` (what ``make demo`` runs) is defined here. ``register`` reads only light modules
(names and defaults) and handlers import torch, pandas and the like, so ``gpuscope --help``
and ``gpuscope <cmd> --help`` load none of them (``tests/test_cli_startup.py``).

Bad input raises ``gpuscope.core.errors.InputError``; ``main`` prints it as one line and exits 2.
Every plain ``type=int`` option takes an integer in [0, 2**31 - 1] and every plain
``type=float`` option a finite number >= 0 (:func:`_bound_numbers`); a stage that
needs other bounds gives the option an explicit type from :mod:`gpuscope.core.limits`. An
``OSError`` that escapes a command (a file that vanished, a full disk) is one line too.
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
from collections.abc import Sequence

from gpuscope import __version__
from gpuscope.core.errors import InputError

#: Room CLI modules, in pipeline order.
STAGE_CLIS: tuple[str, ...] = (
    "gpuscope.cluster.cli",
    "gpuscope.jobs.cli",
    "gpuscope.graphs.cli",
    "gpuscope.workloads.cli",
    "gpuscope.profiling.cli",
    "gpuscope.emulator.cli",
    "gpuscope.emulator.table",
    "gpuscope.predictor.cli",
    "gpuscope.allocator.cli",
    "gpuscope.schedulers.cli",
    "gpuscope.mdrl.cli",
    "gpuscope.specon.cli",
    "gpuscope.slurm.cli",
)


def _no_default(action: argparse.Action) -> bool:
    """An option without a default worth stating: None, a flag's False, suppressed (by
    identity: a default of 0 is stated)."""
    return action.default is None or action.default is False or \
        action.default is argparse.SUPPRESS


class DefaultsFormatter(argparse.HelpFormatter):
    """``--help`` states every option's default: ``(default: X)`` is appended to a help text
    that does not already say its default (options without one, None or a flag, excepted)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (not action.option_strings or _no_default(action) or text == argparse.SUPPRESS
                or "default" in text.lower()):
            return text
        return f"{text} (default: %(default)s)"


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr and exit code 2, and whose help
    states every default (:class:`DefaultsFormatter`)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def error(self, message: str) -> None:  # type: ignore[override]
        where = self.prog.removeprefix("gpuscope").strip()
        sys.stderr.write(f"gpuscope: error: {where + ': ' if where else ''}"
                         f"{_one_line(message)}\n")
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
        importlib.import_module(mod_name).register(sub)
    d = sub.add_parser("demo", help="run the main job on bundled defaults (what `make demo` runs)",
                       description=_demo.__doc__)
    d.add_argument("--graphs", action="store_true",
                   help="print the graph summary of the default catalog instead")
    d.set_defaults(func=_demo)
    _bound_numbers(parser)
    _help_for_defaults(parser)
    return parser


def _help_for_defaults(parser: argparse.ArgumentParser) -> None:
    """An option with a default but no help text gets ``default: X`` as its help (argparse
    prints nothing for an option without help, so :class:`DefaultsFormatter` cannot)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sp in dict.fromkeys(action.choices.values()):
                _help_for_defaults(sp)
        elif action.option_strings and action.help is None and not _no_default(action):
            action.help = "default: %(default)s"


def _demo(args: argparse.Namespace) -> int:
    """Seed 001's Table 4 experiment on bundled defaults: the bundled predictor checkpoints
    predict the scheduler workload on one gtx1080, one rtx2070 and one titanx; every placement
    policy is simulated with FIFO and SJF on the bundled ground truth, and the policy
    comparison table is printed."""
    if args.graphs:
        from gpuscope.graphs import catalog_summary
        from gpuscope.jobs.spec import MODEL_DATASETS, JobSpec

        jobs = [JobSpec(m, ds[0], "adam", 32, 10) for m, ds in MODEL_DATASETS.items()]
        print(catalog_summary(jobs).to_string(index=False))
        return 0
    from gpuscope.allocator.reproduce import run_demo

    return run_demo()


def _bound_numbers(parser: argparse.ArgumentParser) -> None:
    """Give every plain ``int``/``float`` option of every (sub)parser the bounded types of
    :mod:`gpuscope.core.limits`: no negative count, NaN, infinity or 10**30 reaches a command."""
    from gpuscope.core.limits import nonneg_float, nonneg_int, seed_int

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sp in dict.fromkeys(action.choices.values()):
                _bound_numbers(sp)
        elif action.type is int:
            action.type = seed_int if action.dest == "seed" else nonneg_int
        elif action.type is float:
            action.type = nonneg_float


def _one_line(msg: str) -> str:
    return " ".join(msg.split()) or "error"


def main(argv: Sequence[str] | None = None) -> int:
    _terminate_as_interrupt()
    try:
        parser = build_parser()
    except KeyboardInterrupt:
        sys.stderr.write("gpuscope: interrupted\n")
        return 130
    return run(parser, argv)


def _terminate_as_interrupt() -> None:
    """SIGTERM unwinds like Ctrl-C: temporary files and folders are removed on the way out
    and the exit code is 130 (SIGKILL leaves them to the next start's sweep)."""
    import signal
    import threading

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)


def run(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` with ``parser`` and run the chosen subcommand: bad input, an ``OSError``
    or a hung service is one line on stderr and exit code 2, an interrupt 130 (every entry
    point shares this, so none prints a traceback for bad input)."""
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # a bad option was one line on stderr: return its code (2)
        if e.code == 2:
            return 2
        raise
    except KeyboardInterrupt:
        sys.stderr.write("gpuscope: interrupted\n")
        return 130
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 0 if args.command is None else 2
    try:
        rc = func(args)
    except InputError as e:
        sys.stderr.write(f"gpuscope: error: {_one_line(str(e))}\n")
        return 2
    except BrokenPipeError:  # `gpuscope graph show g.json | head`: the reader left, not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as e:  # the safety net: an environment failure is one line, not a traceback
        from gpuscope.core.io import disk_full

        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        why = "the disk is full (No space left on device)" if disk_full(e) else \
            str(e.strerror or e)
        sys.stderr.write(f"gpuscope: error: {_one_line(where + why)}\n")
        return 2
    except subprocess.TimeoutExpired as e:  # a service (sinfo, sbatch, ...) that hangs
        cmd = e.cmd[0] if isinstance(e.cmd, (list, tuple)) and e.cmd else e.cmd
        sys.stderr.write(f"gpuscope: error: {cmd} did not answer within {e.timeout:g} s\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("gpuscope: interrupted; finished work is kept\n")
        return 130
    return int(rc or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
