"""Emulated vs measured, per model family (``benchmarks/emulator_fidelity.py``).

Gavel's job types (``datasets/measured/gavel-throughputs.csv``, measured on K80/P100/V100 at 1-8 GPUs) map to
the faithful PyTorch versions in ``gpuscope.workloads.models.gavel`` (ResNet-50 to the
catalog's ``resnet50``); per family the benchmark compares absolute single-GPU steps/s, the
V100/K80 and P100/K80 ratios and the 2/4/8-GPU speed-ups, as log(emulated / measured), and
counts (job, device pair) orders that agree. Families declared in ``FIT_FAMILIES`` are the
ones the calibration was fitted on; every other family is held out.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from gpuscope.cluster.devices import get_device
from gpuscope.core.data import gavel_entries, parse_job_type
from gpuscope.emulator.calibration.fit import Point
from gpuscope.emulator.multigpu import speedup
from gpuscope.emulator.params import EmulatorParams
from gpuscope.emulator.perf import GraphCost, estimate
from gpuscope.graphs.opgraph import OpGraph
from gpuscope.jobs.spec import DATASETS, DatasetSpec

#: Gavel model -> (gpuscope model, dataset, optimizer). ResNet-50 is the catalog's.
GAVEL_FAMILIES: dict[str, tuple[str, str, str]] = {
    "ResNet-50": ("resnet50", "imagenet", "sgd"),
    "ResNet-18": ("resnet18", "cifar10", "sgd"),
    "Transformer": ("transformer_base", "multi30k", "adam"),
    "LM": ("lstm_lm", "wikitext2", "sgd"),
    "Recommendation": ("rec_autoencoder", "ml20m", "adam"),
    "CycleGAN": ("cyclegan", "monet2photo", "adam"),
    "A3C": ("a3c", "pong", "adam"),
}
#: Families (and what) the calibration was fitted on; the rest are held out.
FIT_FAMILIES: dict[str, str] = {
    "ResNet-50": "architecture efficiencies (1 GPU), all-reduce overlap/link (2/4/8 GPUs), "
                 "ctx_switch_us (with ResNet-18) on its identical-pair colocations",
    "ResNet-18": "loader_handoff_ms (DataLoader workers' per-batch hand-off) on its P100 steps/s, "
                 "ctx_switch_us (with ResNet-50) on its identical-pair colocations",
}


@dataclass(frozen=True)
class GavelJob:
    """A Gavel job type as the emulator and the predictor's ``FeatureBuilder`` read a job: the
    fields ``estimate`` reads, for models the catalog's JobSpec does not list (the graph is
    traced from ``gpuscope.workloads.models.gavel`` by ``gavel_graph``)."""

    model: str
    dataset: str
    optimizer: str
    batch_size: int
    epochs: int = 1
    steps_per_epoch: int = 1
    precision: str = "fp32"
    job_id: str | None = None

    @property
    def steps(self) -> int:
        return self.steps_per_epoch

    @property
    def total_steps(self) -> int:
        return self.steps_per_epoch * self.epochs

    @property
    def graph_key(self) -> str:
        return f"gavel-{self.model}-{self.dataset}-{self.optimizer}-b{self.batch_size}"

    @property
    def key(self) -> str:
        return f"{self.graph_key}-e{self.epochs}-s{self.steps_per_epoch}"

    @cached_property
    def dataset_spec(self) -> DatasetSpec:
        return DATASETS[self.dataset]


def gavel_graph(model: str, batch: int, name: str | None = None) -> OpGraph:
    """Trace one training step of a Gavel model (meta device) into an OpGraph."""
    from gpuscope.graphs.frontends.torch import trace_train_step
    from gpuscope.workloads.models.gavel import gavel_step

    gs = gavel_step(model, batch)
    return trace_train_step(gs.step, gs.batch, gs.modules, gs.optimizers,
                            name=name or f"gavel-{model}-b{batch}", meta=gs.meta)


def gavel_cost(model: str, batch: int) -> GraphCost:
    """One training step of a Gavel model as a GraphCost (``gavel_graph``)."""
    return GraphCost.from_graph(gavel_graph(model, batch), batch)


def gavel_points(gavel: pd.DataFrame, resnet50_cost: object = None) -> tuple[list[Point], list[Point]]:
    """Single-GPU and multi-GPU points of every Gavel job type (label ``Family-bB``).
    ``resnet50_cost(batch) -> GraphCost`` supplies the catalog ResNet-50's graphs."""
    costs: dict[tuple[str, int], GraphCost] = {}
    single, multi = [], []
    base = gavel[gavel.n_gpus == 1].set_index(["device", "job_type"])["steps_per_s"]
    for r in gavel.itertuples():
        if r.model not in GAVEL_FAMILIES:
            continue
        model, ds, opt = GAVEL_FAMILIES[r.model]
        b = int(r.batch_size) or 1
        if (model, b) not in costs:
            costs[(model, b)] = (resnet50_cost(b) if model == "resnet50" and resnet50_cost  # type: ignore[operator]
                                 else gavel_cost(model, b))
        job = GavelJob(model, ds, opt, b)
        label = f"{r.model}-b{b}"
        dev = get_device(r.device)
        if r.n_gpus == 1:
            single.append(Point(job, costs[(model, b)], dev, r.steps_per_s, 1, label))
        elif (r.device, r.job_type) in base.index:
            multi.append(Point(job, costs[(model, b)], dev,
                               r.steps_per_s / base[(r.device, r.job_type)], r.n_gpus, label))
    return single, multi


def family_of(label: str) -> str:
    return label.rsplit("-b", 1)[0]


def comparisons(single: list[Point], multi: list[Point], params: EmulatorParams) -> pd.DataFrame:
    """One row per comparison: family, kind (abs, ratio, scaling), measured, emulated."""
    rows = []
    emu = {(p.label, p.device.name): 1.0 / estimate(p.job, p.cost, p.device, params).iter_s
           for p in single}
    meas = {(p.label, p.device.name): p.measured for p in single}
    for (label, dev), m in meas.items():
        rows.append({"family": family_of(label), "kind": "abs", "what": f"{label} {dev}",
                     "measured": m, "emulated": emu[(label, dev)]})
        if dev != "k80" and (label, "k80") in meas:
            rows.append({"family": family_of(label), "kind": "ratio", "what": f"{label} {dev}/k80",
                         "measured": m / meas[(label, "k80")],
                         "emulated": emu[(label, dev)] / emu[(label, "k80")]})
    for p in multi:
        e = estimate(p.job, p.cost, p.device, params)
        rows.append({"family": family_of(p.label), "kind": "scaling",
                     "what": f"{p.label} {p.device.name} x{p.n_gpus}", "measured": p.measured,
                     "emulated": speedup(e.iter_s, p.cost.param_bytes, p.device, p.n_gpus, params)})
    df = pd.DataFrame(rows)
    df["log_err"] = np.log(df.emulated / df.measured)
    return df


def order_agreement(single: list[Point], params: EmulatorParams) -> pd.DataFrame:
    """Per (job, device pair): does the emulator order the two devices as measured?"""
    by: dict[str, dict[str, tuple[float, float]]] = {}
    for p in single:
        e = 1.0 / estimate(p.job, p.cost, p.device, params).iter_s
        by.setdefault(p.label, {})[p.device.name] = (p.measured, e)
    rows = []
    for label, d in by.items():
        for a, b in itertools.combinations(sorted(d), 2):
            (ma, ea), (mb, eb) = d[a], d[b]
            rows.append({"family": family_of(label), "job": label, "pair": f"{a}/{b}",
                         "correct": (ma > mb) == (ea > eb)})
    return pd.DataFrame(rows)


def family_table(comp: pd.DataFrame, order: pd.DataFrame) -> pd.DataFrame:
    """Median |log(emulated/measured)| per family and kind, overall, and order agreement."""
    rows = []
    for fam, g in comp.groupby("family"):
        row = {"family": fam, "fit": "fit" if fam in FIT_FAMILIES else "held out",
               "n": len(g), "median_abs_log": float(np.median(np.abs(g.log_err)))}
        for kind in ("abs", "ratio", "scaling"):
            k = g[g.kind == kind]
            row[kind] = float(np.median(np.abs(k.log_err))) if len(k) else float("nan")
        o = order[order.family == fam]
        row["order_correct_pct"] = 100.0 * float(o.correct.mean()) if len(o) else float("nan")
        rows.append(row)
    return pd.DataFrame(rows).sort_values(["fit", "family"]).reset_index(drop=True)


def colocation_points(data: dict[str, Any], single: list[Point],
                      families: Iterable[str] | None = None) -> list[Point]:
    """Gavel's identical-pair colocations: two copies of one job type on one GPU, each its own
    process (Gavel's space sharing, without MPS). ``measured`` is one copy's steps/s over the
    job's steps/s alone; ``cost`` is the single point's graph with ``workers`` doubled (two
    processes time-slicing the GPU, ``hostwork.time_sliced_gpu_s``). Only job types with a
    single point in ``single`` (same label and device), of ``families`` when given; pairs
    Gavel did not run (zero throughput) are left out."""
    by = {(p.label, p.device.name): p for p in single}
    out = []
    for dev, job_type, n, entry in gavel_entries(data):
        pair = entry.get(f"('{job_type}', {n})") if n == 1 else None
        alone = float(entry.get("null", 0.0) or 0.0)
        if not pair or float(pair[0]) <= 0 or alone <= 0:
            continue
        model, batch = parse_job_type(job_type)
        if families is not None and model not in families:
            continue
        label = f"{model}-b{batch or 1}"
        p = by.get((label, dev))
        if p is not None:
            out.append(Point(p.job, replace(p.cost, workers=2 * p.cost.workers), p.device,
                             float(pair[0]) / alone, 1, label))
    return out
