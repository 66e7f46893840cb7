"""SpeCon (seed 004, Mao et al.): convergence-aware speculative container placement and
migration — Algorithms 1–3, a co-location simulator, sharing models, loss curves, k8s output."""

from gpuscope.specon.losscurve import LossCurve, fit, preset
from gpuscope.specon.monitor import Category, Container, monitor_tick
from gpuscope.specon.scheduler import Decision, reallocate, reallocate_srpt, rebalance
from gpuscope.specon.sharing import SharingModel
from gpuscope.specon.simulate import SimConfig, SimResult, run_policies, simulate

__all__ = ["Category", "Container", "Decision", "LossCurve", "SharingModel", "SimConfig",
           "SimResult", "fit", "monitor_tick", "preset", "reallocate", "reallocate_srpt",
           "rebalance", "run_policies", "simulate"]
