"""SpeCon (seed 004, Mao et al.): convergence-aware speculative container placement and
migration — Algorithms 1–3, a co-location simulator, sharing models, loss curves, k8s output.

Names load on first use (:mod:`gpuscope.core.lazy`).
"""

from __future__ import annotations

from gpuscope.core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "LossCurve": ".losscurve", "fit": ".losscurve", "preset": ".losscurve",
    "Category": ".monitor", "Container": ".monitor", "monitor_tick": ".monitor",
    "Decision": ".scheduler", "reallocate": ".scheduler", "reallocate_srpt": ".scheduler",
    "rebalance": ".scheduler",
    "SharingModel": ".sharing",
    "SimConfig": ".simulate", "SimResult": ".simulate", "run_policies": ".simulate",
    "simulate": ".simulate",
})
