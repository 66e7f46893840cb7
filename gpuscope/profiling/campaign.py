"""Profiling campaigns: a TOML matrix of jobs, run into a resumable runs folder.

The default campaign is seed 001 Table 3 (``campaigns/table3.toml``: 12 CNNs × {imagenet,
cifar10} and 3 generative models × mnist, × {sgd, adam} × {8, 16, 32, 64} × {10, 20} epochs
= 432 jobs). A campaign file::

    [campaign]
    name = "cpu-small"
    timeout_s = 120          # per run
    period_s = 0.1666667     # sampling period (seed 001: 1/6 s)
    steps_per_epoch = 4      # shortens every run (optional)
    optimizers = ["sgd", "adam"]
    batch_sizes = [8, 32]
    epochs = [1, 2]
    precisions = ["fp32"]    # fp32, tf32, amp-fp16, amp-bf16 (optional; default fp32)

    [[matrix]]               # one or more groups; each may override the lists above
    models = ["lenet", "resnet20"]
    datasets = ["cifar10"]

Runs are recorded in ``<out>/ledger.sqlite`` after their trace is in place, so a campaign is
resumable and a kill (even SIGKILL) loses at most the run in flight.

A campaign holds the runs folder's lock (``ledger.campaign_lock``), opens the ledger
for its device and provenance (another device's folder is refused), re-runs ``error`` runs
with ``retry_errors``, and aborts with one line when the environment is broken: the first
:data:`ENV_FAILURE_RUNS` runs all failing with the same error before training a step (a bad
``--job-device``, a missing entry point) are not recorded, so a fixed rerun makes them.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuscope.core.errors import InputError
from gpuscope.core.io import read_toml
from gpuscope.core.limits import check_number
from gpuscope.jobs.spec import JobSpec
from gpuscope.profiling.ledger import Ledger, campaign_lock
from gpuscope.profiling.runner import RunOptions, run_job
from gpuscope.profiling.trace import DEFAULT_PERIOD_S, TraceMeta

_CAMPAIGN_KEYS = {
    "name", "description", "timeout_s", "period_s", "steps_per_epoch", "optimizers",
    "batch_sizes", "epochs", "memory_limit_mb", "framework", "precisions",
}
_GROUP_KEYS = {"models", "datasets", "optimizers", "batch_sizes", "epochs", "steps_per_epoch",
               "framework", "precisions"}


@dataclass
class Campaign:
    """A parsed campaign: its jobs (deduplicated by run key, matrix order) and run settings."""

    name: str
    jobs: list[JobSpec]
    timeout_s: float = 600.0
    period_s: float = DEFAULT_PERIOD_S
    memory_limit_mb: int | None = None
    description: str = ""
    source: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


#: Most jobs a campaign matrix may expand to (no size may exhaust memory).
MAX_CAMPAIGN_JOBS: int = 100_000


def _list(where: str, key: str, v: Any, typ: type) -> list[Any]:
    vals = v if isinstance(v, list) else [v]
    if not vals:
        raise InputError(f"{where}: {key} is empty")
    for x in vals:
        if typ is int and (isinstance(x, bool) or not isinstance(x, int)):
            raise InputError(f"{where}: {key} must hold integers, got {x!r}")
        if typ is str and not isinstance(x, str):
            raise InputError(f"{where}: {key} must hold strings, got {x!r}")
    return vals


def _positive(where: str, key: str, v: Any, integer: bool = False) -> Any:
    """A TOML number > 0 (an integer when ``integer``), bounded like a command-line option."""
    if not isinstance(v, (int, float)) or (integer and not isinstance(v, int)):
        raise InputError(f"{where}: {key} must be a positive {'integer' if integer else 'number'}"
                         f", got {v!r}")
    return check_number(key, v, integer=integer, low=0, low_open=True, origin=where)


def parse_campaign(data: dict[str, Any], source: str = "<campaign>") -> Campaign:
    """Validate a campaign mapping (parsed TOML) into a :class:`Campaign`."""
    head = data.get("campaign", {})
    if not isinstance(head, dict):
        raise InputError(f"{source}: [campaign] must be a table")
    unknown = sorted(set(data) - {"campaign", "matrix"}) + sorted(set(head) - _CAMPAIGN_KEYS)
    if unknown:
        raise InputError(f"{source}: unknown key(s): {', '.join(unknown)}")
    groups = data.get("matrix")
    if not isinstance(groups, list) or not groups or not all(isinstance(g, dict) for g in groups):
        raise InputError(f"{source}: needs at least one [[matrix]] group")
    timeout_s = float(_positive(source, "timeout_s", head.get("timeout_s", 600.0)))
    period_s = float(_positive(source, "period_s", head.get("period_s", DEFAULT_PERIOD_S)))
    mem = head.get("memory_limit_mb")
    if mem is not None:
        _positive(source, "memory_limit_mb", mem, integer=True)
    jobs: dict[str, JobSpec] = {}
    for gi, g in enumerate(groups):
        where = f"{source} [[matrix]] #{gi + 1}"
        bad = sorted(set(g) - _GROUP_KEYS)
        if bad:
            raise InputError(f"{where}: unknown key(s): {', '.join(bad)}")
        if "models" not in g or "datasets" not in g:
            raise InputError(f"{where}: needs models and datasets")

        def get(key: str, default: Any, g: dict[str, Any] = g) -> Any:
            return g.get(key, head.get(key, default))

        models = _list(where, "models", g["models"], str)
        datasets = _list(where, "datasets", g["datasets"], str)
        opts = _list(where, "optimizers", get("optimizers", ["sgd", "adam"]), str)
        bss = _list(where, "batch_sizes", get("batch_sizes", [8, 16, 32, 64]), int)
        eps = _list(where, "epochs", get("epochs", [10, 20]), int)
        spe = get("steps_per_epoch", None)
        if spe is not None:
            _positive(where, "steps_per_epoch", spe, integer=True)
        framework = get("framework", "pytorch")
        precs = _list(where, "precisions", get("precisions", ["fp32"]), str)
        n_group = len(models) * len(datasets) * len(opts) * len(bss) * len(eps) * len(precs)
        if len(jobs) + n_group > MAX_CAMPAIGN_JOBS:
            raise InputError(f"{where}: the matrix holds over {MAX_CAMPAIGN_JOBS} jobs "
                             f"({n_group} in this group)")
        for m, ds, o, b, e, pr in itertools.product(models, datasets, opts, bss, eps, precs):
            try:
                j = JobSpec(m, ds, o, b, e, steps_per_epoch=spe, framework=framework,
                            precision=pr)
            except InputError as err:
                raise InputError(f"{where}: {err}") from None
            jobs.setdefault(j.key, j)
    return Campaign(
        name=str(head.get("name", Path(source).stem)), jobs=list(jobs.values()),
        timeout_s=timeout_s, period_s=period_s, memory_limit_mb=mem,
        description=str(head.get("description", "")), source=source,
    )


def bundled_campaigns() -> list[str]:
    """Names of the bundled campaigns (``datasets/campaigns/<name>.toml``, in the wheel)."""
    from gpuscope.core.data import bundled

    return sorted(p.stem for p in bundled("campaigns").glob("*.toml"))


def resolve_campaign(path_or_name: str | Path) -> Path:
    """A campaign file: an existing path, else the bundled campaign of that name (``table3``,
    ``cpu-small``, also ``cpu-small.toml``), else one ``InputError`` line listing them."""
    p = Path(path_or_name)
    if p.exists() or len(p.parts) != 1:
        return p
    from gpuscope.core.data import bundled

    b = bundled("campaigns", p.name if p.suffix == ".toml" else f"{p.name}.toml")
    if b.is_file():
        return b
    raise InputError(f"campaign {str(path_or_name)!r} not found; give a TOML file or a "
                     f"bundled campaign: {', '.join(bundled_campaigns()) or 'none'}")


def load_campaign(path: str | Path) -> Campaign:
    """Read and validate a campaign TOML file (or a bundled campaign by name:
    :func:`resolve_campaign`); any problem is one :class:`InputError` line."""
    path = resolve_campaign(path)
    return parse_campaign(read_toml(path, "campaign"), str(path))


#: This many first runs failing alike at start-up abort the campaign (environment failure).
ENV_FAILURE_RUNS = 3


def pending_jobs(campaign: Campaign, ledger: Ledger, max_runs: int | None = None,
                 retry_errors: bool = False) -> list[JobSpec]:
    """Jobs of the campaign not yet in the ledger (for its device and provenance), in matrix
    order, at most ``max_runs``; ``retry_errors``: runs recorded as ``error`` count as
    pending."""
    done = ledger.done_ids(retry_errors)
    todo = [j for j in campaign.jobs if j.key not in done]
    return todo if max_runs is None else todo[:max_runs]


def remove_stale_temps(out_dir: str | Path) -> int:
    """Delete temp trace files a killed campaign left behind (never a finished trace)."""
    n = 0
    for p in (Path(out_dir) / "traces").glob(".*.tmp"):
        p.unlink(missing_ok=True)
        n += 1
    return n


def run_options(campaign: Campaign, device_name: str, **overrides: Any) -> RunOptions:
    kw: dict[str, Any] = {
        "device_name": device_name, "timeout_s": campaign.timeout_s,
        "period_s": campaign.period_s, "memory_limit_mb": campaign.memory_limit_mb,
    }
    kw.update({k: v for k, v in overrides.items() if v is not None})
    return RunOptions(**kw)


def _startup_failure(meta: TraceMeta) -> bool:
    """An ``error`` run that never trained a step (no result line, no loss log)."""
    return meta.status == "error" and not meta.result.get("loss_log") and \
        not meta.result.get("steps")


def _one_line(text: str) -> str:
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return lines[0][:300] if lines else "no error message"


class StartupCheck:
    """The environment check of a campaign (module docstring), for any backend: feed it each
    finished run; it returns the runs to record now, holds the first start-up failures back,
    and raises one :class:`InputError` line (deleting their traces) when the first
    :data:`ENV_FAILURE_RUNS` results all failed alike at start-up."""

    def __init__(self, n_pending: int, runs: int = ENV_FAILURE_RUNS) -> None:
        self.runs = runs
        self.active = n_pending >= runs
        self.held: list[tuple[TraceMeta, Path]] = []

    def add(self, meta: TraceMeta, trace: Path) -> list[tuple[TraceMeta, Path]]:
        self.held.append((meta, trace))
        if self.active and _startup_failure(meta):
            if len(self.held) < self.runs:
                return []
            if len({m.error for m, _ in self.held}) == 1:
                for _, t in self.held:  # not results: a rerun in a fixed environment makes them
                    t.unlink(missing_ok=True)
                raise InputError(
                    f"environment failure: the first {len(self.held)} runs all failed at "
                    f"start-up with: {_one_line(self.held[0][0].error)} (nothing recorded; "
                    "check --job-device / --command / the Python environment)")
        self.active = False
        return self.rest()

    def rest(self) -> list[tuple[TraceMeta, Path]]:
        """The runs still held (fewer results than the check needs): record them as they are."""
        out, self.held = self.held, []
        return out


def run_campaign(
    campaign: Campaign,
    out_dir: str | Path,
    opts: RunOptions,
    max_runs: int | None = None,
    progress: bool = True,
    retry_errors: bool = False,
) -> Counter[str]:
    """Run the campaign's pending jobs one after another (local backend).

    Each run: subprocess + sampling → trace written to a temp file and renamed into
    ``traces/<run_id>.parquet`` → ledger row committed. Returns counts by status of the runs
    made now. While the first runs all fail at start-up, their results wait for the
    environment check (module docstring) before they are recorded; finished runs never wait.
    """
    from tqdm import tqdm

    out = Path(out_dir)
    counts: Counter[str] = Counter()
    with campaign_lock(out), Ledger(out / "ledger.sqlite", device=opts.device_name,
                                    provenance="measured") as ledger:
        remove_stale_temps(out)
        todo = pending_jobs(campaign, ledger, max_runs, retry_errors)
        check = StartupCheck(len(todo))
        bar = tqdm(todo, desc=f"profile {campaign.name}", unit="run", disable=not progress)
        for job in bar:
            bar.set_postfix_str(job.key, refresh=False)
            trace = out / "traces" / f"{job.key}.parquet"
            meta = run_job(job, trace, opts)
            counts[meta.status] += 1
            try:
                ready = check.add(meta, trace)
            except InputError:
                bar.close()
                raise
            for m, t in ready:
                ledger.record(m, t)
            bar.set_postfix(counts, refresh=False)
        for m, t in check.rest():
            ledger.record(m, t)
    return counts
