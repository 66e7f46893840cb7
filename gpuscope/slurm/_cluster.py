"""A cluster file (the ``gpuscope.cluster.config`` contract) as Slurm takes it: its server,
partition and GPU type names must be valid Slurm names. Which server holds GPU instance
``type#i`` of a plan is ``ClusterConfig.instance_node``.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpuscope.cluster.config import ClusterConfig, load_cluster
from gpuscope.core.errors import InputError

#: Slurm node and partition names: letters, digits, ``-``, ``_``, ``.``.
_SLURM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")

__all__ = ["check_slurm_names", "load"]


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
