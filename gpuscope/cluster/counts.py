"""A heterogeneous cluster: GPU types and how many GPUs of each (seed 001 §4.1, §5.1).

Seed 001 runs one GPU of each of three types; its discussion (§5.1) notes that several GPUs of
one type share one predictor ("dataset"). A cluster here is an ordered list of
``(device type, count)``; GPUs of one type are interchangeable instances ``type#0``, ``type#1``…
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from gpuscope.core.errors import InputError
from gpuscope.core.limits import check_memory

#: Estimated bytes per GPU instance (name string, per-GPU queue and simulation arrays, report rows).
BYTES_PER_GPU: int = 1024

_NAME = re.compile(r"^[a-z0-9][a-z0-9_.\-]*$")


@dataclass(frozen=True)
class ClusterSpec:
    """GPU types (in the order given) and the number of GPUs of each.

    Attributes:
        devices: device type names, lower case, unique.
        counts: GPUs of each type, > 0, same length as ``devices``.
    """

    devices: tuple[str, ...]
    counts: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.devices:
            raise InputError("a cluster needs at least one device type")
        if len(self.devices) != len(self.counts):
            raise InputError("cluster devices and counts differ in length")
        if len(set(self.devices)) != len(self.devices):
            raise InputError(f"device type listed twice in cluster: {', '.join(self.devices)}")
        for d, c in zip(self.devices, self.counts):
            if not _NAME.match(d):
                raise InputError(f"bad device type name {d!r} in cluster spec")
            if isinstance(c, bool) or not isinstance(c, int) or c <= 0:
                raise InputError(f"GPU count of {d} must be a positive integer, got {c!r}")
        # memory budget: every GPU is an instance (name, queue, simulation state), ~BYTES_PER_GPU
        check_memory(f"cluster {self} ({sum(self.counts)} GPUs)", sum(self.counts) * BYTES_PER_GPU)

    @classmethod
    def parse(cls, spec: str) -> ClusterSpec:
        """Parse ``"gtx1080:1,rtx2070:2,titanx"`` (a missing count means 1)."""
        if not isinstance(spec, str) or not spec.strip():
            raise InputError("empty cluster spec; expected e.g. gtx1080:1,rtx2070:1,titanx:1")
        devices, counts = [], []
        for part in spec.split(","):
            part = part.strip().lower()
            name, sep, num = part.partition(":")
            name = name.strip()
            if not name or (sep and not num.strip().isdigit()):
                raise InputError(
                    f"malformed cluster entry {part!r}; expected TYPE:COUNT, e.g. v100:8"
                )
            devices.append(name)
            counts.append(int(num) if sep else 1)
        return cls(tuple(devices), tuple(counts))

    @classmethod
    def from_arg(cls, text: str) -> ClusterSpec:
        """A ``--cluster`` argument: ``TYPE:COUNT,...`` (:meth:`parse`), or a cluster file
        (:func:`is_cluster_file`) as its GPU counts (``ClusterConfig.gpu_counts``)."""
        if not is_cluster_file(text):
            return cls.parse(text)
        from gpuscope.cluster.config import load_cluster

        return load_cluster(text).gpu_counts()

    def __str__(self) -> str:
        return ",".join(f"{d}:{c}" for d, c in zip(self.devices, self.counts))

    @property
    def n_gpus(self) -> int:
        return int(sum(self.counts))

    @property
    def instance_device(self) -> np.ndarray:
        """Device-type index of every GPU instance, types in order (``[0, 0, 1, 2, …]``)."""
        return np.repeat(np.arange(len(self.devices)), self.counts)

    def index(self, device: str) -> int:
        try:
            return self.devices.index(device)
        except ValueError:
            raise InputError(f"device {device!r} is not in cluster {self}") from None


def is_cluster_file(text: str) -> bool:
    """Whether a ``--cluster`` argument names a cluster file rather than ``TYPE:COUNT,...``: a
    ``.toml`` path, an existing file, or a bundled cluster's name (``2types``, ``gist-aix``)."""
    from pathlib import Path

    if text.endswith(".toml") or Path(text).is_file():
        return True
    if ":" in text or "," in text:
        return False
    from gpuscope.core.data import bundled

    return bundled(f"cluster-{text.removeprefix('cluster-')}.toml").is_file()
