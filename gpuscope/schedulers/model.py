"""The scheduling problem in array form (seed 000 §IV-A, seed 002 §2.1 and §3.1, Table 1).

Nodes host jobs on dedicated GPUs; a job runs on one node with one configuration
``c = (v, g)``: a node type (VM type) ``v`` and ``g <= G_v`` GPUs. Two cost models:

* ``vm`` (seed 002): the scheduler chooses each open node's VM type from a catalog; an open
  node costs ``c_v`` per hour however many of its GPUs are busy, a closed (empty) node nothing.
* ``per_gpu_count`` (seed 000, ANDREAS): nodes have fixed types; a node with ``u`` busy GPUs
  costs ``c_{n,u}`` per hour (energy × PUE, ``GPU-cost_server_4-2.csv``), an idle node nothing.

Both reduce to one table ``node_rate[v, u]`` ($/h of a node of type v with u busy GPUs) and a
per-configuration rate ``conf_rate[c]`` (seed 000's ``c_ng``, seed 002's ``c_v``) used in the
best-configuration rule ``argmin t_jc · c``. Times live in ``T[j, c]`` (inf where a job has no
time for a configuration).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from gpuscope.core.errors import InputError
from gpuscope.core.io import read_csv, read_json, write_json, write_table
from gpuscope.core.limits import MAX_SECONDS, MAX_WEIGHT, check_number, check_text
from gpuscope.core.tjng import Instance, read_instance, write_instance

COST_MODELS: tuple[str, ...] = ("vm", "per_gpu_count")
#: Node placement rules: ``largest`` (the reference scheduler's: a new node is the largest VM
#: of the job's GPU type offering its GPU count; later jobs best-fit into any open node of
#: that GPU type) or ``per-job`` (gpuscope's earlier rule: a node of the job's own VM type).
PLACEMENTS: tuple[str, ...] = ("largest", "per-job")
#: Extra files gpuscope writes beside the reference folder (the reference ignores them).
PARAMS_FILE, NODE_TYPES_FILE = "gpuscope_params.json", "gpuscope_nodes.csv"


@dataclass(frozen=True)
class Params:
    """Scheduler parameters (seed 002 §4.1–4.2.2): ρ postponement penalty, μ idle-GPU penalty,
    H the proxy's postponement horizon (s; P1a's τ̂ = T_c + H + M_j − d_j), ``interval`` the
    periodic rescheduling interval (s; ``inf`` = event-driven: arrivals and completions only,
    as the reference scheduler), MaxIt_RG, σ elite solutions, MaxIt_PR (None → N), the cost
    model, the node placement rule (:data:`PLACEMENTS`), and the provenance of the t_jng times."""

    rho: float = 100.0
    mu: float = 1.0
    H: float = 3600.0
    max_it_rg: int = 1000
    sigma: int = 10
    max_it_pr: int | None = None
    cost_model: str = "vm"
    interval: float = float("inf")
    placement: str = "largest"
    #: Where the instance's execution times come from (``measured:...``, ``emulated:...``,
    #: ``predicted:...``), so results never present simulated costs without their origin.
    tjng_source: str = "unknown"

    def __post_init__(self) -> None:
        if self.cost_model not in COST_MODELS:
            raise InputError(f"cost_model must be one of {', '.join(COST_MODELS)}, got {self.cost_model!r}")
        if self.placement not in PLACEMENTS:
            raise InputError(f"placement must be one of {', '.join(PLACEMENTS)}, got {self.placement!r}")
        # inf allowed (event-driven)
        check_number("parameter interval", self.interval, low=0, low_open=True, allow_inf=True)
        for name in ("rho", "mu", "H"):  # H may be 0 (no look-ahead)
            high = MAX_SECONDS if name == "H" else MAX_WEIGHT
            check_number(f"parameter {name}", getattr(self, name), low=0, high=high)
        for name in ("max_it_rg", "sigma", "max_it_pr"):
            if name != "max_it_pr" or self.max_it_pr is not None:
                check_number(f"parameter {name}", getattr(self, name), integer=True, low=1)
        check_text("parameter tjng_source", self.tjng_source)


@dataclass
class Problem:
    """A compiled instance. Index conventions: j jobs (file order), v node/VM types, c configs,
    n nodes. Arrays are read-only for the schedulers."""

    job_ids: np.ndarray  # [J] str
    submit: np.ndarray  # [J] s
    due: np.ndarray  # [J] s (absolute)
    weight: np.ndarray  # [J] ω_j, $ per second of tardiness
    T: np.ndarray  # [J, C] full execution time, inf where unavailable
    vm_names: np.ndarray  # [V]
    vm_gpu_type: np.ndarray  # [V]
    vm_G: np.ndarray  # [V] GPUs per node of that type
    node_rate: np.ndarray  # [V, Gmax + 1] $/h of a node with u busy GPUs
    conf_vm: np.ndarray  # [C]
    conf_g: np.ndarray  # [C]
    conf_rate: np.ndarray  # [C] $/h used in the best-configuration rule
    conf_index: np.ndarray  # [V, Gmax + 1] config index of (v, g), -1 if none
    conf_share: np.ndarray  # [C] $/h a job pays on config c (its GPU share of the node)
    node_names: list[str]
    fixed_vm: np.ndarray  # [N] fixed node type, -1 where the scheduler chooses (vm model)
    params: Params
    instance: Instance
    vm_group: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # [V]
    big_conf: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # [C]
    rs_rate: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # [V, Gmax + 1]

    def __post_init__(self) -> None:
        self._fixed = bool((self.fixed_vm >= 0).all())
        # placement groups: node types whose open nodes a job may share (its GPU type under
        # the ``largest`` rule, its own VM type under ``per-job``), and for every config
        # (v, g) the config (w, g) of the largest VM w of v's group offering g GPUs
        if self.params.placement == "largest" and not self.fixed:
            _, grp = np.unique(self.vm_gpu_type, return_inverse=True)
        else:
            grp = np.arange(len(self.vm_names))
        self.vm_group = grp.astype(np.int64)
        big = np.arange(len(self.conf_vm), dtype=np.int64)
        for c in range(len(big)):
            w = np.flatnonzero((grp == grp[self.conf_vm[c]]) & (self.conf_index[:, self.conf_g[c]] >= 0))
            big[c] = self.conf_index[w[np.argmax(self.vm_G[w])], self.conf_g[c]]
        self.big_conf = big
        # rs_rate[v, u]: $/h of a type-v node with u busy GPUs once rightsized to the
        # cheapest VM of its GPU type (no larger than v) that holds u GPUs (post-processing)
        V, G1 = self.node_rate.shape
        rs = self.node_rate.copy()
        if not self.fixed:
            for v in range(V):
                for u in range(1, int(self.vm_G[v]) + 1):
                    w = np.flatnonzero((self.vm_gpu_type == self.vm_gpu_type[v]) & (self.vm_G >= u)
                                       & (self.vm_G <= self.vm_G[v]))
                    rs[v, u] = self.node_rate[w, u].min()
        self.rs_rate = rs

    @property
    def n_jobs(self) -> int:
        return len(self.job_ids)

    @property
    def n_nodes(self) -> int:
        return len(self.node_names)

    @property
    def fixed(self) -> bool:
        return self._fixed

    def available_confs(self) -> np.ndarray:
        """Configurations usable at all: every config (vm model) or those of existing node types."""
        if self.fixed:
            return np.isin(self.conf_vm, np.unique(self.fixed_vm))
        return np.ones(len(self.conf_vm), dtype=bool)


def compile_instance(
    inst: Instance, params: Params | None = None, node_types: list[str] | None = None
) -> Problem:
    """Compile an :class:`~gpuscope.core.tjng.Instance` into arrays.

    ``node_types`` fixes each node's VM type (ANDREAS); with ``cost_model="per_gpu_count"`` the
    times table's ``cost`` of row (v, g) is the hourly cost of a type-v node with g busy GPUs.
    """
    params = params or Params()
    jobs, times = inst.jobs, inst.times
    ids = jobs["UniqueJobsID"].astype(str).to_numpy()
    pos = {j: i for i, j in enumerate(ids)}
    vm_first = times.drop_duplicates("VMtype")
    vm_names = vm_first["VMtype"].astype(str).to_numpy()
    vpos = {v: i for i, v in enumerate(vm_names)}
    vm_G = pd.to_numeric(vm_first["max_nGPUs"]).to_numpy(np.int64)
    gmax = int(vm_G.max())
    g_all = pd.to_numeric(times["nGPUs"]).to_numpy(np.int64)
    v_all = times["VMtype"].astype(str).map(vpos).to_numpy()
    cost_all = pd.to_numeric(times["cost"]).to_numpy(float)
    confs = sorted(set(zip(v_all.tolist(), g_all.tolist())))
    conf_index = np.full((len(vm_names), gmax + 1), -1, dtype=np.int64)
    for c, (v, g) in enumerate(confs):
        conf_index[v, g] = c
    conf_vm = np.array([v for v, _ in confs], dtype=np.int64)
    conf_g = np.array([g for _, g in confs], dtype=np.int64)
    conf_rate = np.zeros(len(confs))
    rate_vg = pd.Series(cost_all).groupby([v_all, g_all]).max()
    for c, (v, g) in enumerate(confs):
        conf_rate[c] = rate_vg.loc[(v, g)]
    node_rate = np.zeros((len(vm_names), gmax + 1))
    for v in range(len(vm_names)):
        rates = [rate_vg.get((v, g), np.nan) for g in range(1, int(vm_G[v]) + 1)]
        r = pd.Series(rates, dtype=float)
        if params.cost_model == "vm":
            node_rate[v, 1 : vm_G[v] + 1] = np.nanmax(r.to_numpy())
        else:  # energy per busy-GPU count; counts without a row take the next known one
            node_rate[v, 1 : vm_G[v] + 1] = r.bfill().ffill().to_numpy()
    # a job's own deployment cost: its GPU share of a VM (the reference simulator's
    # GPUcost = time × cost × g / G); under per-GPU-count energy costs, c_ng itself
    share = conf_rate * conf_g / vm_G[conf_vm] if params.cost_model == "vm" else conf_rate.copy()
    T = np.full((len(ids), len(confs)), np.inf)
    c_all = conf_index[v_all, g_all]
    j_all = times["UniqueJobsID"].astype(str).map(pos).to_numpy()
    T[j_all, c_all] = pd.to_numeric(times["ExecutionTime"]).to_numpy(float)
    if node_types is None:
        fixed_vm = np.full(inst.n_nodes, -1, dtype=np.int64)
    else:
        if len(node_types) != inst.n_nodes:
            raise InputError(f"{len(node_types)} node types for {inst.n_nodes} nodes")
        bad = [t for t in node_types if t not in vpos]
        if bad:
            raise InputError(f"node type {bad[0]!r} is not a VMtype of the times table")
        fixed_vm = np.array([vpos[t] for t in node_types], dtype=np.int64)
    p = Problem(
        job_ids=ids, submit=pd.to_numeric(jobs["SubmissionTime"]).to_numpy(float),
        due=pd.to_numeric(jobs["Deadline"]).to_numpy(float),
        weight=pd.to_numeric(jobs["Tardinessweight"]).to_numpy(float), T=T,
        vm_names=vm_names, vm_gpu_type=vm_first["GPUtype"].astype(str).to_numpy(), vm_G=vm_G,
        node_rate=node_rate, conf_vm=conf_vm, conf_g=conf_g, conf_rate=conf_rate,
        conf_index=conf_index, conf_share=share, node_names=list(inst.nodes), fixed_vm=fixed_vm, params=params,
        instance=inst,
    )
    usable = np.isfinite(T[:, p.available_confs()]).any(axis=1)
    if not usable.all():
        raise InputError(f"job {ids[~usable][0]!r} has no execution time on any node type present")
    return p


def load_problem(directory: str | Path, params: Params | None = None) -> Problem:
    """Read a reference folder plus gpuscope's optional ``gpuscope_params.json`` (ρ, μ, H,
    cost model) and ``gpuscope_nodes.csv`` (fixed node types); explicit ``params`` win."""
    d = Path(directory)
    inst = read_instance(d)
    if params is None:
        params = Params()
        if (d / PARAMS_FILE).exists():
            raw = read_json(d / PARAMS_FILE, f"instance {d}: parameter file", kind=dict)
            try:
                params = Params(**raw)
            except (TypeError, ValueError) as e:
                raise InputError(f"instance {d}: bad {PARAMS_FILE}: {e}") from None
    node_types = None
    if (d / NODE_TYPES_FILE).exists():
        nt = read_csv(d / NODE_TYPES_FILE, f"instance {d}: node-type file", dtype=str)
        if list(nt.columns) != ["Nodes", "VMtype"] or list(nt["Nodes"]) != inst.nodes:
            raise InputError(f"instance {d}: {NODE_TYPES_FILE} must list tNodes.csv's nodes with their VMtype")
        node_types = nt["VMtype"].tolist()
    return compile_instance(inst, params, node_types)


def save_problem(p: Problem, directory: str | Path) -> Path:
    """Write the reference folder plus gpuscope's parameter and node-type files."""
    d = write_instance(p.instance, directory)
    write_json(d / PARAMS_FILE, asdict(p.params), what="instance parameters")
    if p.fixed:
        write_table(pd.DataFrame({"Nodes": p.node_names, "VMtype": p.vm_names[p.fixed_vm]}),
                    d / NODE_TYPES_FILE, what="instance node types")
    return d
