"""The cluster contract: servers, partitions and flavors (seed 003 §2.1, §4.2 and Table 2).

A cluster is a set of GPU *servers* (nodes), each in one *partition* (a Slurm partition, a
Kueue ClusterQueue), and an optional set of *flavors*: fixed resource bundles a job asks for
(seed 003 Table 2; Kueue's ResourceFlavor quota). gpuscope reads it from a TOML file::

    name = "gist-aix"
    source = "seed 003 §2.1 and Table 2"
    [[partitions]]
    name = "A100"
    [[servers]]
    name = "dgx-a100-1"
    partition = "A100"
    gpu_type = "a100"       # a catalog device (datasets/devices.toml)
    gpus = 8
    cpus = 256
    mem_gb = 1024
    power_kw = 6.5
    [[flavors]]
    name = "s-A100"
    partition = "A100"
    gpus = 2
    cpus = 64
    mem_gb = 256
    time_limit_h = 72

A flavor's share of its partition is seed 003's λ(d) (Eq. 4); Table 2 prints it and it equals
GPUs / partition GPUs (``rate`` may be given, else it is derived; a given one must agree).

GPU memory: the catalog device describes one GPU type; a server whose GPUs differ in memory
only (the DGX-1V's 32 GB V100 vs the catalog's 16 GB SXM2 ``v100``) sets ``gpu_mem_gb``, an
override that :meth:`ServerSpec.gpu_mem` returns instead of the catalog's figure.

Base module: pydantic and the device catalog only, importable by every stage.
"""

from __future__ import annotations

from collections import Counter
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gpuscope.core.data import bundled
from gpuscope.core.errors import InputError
from gpuscope.core.limits import MAX_GPUS, MAX_NAME_LEN, MAX_PATH_LEN, MAX_SECONDS

if TYPE_CHECKING:
    from gpuscope.cluster.counts import ClusterSpec

#: Tolerance when a flavor's given ``rate`` is compared with GPUs / partition GPUs.
RATE_TOL: float = 1e-6
#: Bounds of a cluster file's numbers (numbers must be TOML numbers: ``"4"``, ``true`` and
#: NaN are refused, as on the command line).
MAX_CPUS: int = 1_000_000
MAX_GB: float = 1e9
MAX_KW: float = 1e6


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ServerSpec(_Frozen):
    """One GPU server (a node): its partition, GPU type and count, host CPUs, memory, power.

    ``power_kw`` is the whole server's draw (seed 003 §6.2: 6.5 kW per DGX A100, 3.5 kW per
    DGX-1V) used for Fig. 7's energy. ``gpu_mem_gb`` overrides the catalog's per-GPU memory.
    """

    name: str = Field(min_length=1, max_length=MAX_NAME_LEN)
    partition: str = Field(min_length=1, max_length=MAX_NAME_LEN)
    gpu_type: str = Field(min_length=1, max_length=MAX_NAME_LEN)
    gpus: int = Field(gt=0, le=MAX_GPUS, strict=True)
    cpus: int = Field(gt=0, le=MAX_CPUS, strict=True)
    mem_gb: float = Field(gt=0, le=MAX_GB, strict=True, allow_inf_nan=False)
    power_kw: float = Field(default=0.0, ge=0, le=MAX_KW, strict=True, allow_inf_nan=False)
    gpu_mem_gb: float | None = Field(default=None, gt=0, le=MAX_GB, strict=True,
                                     allow_inf_nan=False)

    def gpu_mem(self) -> float:
        """Memory of one GPU in GB: the override, else the catalog device's ``mem_gb``."""
        if self.gpu_mem_gb is not None:
            return self.gpu_mem_gb
        from gpuscope.cluster.devices import get_device

        return get_device(self.gpu_type).mem_gb


class PartitionSpec(_Frozen):
    """A partition (seed 003: A100 and V100, split by CUDA compatibility)."""

    name: str = Field(min_length=1, max_length=MAX_NAME_LEN)
    description: str = Field(default="", max_length=MAX_PATH_LEN)


class FlavorSpec(_Frozen):
    """A fixed resource bundle (seed 003 Table 2): GPUs, CPU cores, memory, time limit, λ.

    ``rate`` is λ(d) of Eq. 4; ``None`` means "derive it as GPUs / partition GPUs"
    (:meth:`ClusterConfig.rate`).
    """

    name: str = Field(min_length=1, max_length=MAX_NAME_LEN)
    partition: str = Field(min_length=1, max_length=MAX_NAME_LEN)
    gpus: int = Field(gt=0, le=MAX_GPUS, strict=True)
    cpus: int = Field(gt=0, le=MAX_CPUS, strict=True)
    mem_gb: float = Field(gt=0, le=MAX_GB, strict=True, allow_inf_nan=False)
    time_limit_h: float = Field(gt=0, le=MAX_SECONDS / 3600, strict=True, allow_inf_nan=False)
    rate: float | None = Field(default=None, gt=0, le=1, strict=True, allow_inf_nan=False)


class ClusterConfig(_Frozen):
    """A cluster: named servers in partitions, and optional flavors per partition."""

    name: str = Field(min_length=1, max_length=MAX_NAME_LEN)
    source: str = Field(default="", max_length=MAX_PATH_LEN)
    partitions: tuple[PartitionSpec, ...] = Field(min_length=1)
    servers: tuple[ServerSpec, ...] = Field(min_length=1)
    flavors: tuple[FlavorSpec, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> ClusterConfig:
        pnames = [p.name for p in self.partitions]
        for kind, names in (("partitions", pnames), ("servers", [s.name for s in self.servers]),
                            ("flavors", [f.name for f in self.flavors])):
            dup = sorted(n for n, c in Counter(names).items() if c > 1)  # O(n)
            if dup:
                raise ValueError(f"{kind}: duplicate name(s) {', '.join(dup)}")
        for i, s in enumerate(self.servers):
            if s.partition not in pnames:
                raise ValueError(f"servers[{i}].partition: unknown partition {s.partition!r}")
        for p in pnames:
            if not any(s.partition == p for s in self.servers):
                raise ValueError(f"partitions: {p!r} has no server")
        for i, f in enumerate(self.flavors):
            if f.partition not in pnames:
                raise ValueError(f"flavors[{i}].partition: unknown partition {f.partition!r}")
            srv = [s for s in self.servers if s.partition == f.partition]
            for attr in ("gpus", "cpus", "mem_gb"):
                cap = sum(getattr(s, attr) for s in srv)
                if getattr(f, attr) > cap:
                    raise ValueError(f"flavors[{i}].{attr}: {getattr(f, attr)} exceeds partition "
                                     f"{f.partition!r} capacity {cap}")
            lam = f.gpus / sum(s.gpus for s in srv)
            if f.rate is not None and abs(f.rate - lam) > RATE_TOL:
                raise ValueError(f"flavors[{i}].rate: {f.rate} differs from GPUs / partition "
                                 f"GPUs = {lam:g}")
        return self

    # -- queries -------------------------------------------------------------------------------
    @cached_property
    def _pnames(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.partitions)

    def _need(self, partition: str) -> None:
        if partition not in self._pnames:
            raise InputError(f"cluster {self.name!r} has no partition {partition!r}; "
                             f"partitions: {', '.join(self._pnames)}")

    def partition(self, name: str) -> PartitionSpec:
        """The partition ``name`` (``InputError`` if unknown)."""
        self._need(name)
        return next(p for p in self.partitions if p.name == name)

    def servers_in(self, partition: str) -> list[ServerSpec]:
        """Servers of ``partition`` in file order (the order first-fit scans)."""
        self._need(partition)
        return [s for s in self.servers if s.partition == partition]

    def flavors_in(self, partition: str) -> list[FlavorSpec]:
        """Flavors of ``partition`` in file order."""
        self._need(partition)
        return [f for f in self.flavors if f.partition == partition]

    def flavor(self, name: str) -> FlavorSpec:
        """The flavor ``name`` (``InputError`` if unknown)."""
        for f in self.flavors:
            if f.name == name:
                return f
        raise InputError(f"cluster {self.name!r} has no flavor {name!r}; "
                         f"flavors: {', '.join(f.name for f in self.flavors) or 'none'}")

    def gpu_types(self) -> list[str]:
        """Distinct catalog GPU types of the servers, in first-appearance order."""
        return list(dict.fromkeys(s.gpu_type for s in self.servers))

    def type_counts(self) -> dict[str, int]:
        """GPUs of each type over all servers, types in first-appearance order."""
        out: dict[str, int] = {}
        for s in self.servers:
            out[s.gpu_type] = out.get(s.gpu_type, 0) + s.gpus
        return out

    def gpu_counts(self) -> ClusterSpec:
        """The cluster as GPU types x counts (the view the allocator simulates): GPU ``i`` of
        a type is instance ``type#i``, held by :meth:`instance_node`."""
        from gpuscope.cluster.counts import ClusterSpec

        counts = self.type_counts()
        return ClusterSpec(tuple(counts), tuple(counts.values()))

    def server(self, name: str) -> ServerSpec:
        """The server ``name`` (``InputError`` if unknown)."""
        for s in self.servers:
            if s.name == name:
                return s
        raise InputError(f"cluster {self.name!r} has no server {name!r}; servers: "
                         f"{', '.join(s.name for s in self.servers)}")

    def instance_node(self, gpu_type: str, instance: int) -> ServerSpec:
        """The server holding GPU instance ``gpu_type#instance`` (0-based) of
        :meth:`gpu_counts`: the servers of a type are filled in file order (the first holds
        instances ``0 … gpus₁−1``, the next the following ``gpus₂``, …)."""
        k = int(instance)
        if k < 0:
            raise InputError(f"GPU instance {gpu_type}#{k} is negative")
        for s in self.servers:
            if s.gpu_type != gpu_type:
                continue
            if k < s.gpus:
                return s
            k -= s.gpus
        have = self.type_counts().get(gpu_type, 0)
        raise InputError(f"cluster {self.name!r} has {have} GPU(s) of type {gpu_type!r}; the "
                         f"plan uses {gpu_type}#{instance}")

    def instance_offset(self, node: str) -> int:
        """Instance number of ``node``'s first GPU among the GPUs of its type (the inverse of
        :meth:`instance_node`)."""
        gpu_type = self.server(node).gpu_type
        off = 0
        for s in self.servers:
            if s.name == node:
                break
            if s.gpu_type == gpu_type:
                off += s.gpus
        return off

    def partition_gpus(self, partition: str) -> int:
        """Total GPUs of ``partition``."""
        return sum(s.gpus for s in self.servers_in(partition))

    def partition_power_kw(self, partition: str) -> float:
        """Total power of ``partition``'s servers in kW (seed 003 Fig. 7: 13 kW for A100)."""
        return sum(s.power_kw for s in self.servers_in(partition))

    def rate(self, flavor: FlavorSpec | str) -> float:
        """λ(d) of Eq. 4: the flavor's given ``rate``, else GPUs / partition GPUs."""
        f = self.flavor(flavor) if isinstance(flavor, str) else flavor
        if f.rate is not None:
            return f.rate
        return f.gpus / self.partition_gpus(f.partition)


def _loc(err: dict[str, Any]) -> str:
    parts: list[str] = []
    for x in err.get("loc", ()):
        if isinstance(x, int):
            parts[-1:] = [f"{parts[-1]}[{x}]"] if parts else [f"[{x}]"]
        else:
            parts.append(str(x))
    return ".".join(parts)


def parse_cluster(data: dict[str, Any], origin: str = "<cluster>",
                  check_devices: bool = True) -> ClusterConfig:
    """Validate a dict shaped like the TOML file; errors are one-line ``InputError``s naming
    ``origin`` and the field. ``check_devices`` also checks ``gpu_type`` against the catalog."""
    try:
        cfg = ClusterConfig.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = _loc(dict(err))
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        raise InputError(f"{origin}: {loc + ': ' if loc else ''}{msg}") from None
    if check_devices:
        from gpuscope.cluster.devices import load_catalog

        cat = load_catalog()
        for i, s in enumerate(cfg.servers):
            if s.gpu_type not in cat:
                raise InputError(f"{origin}: servers[{i}].gpu_type: unknown device "
                                 f"{s.gpu_type!r}; known: {', '.join(sorted(cat))}")
    return cfg


def resolve_cluster_path(path_or_name: str | Path) -> Path:
    """A cluster file: an existing path, else the bundled ``datasets/cluster-<name>.toml``."""
    p = Path(path_or_name)
    if p.exists():
        return p
    name = str(path_or_name).removesuffix(".toml").removeprefix("cluster-")
    b = bundled(f"cluster-{name}.toml")
    if "/" not in str(path_or_name) and b.exists():  # gist-aix, 2types, cluster-2types(.toml)
        return b
    known = sorted(x.stem.removeprefix("cluster-") for x in bundled().glob("cluster-*.toml"))
    raise InputError(f"cluster file {str(path_or_name)!r} not found; bundled clusters: "
                     f"{', '.join(known) or 'none'}")


def load_cluster(path: str | Path, check_devices: bool = True) -> ClusterConfig:
    """Load a cluster TOML file (or a bundled cluster by name, e.g. ``gist-aix``)."""
    from gpuscope.core.io import read_toml

    p = resolve_cluster_path(path)
    data = read_toml(p, "cluster file")
    return parse_cluster(data, origin=str(p), check_devices=check_devices)


def default_cluster() -> ClusterConfig:
    """The bundled GIST AI-X cluster of seed 003 (``datasets/cluster-gist-aix.toml``)."""
    return load_cluster(bundled("cluster-gist-aix.toml"))
