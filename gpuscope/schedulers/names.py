"""The schedulers' names a user types: methods, Path Relinking objectives, selection proxies.

They live in a module that imports nothing, so ``gpuscope schedule --help`` lists them without
loading NumPy; :mod:`~gpuscope.schedulers.methods` and :mod:`~gpuscope.schedulers.proxies`
check their arguments against them.
"""

from __future__ import annotations

#: Scheduling methods by CLI name (``make_method``).
METHODS: tuple[str, ...] = ("fifo", "edf", "ps", "greedy", "rg", "pr")
#: PathRelinking objectives: ``p1a`` (default, improved) or ``eq1`` (seed 002 as written).
PR_OBJECTIVES: tuple[str, ...] = ("p1a", "eq1")
#: Selection proxies of Randomized Greedy and Path Relinking (``proxies``), default first.
PROXIES: tuple[str, ...] = ("cost", "reference", "p1a")
