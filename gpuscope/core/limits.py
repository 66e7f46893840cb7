"""Limits on sizes, counts and numbers, checked before anything is allocated.

Two kinds of checks:

- **bounded numbers** (:func:`parse_number`): one parser for every number, from the
  command line (:func:`bounded` makes the argparse types :data:`pos_int`, :data:`nonneg_int`,
  :data:`finite_float`, ...) or from a file (:func:`check_number`, :func:`check_seconds`;
  strings: :func:`check_text`). ``True`` is not a number, NaN never passes, an integer is at
  most :data:`MAX_INT`, a time at most :data:`MAX_SECONDS`. A bad
  number on the command line is one ``gpuscope <cmd>: error: argument --x: ...`` line and exit
  code 2. ``gpuscope.cli`` applies :func:`nonneg_int` to every plain ``type=int`` option and
  :func:`nonneg_float` to every plain ``type=float`` option, so no option takes a negative, NaN
  or infinite value unless its stage says so with an explicit type.
- **memory estimates** (:func:`check_memory`): a command that allocates arrays sized by the
  user's counts estimates the bytes (bytes per element x counts) and refuses, with one line
  naming the limit, above :func:`memory_budget`: ``$GPUSCOPE_MAX_MEMORY_MB`` when set, else half
  of the memory psutil reports available.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable

from gpuscope.core.errors import InputError

#: Largest integer any option takes (a count above this is a typo, and NumPy/PyTorch overflow).
MAX_INT: int = 2**31 - 1
#: Largest seed (NumPy's legacy ``RandomState`` takes seeds below 2**32).
MAX_SEED: int = 2**32 - 1
#: Fraction of available memory a command may plan to use when ``GPUSCOPE_MAX_MEMORY_MB`` is unset.
MEMORY_FRACTION: float = 0.5
#: Environment variable overriding the memory budget, in MB.
MEMORY_ENV: str = "GPUSCOPE_MAX_MEMORY_MB"


#: Largest time in seconds any input takes (about 31,700 years): a simulated clock stays
#: exact to well under a millisecond, so adding a step always moves it.
MAX_SECONDS: float = 1e12
#: Most GPUs one node (or VM type) may have.
MAX_GPUS: int = 1024
#: Largest price in $/h any input takes.
MAX_COST: float = 1e9
#: Largest tardiness weight (a cost multiplier; larger ones overflow the schedulers' costs).
MAX_WEIGHT: float = 1e6
#: Longest name (job id, model, dataset, device, ...) an input may hold.
MAX_NAME_LEN: int = 256
#: Longest path or source spelling (module path, HF spec) an input may hold.
MAX_PATH_LEN: int = 4096

Number = int | float


def parse_number(value: object, *, integer: bool = False, low: float | None = None,
                 high: float | None = None, low_open: bool = False,
                 allow_inf: bool = False) -> Number:
    """``value`` (a string from the command line or a file, or a parsed number) as an int or
    a float within bounds; ``ValueError`` with the reason otherwise. ``True``/``False`` are
    not numbers; NaN never passes; infinity only with ``allow_inf``; an integer is within
    :data:`MAX_INT` unless ``high`` says otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"must be {'an integer' if integer else 'a number'}, got {value!r}")
    if isinstance(value, (int, float)):
        f: float | int = value
    else:
        text = str(value).strip()
        try:
            f = int(text) if integer and text.lstrip("+-").isdigit() else float(text)
        except (ValueError, OverflowError):
            raise ValueError(f"must be {'an integer' if integer else 'a number'}, "
                             f"got {_short(value)}") from None
    if isinstance(f, float) and math.isnan(f):
        raise ValueError(f"must be a finite number, got {_short(value)}")
    if isinstance(f, float) and math.isinf(f) and not allow_inf:
        raise ValueError(f"must be a finite number, got {_short(value)}")
    if integer:
        if isinstance(f, float) and (math.isinf(f) or not f.is_integer()):
            raise ValueError(f"must be an integer, got {_short(value)}")
        if high is None and abs(f) > MAX_INT:
            raise ValueError(f"{_short(value)} is out of range (at most {MAX_INT})")
        f = int(f)
    if low is not None and (f <= low if low_open else f < low):
        raise ValueError(f"must be {'>' if low_open else '>='} {_num(low)}, got {_short(value)}")
    if high is not None and f > high:
        raise ValueError(f"must be <= {_num(high)}, got {_short(value)}")
    return f


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e10 else f"{x:g}"


def _short(value: object) -> str:
    s = repr(value) if not isinstance(value, str) else value
    return s if len(s) <= 40 else s[:37] + "..."


def bounded(name: str, *, integer: bool = False, low: float | None = None,
            high: float | None = None, low_open: bool = False,
            allow_inf: bool = False) -> Callable[[str], Number]:
    """An argparse ``type`` named ``name`` that parses with :func:`parse_number` and these
    bounds: a bad value is one ``argument --x: <reason>`` line and exit code 2."""

    def parse(text: str) -> Number:
        try:
            return parse_number(text, integer=integer, low=low, high=high, low_open=low_open,
                                allow_inf=allow_inf)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    parse.__name__ = parse.__qualname__ = name
    parse.__doc__ = f"argparse type: {'an integer' if integer else 'a number'}" + (
        f" {'>' if low_open else '>='} {low:g}" if low is not None else "") + (
        f" and <= {high:g}" if high is not None else "") + (", inf allowed" if allow_inf else "")
    return parse


#: An integer in [0, MAX_INT].
nonneg_int = bounded("nonneg_int", integer=True, low=0)
#: An integer in [1, MAX_INT].
pos_int = bounded("pos_int", integer=True, low=1)
#: A random seed: an integer in [0, 2**32 - 1].
seed_int = bounded("seed_int", integer=True, low=0, high=MAX_SEED)
#: A finite number.
finite_float = bounded("finite_float")
#: A finite number >= 0.
nonneg_float = bounded("nonneg_float", low=0)
#: A finite number > 0.
pos_float = bounded("pos_float", low=0, low_open=True)
#: A number > 0, ``inf`` allowed (an interval where inf means "never").
pos_float_or_inf = bounded("pos_float_or_inf", low=0, low_open=True, allow_inf=True)
#: A number in [0, 1] (a probability, a discount).
unit_float = bounded("unit_float", low=0, high=1)
#: A number in (0, 1].
fraction = bounded("fraction", low=0, low_open=True, high=1)


def check_number(name: str, value: object, *, integer: bool = False, low: float | None = None,
                 high: float | None = None, low_open: bool = False, allow_inf: bool = False,
                 origin: str = "") -> Number:
    """A value read from a file, checked like a command-line option (:func:`parse_number`);
    ``InputError`` naming ``origin`` (a file, a row) and the field otherwise."""
    try:
        return parse_number(value, integer=integer, low=low, high=high, low_open=low_open,
                            allow_inf=allow_inf)
    except ValueError as e:
        raise InputError(f"{origin + ': ' if origin else ''}{name} {e}") from None


def check_finite(name: str, value: float, *, low: float | None = None,
                 high: float | None = None, origin: str = "") -> float:
    """``value`` as a finite float within ``[low, high]`` (see :func:`check_number`)."""
    return float(check_number(name, value, low=low, high=high, origin=origin))


def check_seconds(name: str, value: object, origin: str = "", *, allow_none: bool = False
                  ) -> float | None:
    """A time in seconds in [0, :data:`MAX_SECONDS`] (None passes with ``allow_none``)."""
    if value is None and allow_none:
        return None
    return float(check_number(name, value, low=0, high=MAX_SECONDS, origin=origin))


def check_text(name: str, value: object, *, max_len: int = MAX_NAME_LEN, origin: str = "",
               empty: bool = True) -> str:
    """``value`` as a string of at most ``max_len`` characters (a name, an id, a path)."""
    where = f"{origin + ': ' if origin else ''}{name}"
    if not isinstance(value, str):
        raise InputError(f"{where} must be text, got {_short(value)}")
    if len(value) > max_len:
        raise InputError(f"{where} is {len(value):,} characters long, over the limit of "
                         f"{max_len}")
    if not empty and not value.strip():
        raise InputError(f"{where} must not be empty")
    return value


def env_bytes(name: str) -> int | None:
    """``$name`` read as a positive, finite number of MB, in bytes; None when unset or blank;
    anything else is one :class:`InputError` line naming the variable."""
    env = os.environ.get(name, "").strip()
    if not env:
        return None
    try:
        mb = float(env)
    except ValueError:
        raise InputError(f"${name} must be a number of MB, got {env!r}") from None
    if not math.isfinite(mb) or mb <= 0:
        raise InputError(f"${name} must be a positive number of MB, got {env!r}")
    return int(mb * 2**20)


def env_count(name: str) -> int | None:
    """``$name`` read as a positive whole number (``10e6`` and ``10_000_000`` spell it too);
    None when unset or blank; anything else is one :class:`InputError` line naming the
    variable."""
    env = os.environ.get(name, "").strip()
    if not env:
        return None
    try:
        n = float(env.replace("_", ""))
    except ValueError:
        raise InputError(f"${name} must be a whole number, got {env!r}") from None
    if not math.isfinite(n) or n < 1 or not n.is_integer():
        raise InputError(f"${name} must be a positive whole number, got {env!r}")
    return int(n)


def memory_budget() -> int:
    """Bytes a command may plan to allocate: ``$GPUSCOPE_MAX_MEMORY_MB`` MB when set, else
    :data:`MEMORY_FRACTION` of psutil's available memory."""
    limit = env_bytes(MEMORY_ENV)
    if limit is not None:
        return limit
    import psutil

    return int(psutil.virtual_memory().available * MEMORY_FRACTION)


def _fmt(n: float) -> str:
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("kB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def check_memory(what: str, nbytes: float) -> None:
    """Refuse (``InputError``) when ``what`` would need more than :func:`memory_budget` bytes.

    ``nbytes`` is an estimate (bytes per element x the user's counts); the message names the
    estimate, the limit and how to change it.
    """
    budget = memory_budget()
    if nbytes > budget:
        src = (f"${MEMORY_ENV}" if os.environ.get(MEMORY_ENV, "").strip()
               else f"{MEMORY_FRACTION:.0%} of available memory; set ${MEMORY_ENV} to change")
        raise InputError(f"{what} needs about {_fmt(nbytes)}, over the limit of "
                         f"{_fmt(budget)} ({src})")


def check_count(what: str, n: int, limit: int) -> None:
    """Refuse (``InputError``) a count above a documented ``limit``."""
    if n > limit:
        raise InputError(f"{what} is {n}, over the limit of {limit}")
