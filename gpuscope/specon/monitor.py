"""Algorithm 1 of seed 004 (SpeCon, Mao et al.): the Container Monitor, as a pure state machine.

Every container starts in PC (progressing) with ``migrated = False``. At each tick ``t_m`` the
monitor computes the growth ``G(t_m) = |E(t_m) - E(t_{m-1})|`` (Eq. 1, line 5) of each
non-migrated container's evaluation function E (its loss) and:

* ``G(t_m) < G(t_{m-1})`` and ``G(t_m) < α`` (a decreasing, small gain): PC → WC, WC → CC
  (the text; the pseudocode's lines 10–12 repeat PC → WC, a typo), CC stays CC and
  — only in that CC-stays case — a ``Request-Reallocation(w_i, c_j)`` is sent when
  ``|PC| + |WC| > request_min`` (line 15; our reading: per worker by default, ``request_min = 1``);
* ``G(t_m) ≥ G(t_{m-1})`` and ``G(t_m) < α``: unchanged (bouncing gains, lines 17–18);
* ``G(t_m) ≥ α``: back to PC (lines 19–22; the paper writes ``> α``, equality is measure-zero).

So a container needs three decreasing sub-α gains before it asks to move. ``G(t_{m-1})`` is
+∞ before the first gain: the first tick only records E.

How E and G are read (the paper leaves it open: ``growth`` × ``smoothing``):

* ``absolute``: ``|Ē_m − Ē_{m−1}|`` (the paper's Eq. 1, literal);
* ``relative-prev``: divided by ``|Ē_{m−1}|``;
* ``relative-init`` (default): divided by ``|Ē_0|``, the first observation — α "a percentage"
  of the initial loss, the only reading that works across loss scales (VAE ≈ 100s, CE ≈ 0–2);
* Ē is the job's last logged loss (``last``, literal), the mean loss over the interval
  (``interval-mean``, default) or an EMA of the last values (``ema``); the caller supplies it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum

GROWTHS: tuple[str, ...] = ("relative-init", "relative-prev", "absolute")
SMOOTHINGS: tuple[str, ...] = ("interval-mean", "last", "ema")
SCOPES: tuple[str, ...] = ("worker", "cluster")


class Category(str, Enum):
    """PC progressing, WC watching, CC converged (§IV-A)."""

    PC = "PC"
    WC = "WC"
    CC = "CC"


@dataclass
class Container:
    """One container's monitor state (and its place in the cluster).

    Attributes:
        job: the job's id.
        worker: index of the worker it runs on.
        category: its current category.
        migrated: set once Algorithm 2 decided on it (moved or stayed); Algorithm 1 skips it.
        rebalanced: set once Algorithm 3 moved it.
        t_migrated: ``t_{c_j}``, when it was marked migrated (Algorithm 3's converged duration).
        e0, e_prev: first and previous observed Ē; ``g_prev`` the previous gain (+∞ at first).
    """

    job: int
    worker: int
    category: Category = Category.PC
    migrated: bool = False
    rebalanced: bool = False
    t_migrated: float | None = None
    e0: float | None = None
    e_prev: float | None = None
    g_prev: float = math.inf
    history: list[tuple[float, float, str]] = field(default_factory=list)  # (t, G, category)


def growth(e_now: float, e_prev: float, e0: float, mode: str = "relative-init") -> float:
    """Eq. 1 with the chosen normalisation (see the module docstring)."""
    g = abs(e_now - e_prev)
    if mode == "absolute":
        return g
    den = abs(e_prev) if mode == "relative-prev" else abs(e0)
    return g / den if den > 0 else math.inf
    # (a zero reference loss cannot be normalised against: treat the job as still moving)


def transition(category: Category, g: float, g_prev: float, alpha: float) -> tuple[Category, bool]:
    """Algorithm 1, lines 6–22, for one container: ``(new category, wants_request)``.

    ``wants_request`` is True only in the CC-stays case (a fourth-or-later decreasing sub-α
    gain); whether the request is sent depends on line 15's count, checked by the caller.
    """
    if g < alpha and g < g_prev:
        if category is Category.PC:
            return Category.WC, False
        if category is Category.WC:
            return Category.CC, False
        return Category.CC, True
    if g < alpha:  # g >= g_prev: bouncing, keep the category
        return category, False
    return Category.PC, False


def observe(c: Container, e_now: float, t: float, alpha: float, growth_mode: str) -> bool:
    """Feed one observation Ē(t) to a non-migrated container; returns ``wants_request``."""
    if c.e_prev is None or c.e0 is None:
        c.e0 = c.e_prev = e_now  # first tick: record E only
        return False
    g = growth(e_now, c.e_prev, c.e0, growth_mode)
    c.category, wants = transition(c.category, g, c.g_prev, alpha)
    c.g_prev, c.e_prev = g, e_now
    c.history.append((t, g, c.category.value))
    return wants


def growing(containers: Iterable[Container]) -> int:
    """``|PC| + |WC|``."""
    return sum(1 for c in containers if c.category is not Category.CC)


def monitor_tick(
    containers: Sequence[Container],
    losses: dict[int, float],
    t: float,
    alpha: float,
    growth_mode: str = "relative-init",
    request_scope: str = "worker",
    request_min: int = 1,
) -> list[Container]:
    """One tick of Algorithm 1 over all active containers; returns those sending a request.

    ``losses`` maps job id → Ē(t) for the containers observed this tick (a container without
    an entry — paused, or with no new log line — is skipped). Categories are all updated
    first and line 15's count is then read, so the result does not depend on container order.
    """
    if growth_mode not in GROWTHS:
        raise ValueError(f"growth must be one of {GROWTHS}, got {growth_mode!r}")
    if request_scope not in SCOPES:
        raise ValueError(f"request_scope must be one of {SCOPES}, got {request_scope!r}")
    wants = [c for c in containers
             if not c.migrated and c.job in losses
             and observe(c, losses[c.job], t, alpha, growth_mode)]
    out = []
    for c in wants:
        pool = containers if request_scope == "cluster" else [
            o for o in containers if o.worker == c.worker]
        if growing(pool) > request_min:
            out.append(c)
    return out


__all__ = ["Category", "Container", "GROWTHS", "SCOPES", "SMOOTHINGS", "growing", "growth",
           "monitor_tick", "observe", "transition"]
