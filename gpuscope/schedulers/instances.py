"""Instance generation (seed 002 §4.1) over any t_jng source.

Sources (all ``measured`` data of others, the project's tables in ``datasets/measured/``):

* ``alexnet``: PyTorch AlexNet classes on K80 and M60, 1–8 GPUs (``gpuscheduler-alexnet.csv``),
  priced with seed 002 Table 2's VM catalog (``gpuscheduler-vm-costs.csv``, the K80/M60 rows), cost model ``vm``.
* ``andreas``: ANDREAS's LSTM/EfficientNet/ConvolutionNet jobs on TESLA (1–2 GPUs) and TURING
  (1 GPU) (``andreas-jobs.csv``), fixed nodes, half ``TESLA`` with 2 GPUs and half ``TURING``
  with 1 (seed 000 §V-B, first scenario), energy cost per busy-GPU count
  (``andreas-node-costs.csv``), cost model ``per_gpu_count``.
* ``gavel``: Gavel's measured steps/s on K80, P100, V100 at 1–8 GPUs
  (``gavel-throughputs.csv``). t = total steps / steps per second; each job's total
  steps are drawn so that its 1-GPU V100 time is log-uniform in [1 h, 24 h] (typical
  Philly/Gavel job lengths; the seeds' AlexNet jobs run 7–63 h on a K80). Prices (assumed,
  per GPU-hour, linear in GPUs): K80 0.45, P100 1.46, V100 2.48 $/h.
* a t_jng CSV/parquet: one VM type per (node_type, n_gpus) priced at its ``cost_per_h``.

Instances: J = 10·N jobs; arrivals ``exponential`` (mean 75000/N s), or Poisson ``high``
(rate ε·k_max·λ, λ = 1 / median fastest time of the job classes, k_max = N × largest GPU
count), ``low`` (high / 4), ``mixed`` (alternating every 10 submissions); ε = 0.13, chosen
so that the high rate is about twice the exponential one at every N (seed 002 Fig. 2
and §4.4 report ~450 vs ~250 concurrent jobs at N = 100; its ε is not published);
d_j = r_j + U(min t_j, 3 min t_j); ω_j ~ U(0.003, 0.015) $/s; ρ = 100, μ = 1, H = 1 h.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from gpuscope.core.data import gavel_throughputs, measured_table
from gpuscope.core.errors import InputError
from gpuscope.core.limits import check_memory
from gpuscope.core.tjng import Instance, read_tjng, tjng_to_instance, validate_tjng
from gpuscope.schedulers.model import Params, Problem, compile_instance

SOURCES: tuple[str, ...] = ("alexnet", "andreas", "gavel")
ARRIVALS: tuple[str, ...] = ("exponential", "high", "low", "mixed")
EPSILON = 0.13
GAVEL_PRICE = {"k80": 0.45, "p100": 1.46, "v100": 2.48}


def source_tables(source: str | pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame | None, dict]:
    """(class t_jng table, VM catalog or None, extras) of a named source, a t_jng file or a
    t_jng DataFrame. extras: ``cost_model``, ``node_types`` (callable N -> list), ``steps_range``."""
    if isinstance(source, pd.DataFrame):
        return validate_tjng(source), None, {"cost_model": "vm", "app": "tjng"}
    if source == "alexnet":
        d = measured_table("gpuscheduler-alexnet")
        vm = measured_table("gpuscheduler-vm-costs")
        cat = pd.DataFrame({"VMtype": vm["vm_type"], "GPUtype": vm["gpu_type"], "nGPUs": vm["n_gpus"],
                            "cost": vm["cost_per_h"]})
        cat = cat[cat["GPUtype"].isin(["K80", "M60"])].reset_index(drop=True)
        d = d[d["gpu_type"].isin(["K80", "M60"])]
        price = cat.groupby(["GPUtype", "nGPUs"])["cost"].min()
        t = pd.DataFrame({"job_id": d["job"], "node_type": d["gpu_type"], "n_gpus": d["n_gpus"],
                          "exec_time_s": d["exec_time_s"], "source": "measured:gpuscheduler/alexnet"})
        t["cost_per_h"] = [price[(n, g)] if (n, g) in price.index else np.nan
                           for n, g in zip(t.node_type, t.n_gpus)]
        t["cost_per_h"] = t.groupby("node_type")["cost_per_h"].transform(lambda s: s.bfill().ffill())
        return validate_tjng(t), cat, {"cost_model": "vm", "app": "pytorch_alexnet"}
    if source == "andreas":
        d = measured_table("andreas-jobs")
        e = measured_table("andreas-node-costs")
        price = e.set_index(["gpu_type", "n_gpus"])["cost_per_h"]
        t = pd.DataFrame({"job_id": d["job"], "node_type": d["gpu_type"], "n_gpus": d["n_gpus"],
                          "exec_time_s": d["exec_time_s"], "source": "measured:gpuscheduler/andreas"})
        t["cost_per_h"] = [price[(n, g)] for n, g in zip(t.node_type, t.n_gpus)]
        cat = pd.DataFrame({"VMtype": ["TESLAx2", "TURINGx1"], "GPUtype": ["TESLA", "TURING"],
                            "nGPUs": [2, 1], "cost": [np.nan, np.nan]})
        return validate_tjng(t), cat, {"cost_model": "per_gpu_count", "energy": price,
                                       "node_types": lambda n: ["TESLAx2" if i % 2 == 0 else "TURINGx1" for i in range(n)]}
    if source == "gavel":
        raw = gavel_throughputs()
        rows = []
        for gpu in GAVEL_PRICE:
            for k, v in raw[gpu].items():
                name, g = ast.literal_eval(k)
                if v.get("null", 0) > 0:
                    rows.append((name, gpu.upper(), int(g), 1.0 / v["null"], GAVEL_PRICE[gpu] * int(g)))
        t = pd.DataFrame(rows, columns=["job_id", "node_type", "n_gpus", "exec_time_s", "cost_per_h"])
        t["source"] = "measured:gavel/throughputs"  # exec_time_s is seconds per step here
        t = t.groupby("job_id").filter(lambda s: ((s.node_type == "V100") & (s.n_gpus == 1)).any())
        cat = pd.DataFrame([(f"{n}x{g}", n, g, GAVEL_PRICE[n.lower()] * g)
                            for n in ("K80", "P100", "V100") for g in (1, 2, 4, 8)],
                           columns=["VMtype", "GPUtype", "nGPUs", "cost"])
        return validate_tjng(t), cat, {"cost_model": "vm", "steps_range": (3600.0, 86400.0)}
    path = Path(source)
    if path.suffix.lower() in (".csv", ".parquet"):
        return read_tjng(path), None, {"cost_model": "vm"}
    raise InputError(f"unknown source {source!r}; expected {', '.join(SOURCES)} or a t_jng .csv/.parquet")


def arrival_times(kind: str, n_jobs: int, n_nodes: int, fastest: np.ndarray, max_g: int,
                  rng: np.random.Generator) -> np.ndarray:
    """Submission times (s) of seed 002 §4.1's arrival scenarios, first job at 0."""
    if kind == "exponential":
        gaps = rng.exponential(75000.0 / n_nodes, n_jobs)
    elif kind in ("high", "low", "mixed"):
        high = EPSILON * n_nodes * max_g / float(np.median(fastest))
        low = high / 4.0
        if kind == "mixed":
            rate = np.where((np.arange(n_jobs) // 10) % 2 == 0, high, low)
        else:
            rate = np.full(n_jobs, high if kind == "high" else low)
        gaps = rng.exponential(1.0 / rate)  # Poisson arrivals: exponential gaps
    else:
        raise InputError(f"unknown arrivals {kind!r}; expected one of {', '.join(ARRIVALS)}")
    gaps[0] = 0.0
    return np.round(np.cumsum(gaps), 2)


def generate(source: str | pd.DataFrame, n_nodes: int, seed: int = 0, arrivals: str = "exponential",
             n_jobs: int | None = None, params: Params | None = None) -> Problem:
    """A random instance of seed 002 §4.1 over ``source`` (see module docstring)."""
    if n_nodes < 1:
        raise InputError(f"--nodes must be >= 1, got {n_nodes}")
    rng = np.random.default_rng(seed)
    tj, cat, extra = source_tables(source)
    J = n_jobs or 10 * n_nodes
    classes = np.array(sorted(tj["job_id"].unique()))
    # memory budget: a per-job DataFrame (~4 kB) and ~256 B per t_jng row (table, merge, Problem)
    check_memory(f"an instance of {J} jobs on {n_nodes} nodes",
                 J * (4096 + 256 * len(tj) / max(1, len(classes))))
    pick = classes[rng.integers(0, len(classes), J)]
    ids = [f"{c}_{i}" for i, c in enumerate(pick)]
    by_class = {c: g for c, g in tj.groupby("job_id")}
    if "steps_range" in extra:  # Gavel: exec time = total steps / (steps per second)
        lo, hi = extra["steps_range"]
        target = np.exp(rng.uniform(np.log(lo), np.log(hi), J))
        spp = {c: float(g[(g.node_type == "V100") & (g.n_gpus == 1)].exec_time_s.iloc[0]) for c, g in by_class.items()}
        steps = np.round(target / np.array([spp[c] for c in pick])).astype(np.int64)
    else:
        steps = np.ones(J, dtype=np.int64)
    parts = []
    for i, c in enumerate(pick):
        g = by_class[c].copy()
        g["job_id"] = ids[i]
        g["exec_time_s"] = np.round(g["exec_time_s"] * steps[i], 2)
        parts.append(g)
    t = pd.concat(parts, ignore_index=True)
    fastest = t.groupby("job_id", sort=False)["exec_time_s"].min().loc[ids].to_numpy()
    class_fast = tj.groupby("job_id")["exec_time_s"].min().to_numpy() * (np.median(steps) if "steps_range" in extra else 1)
    submit = arrival_times(arrivals, J, n_nodes, class_fast, int(tj["n_gpus"].max()), rng)
    due = np.round(submit + rng.uniform(fastest, 3.0 * fastest), 2)
    weight = np.round(rng.uniform(0.003, 0.015, J), 6)
    meta = pd.DataFrame({"job_id": ids, "submission_s": submit, "due_s": due, "weight": weight,
                         "application": extra.get("app", source if isinstance(source, str) and source in SOURCES else "tjng"),
                         "images": 0, "epochs": steps, "batch_size": 0, "job_class": pick})
    cm = extra["cost_model"]
    if cm == "per_gpu_count":  # one row per (node type, busy GPUs): the energy cost c_ng
        energy = extra["energy"]
        assert cat is not None  # the per-GPU-count sources carry their node catalog
        rows = [(v, n, g, gmax, energy[(n, g)]) for v, n, gmax in zip(cat.VMtype, cat.GPUtype, cat.nGPUs)
                for g in range(1, gmax + 1)]
        vg = pd.DataFrame(rows, columns=["VMtype", "GPUtype", "g", "max_nGPUs", "cost"])
        m = t.merge(vg, left_on=["node_type", "n_gpus"], right_on=["GPUtype", "g"])
        m = m.set_index("job_id").loc[ids].reset_index()
        times = pd.DataFrame({"UniqueJobsID": m.job_id, "VMtype": m.VMtype, "GPUtype": m.GPUtype,
                              "nGPUs": m.g, "max_nGPUs": m.max_nGPUs, "cost": m.cost,
                              "ExecutionTime": m.exec_time_s})
        base = tjng_to_instance(t, meta, n_nodes=n_nodes)
        inst = Instance(jobs=base.jobs, times=times, nodes=base.nodes)
    else:
        inst = tjng_to_instance(t, meta, vm_catalog=cat, n_nodes=n_nodes)
    src = ",".join(sorted(map(str, tj["source"].unique()))) if "source" in tj else "unknown"
    prm = params or Params(cost_model=cm, tjng_source=src)
    if prm.cost_model != cm:
        prm = replace(prm, cost_model=cm)
    node_types = extra["node_types"](n_nodes) if "node_types" in extra else None
    return compile_instance(inst, prm, node_types)
