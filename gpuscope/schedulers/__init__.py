"""Cost-based online schedulers over t_jng tables: FIFO, EDF, PS, Greedy, Randomized Greedy
(seed 000 Alg. 1, seed 002 Alg. 1) and Path Relinking (seed 002 Alg. 2), an online simulator
with preemption and migration, an instance generator (seed 002 §4.1) and the reference
scheduler's folder format (``gpuscope.core.tjng``).
"""

from gpuscope.schedulers.methods import (
    METHODS,
    FirstPrinciple,
    PathRelinking,
    RandomizedGreedy,
    make_method,
)
from gpuscope.schedulers.model import Params, Problem, compile_instance, load_problem, save_problem
from gpuscope.schedulers.simulate import SimResult, simulate
from gpuscope.schedulers.step import Decision, StepState

__all__ = [
    "METHODS", "Decision", "FirstPrinciple", "Params", "PathRelinking", "Problem",
    "RandomizedGreedy", "SimResult", "StepState", "compile_instance", "load_problem",
    "make_method", "save_problem", "simulate",
]
