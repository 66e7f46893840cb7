"""Load a cluster file (the ``gpuscope.cluster.config`` contract) and map GPU instances to nodes.

The allocator numbers the GPUs of one type ``type#0, type#1, …`` (``gpuscope.cluster.counts``);
on a cluster file those GPUs live on servers. :func:`instance_node` maps instance ``i`` of a type
to the server that holds it, filling the servers of that type in file order (server 1 holds
instances ``0 … gpus₁−1``, server 2 the next ``gpus₂``, …), which is how ``allocate --cluster
FILE`` counts them.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpuscope.cluster.config import ClusterConfig, ServerSpec, load_cluster
from gpuscope.core.errors import InputError

#: Slurm node and partition names: letters, digits, ``-``, ``_``, ``.``.
_SLURM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")

__all__ = ["ClusterConfig", "ServerSpec", "check_slurm_names", "instance_node", "load",
           "type_counts"]


def load(path: str | Path) -> ClusterConfig:
    """The cluster file ``path`` (or a bundled cluster name), names checked for Slurm."""
    cfg = load_cluster(path)
    check_slurm_names(cfg)
    return cfg


def check_slurm_names(cfg: ClusterConfig) -> None:
    """Server, partition and GPU type names must be valid Slurm names (one-line error)."""
    for kind, names in (("server", [s.name for s in cfg.servers]),
                        ("partition", [p.name for p in cfg.partitions]),
                        ("gpu_type", [s.gpu_type for s in cfg.servers])):
        for n in names:
            if not _SLURM_NAME.match(n) or (kind == "gpu_type" and ":" in n):
                raise InputError(f"cluster {cfg.name!r}: {kind} name {n!r} is not a valid Slurm "
                                 "name (letters, digits, '-', '_', '.')")


def type_counts(cfg: ClusterConfig) -> dict[str, int]:
    """GPUs of each type over all servers, types in first-appearance order."""
    out: dict[str, int] = {}
    for s in cfg.servers:
        out[s.gpu_type] = out.get(s.gpu_type, 0) + s.gpus
    return out


def instance_node(cfg: ClusterConfig, gpu_type: str, instance: int) -> ServerSpec:
    """The server holding GPU ``instance`` (0-based) of ``gpu_type``; servers filled in order."""
    k = int(instance)
    if k < 0:
        raise InputError(f"GPU instance {gpu_type}#{k} is negative")
    for s in cfg.servers:
        if s.gpu_type != gpu_type:
            continue
        if k < s.gpus:
            return s
        k -= s.gpus
    have = type_counts(cfg).get(gpu_type, 0)
    raise InputError(f"cluster {cfg.name!r} has {have} GPU(s) of type {gpu_type!r}; the plan "
                     f"uses {gpu_type}#{instance}")


def instance_offset(cfg: ClusterConfig, node: str) -> int:
    """Index of ``node``'s first GPU among the GPUs of its type (inverse of instance_node)."""
    srv = server(cfg, node)
    off = 0
    for s in cfg.servers:
        if s.name == node:
            return off
        if s.gpu_type == srv.gpu_type:
            off += s.gpus
    raise AssertionError("unreachable")


def server(cfg: ClusterConfig, node: str) -> ServerSpec:
    for s in cfg.servers:
        if s.name == node:
            return s
    raise InputError(f"cluster {cfg.name!r} has no server {node!r}; servers: "
                     f"{', '.join(s.name for s in cfg.servers)}")
