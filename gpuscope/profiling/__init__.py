"""Profiling: samplers (NVML, psutil), runner, campaign ledger, labeling, plots, Ray backend
(seed 001 §2.2–2.3, §3.1, Fig. 2–3; Driple).

Public API (design.md, Project contracts):

* :class:`TraceMeta`, :func:`write_trace`, :func:`read_trace` — a run's trace file;
* :class:`Ledger` — the campaign's SQLite ledger (``is_done``, ``record``, ``runs``);
* :class:`Sampler` — NVML + psutil sampling thread; :func:`run_job` — one job, sampled;
* :func:`load_campaign`, :func:`run_campaign` — a TOML matrix into a resumable runs folder;
* :func:`label_trace`, :func:`label_runs` — burst/idle/peak/exec-time labels;
* :func:`build_dataset` — labels + encoded graphs → ``datasets/<provenance>/<device>/``;
* :func:`plot_trace` — seed 001 Fig. 2 for one run;
* :func:`sweep_kernels` — a resumable single-kernel sweep on the local torch device
  (``gpuscope profile kernels``; schema in ``kernelschema``, shapes in ``kernelplan``).

Names load on first use (:mod:`gpuscope.core.lazy`).
"""

from __future__ import annotations

from gpuscope.core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "Campaign": ".campaign", "load_campaign": ".campaign", "parse_campaign": ".campaign",
    "run_campaign": ".campaign",
    "build_dataset": ".dataset",
    "LABEL_COLUMNS": ".labeling", "label_runs": ".labeling", "label_trace": ".labeling",
    "Ledger": ".ledger",
    "plot_trace": ".plot",
    "RunOptions": ".runner", "run_job": ".runner",
    "Sampler": ".samplers",
    "DEFAULT_PERIOD_S": ".trace", "TraceMeta": ".trace", "read_meta": ".trace",
    "read_trace": ".trace", "write_trace": ".trace",
    "sweep_kernels": ".kernels",
})
