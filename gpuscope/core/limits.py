"""Limits on sizes, counts and numbers, checked before anything is allocated.

Two kinds of checks:

- **argparse types** (:func:`pos_int`, :func:`nonneg_int`, :func:`finite_float`, ...): a bad
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

from gpuscope.core.errors import InputError

#: Largest integer any option takes (a count above this is a typo, and NumPy/PyTorch overflow).
MAX_INT: int = 2**31 - 1
#: Largest seed (NumPy's legacy ``RandomState`` takes seeds below 2**32).
MAX_SEED: int = 2**32 - 1
#: Fraction of available memory a command may plan to use when ``GPUSCOPE_MAX_MEMORY_MB`` is unset.
MEMORY_FRACTION: float = 0.5
#: Environment variable overriding the memory budget, in MB.
MEMORY_ENV: str = "GPUSCOPE_MAX_MEMORY_MB"


def _int(text: str) -> int:
    try:
        f = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if not math.isfinite(f) or not f.is_integer():
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")
    v = int(f) if "e" in text.lower() or "." in text else int(text)
    if abs(v) > MAX_INT:
        raise argparse.ArgumentTypeError(f"{text} is out of range (at most {MAX_INT})")
    return v


def nonneg_int(text: str) -> int:
    """An integer >= 0 (and <= :data:`MAX_INT`)."""
    v = _int(text)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return v


def pos_int(text: str) -> int:
    """An integer >= 1 (and <= :data:`MAX_INT`)."""
    v = _int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return v


def seed_int(text: str) -> int:
    """A random seed: an integer in [0, 2**32 - 1]."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a seed is an integer, got {text!r}") from None
    if not 0 <= v <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"a seed is in [0, {MAX_SEED}], got {text}")
    return v


def finite_float(text: str) -> float:
    """A finite number (no NaN, no infinity)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return v


def nonneg_float(text: str) -> float:
    """A finite number >= 0."""
    v = finite_float(text)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return v


def pos_float(text: str) -> float:
    """A finite number > 0."""
    v = finite_float(text)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return v


def pos_float_or_inf(text: str) -> float:
    """A number > 0, ``inf`` allowed (e.g. an interval where inf means "never")."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not v > 0:  # also refuses NaN
        raise argparse.ArgumentTypeError(f"must be > 0 (or inf), got {text}")
    return v


def unit_float(text: str) -> float:
    """A number in [0, 1] (a probability, a discount)."""
    v = finite_float(text)
    if not 0 <= v <= 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {text}")
    return v


def fraction(text: str) -> float:
    """A number in (0, 1]."""
    v = finite_float(text)
    if not 0 < v <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text}")
    return v


def check_finite(name: str, value: float, *, low: float | None = None,
                 high: float | None = None, origin: str = "") -> float:
    """``value`` as a float, refused (``InputError``) when NaN, infinite or outside
    ``[low, high]``; ``origin`` (a file) prefixes the message."""
    where = f"{origin}: " if origin else ""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{where}{name} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise InputError(f"{where}{name} must be a finite number, got {value!r}")
    if low is not None and v < low:
        raise InputError(f"{where}{name} must be >= {low:g}, got {value!r}")
    if high is not None and v > high:
        raise InputError(f"{where}{name} must be <= {high:g}, got {value!r}")
    return v


def memory_budget() -> int:
    """Bytes a command may plan to allocate: ``$GPUSCOPE_MAX_MEMORY_MB`` MB when set, else
    :data:`MEMORY_FRACTION` of psutil's available memory."""
    env = os.environ.get(MEMORY_ENV, "").strip()
    if env:
        try:
            mb = float(env)
        except ValueError:
            raise InputError(f"${MEMORY_ENV} must be a number of MB, got {env!r}") from None
        if not math.isfinite(mb) or mb <= 0:
            raise InputError(f"${MEMORY_ENV} must be a positive number of MB, got {env!r}")
        return int(mb * 2**20)
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
