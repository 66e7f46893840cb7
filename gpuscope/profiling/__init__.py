"""Profiling: samplers (NVML, psutil), runner, campaign ledger, labeling, plots, Ray backend
(seed 001 §2.2–2.3, §3.1, Fig. 2–3; Driple).

Public API (design.md, Project contracts):

* :class:`TraceMeta`, :func:`write_trace`, :func:`read_trace` — a run's trace file;
* :class:`Ledger` — the campaign's SQLite ledger (``is_done``, ``record``, ``runs``);
* :class:`Sampler` — NVML + psutil sampling thread; :func:`run_job` — one job, sampled;
* :func:`load_campaign`, :func:`run_campaign` — a TOML matrix into a resumable runs folder;
* :func:`label_trace`, :func:`label_runs` — burst/idle/peak/exec-time labels;
* :func:`build_dataset` — labels + encoded graphs → ``datasets/<provenance>/<device>/``;
* :func:`plot_trace` — seed 001 Fig. 2 for one run.
"""

from gpuscope.profiling.campaign import Campaign, load_campaign, parse_campaign, run_campaign
from gpuscope.profiling.dataset import build_dataset
from gpuscope.profiling.labeling import LABEL_COLUMNS, label_runs, label_trace
from gpuscope.profiling.ledger import Ledger
from gpuscope.profiling.plot import plot_trace
from gpuscope.profiling.runner import RunOptions, run_job
from gpuscope.profiling.samplers import Sampler
from gpuscope.profiling.trace import DEFAULT_PERIOD_S, TraceMeta, read_meta, read_trace, write_trace

__all__ = [
    "DEFAULT_PERIOD_S", "LABEL_COLUMNS", "Campaign", "Ledger", "RunOptions", "Sampler",
    "TraceMeta", "build_dataset", "label_runs", "label_trace", "load_campaign",
    "parse_campaign", "plot_trace", "read_meta", "read_trace", "run_campaign", "run_job",
    "write_trace",
]
