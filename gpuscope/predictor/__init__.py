"""Predictor: a job's resource use and execution time on a GPU type, from its graph.

The default predictor (``physics``: ``gpuscope train``, ``predict``, ``evaluate``,
``allocate`` and the bundled ``<device>.pt`` / ``multi.pt``) learns per-target corrections to
the emulator's analytic estimate, with a domain guard. Seed 001's Driple GNN (``gnn``:
``--arch gnn``, the bundled ``*-driple.pt`` and ``amd-epyc.pt``) is the other kind. Both
satisfy one contract (:mod:`gpuscope.predictor.base`):

* ``load_predictor(path)`` opens either kind as a ``Predictor``, whose ``predict(jobs)``
  returns one row per job with the columns ``PREDICTION_COLUMNS`` (targets, ``step_s``,
  ``oom_prob``, ``oom``, ``in_domain``, ``domain_reason``);
* ``fit(datasets, arch=...)`` trains either kind, ``save(predictor, path)`` writes it;
* ``evaluate(checkpoint, dataset)`` scores a checkpoint per split
  (:mod:`gpuscope.predictor.evaluation`: the leave-family-out split and the scorer);
* ``domain_warning(frame)`` is the one out-of-domain line every command prints.

Internals live in the subpackages :mod:`gpuscope.predictor.physics` and
:mod:`gpuscope.predictor.gnn`.
"""

from __future__ import annotations

from gpuscope.core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "Predictor": ".base", "PREDICTION_COLUMNS": ".base", "load_predictor": ".base",
    "fit": ".base", "save": ".base", "domain_warning": ".base", "evaluate": ".evaluation",
})
