"""Cost-based online schedulers over t_jng tables: FIFO, EDF, PS, Greedy, Randomized Greedy
(seed 000 Alg. 1, seed 002 Alg. 1) and Path Relinking (seed 002 Alg. 2), an online simulator
with preemption and migration, an instance generator (seed 002 §4.1) and the reference
scheduler's folder format (``gpuscope.core.tjng``).

Names load on first use (:mod:`gpuscope.core.lazy`).
"""

from __future__ import annotations

from gpuscope.core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "METHODS": ".names", "FirstPrinciple": ".methods", "PathRelinking": ".methods",
    "RandomizedGreedy": ".methods", "make_method": ".methods",
    "Params": ".model", "Problem": ".model", "compile_instance": ".model",
    "load_problem": ".model", "save_problem": ".model",
    "SimResult": ".simulate", "simulate": ".simulate",
    "Decision": ".step", "StepState": ".step",
})
