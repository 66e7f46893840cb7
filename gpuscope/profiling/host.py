"""Identity of the profiled machine: device (NVML or CPU model), host, package versions.

Every measured dataset names its hardware (design.md); these go into each run's TraceMeta
and the dataset manifest.
"""

from __future__ import annotations

import platform
import re
import socket
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil

PACKAGES: tuple[str, ...] = (
    "gpuscope", "torch", "tensorflow-cpu", "tensorflow", "torch-geometric", "numpy", "pandas",
    "scikit-learn", "psutil", "nvidia-ml-py", "ray",
)


def cpu_model() -> str:
    """CPU model name from /proc/cpuinfo (``platform.processor()`` elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown-cpu"


def cpu_info() -> dict[str, Any]:
    return {
        "kind": "cpu",
        "cpu_model": cpu_model(),
        "logical_cores": psutil.cpu_count() or 0,
        "physical_cores": psutil.cpu_count(logical=False) or 0,
        "memory_total_mb": round(psutil.virtual_memory().total / 2**20, 1),
    }


def device_identity(gpu_info: dict[str, Any] | None = None,
                    name_override: str = "") -> dict[str, Any]:
    """The GPU's NVML identity when there is one (plus the host CPU), else the CPU's with
    ``gpu`` saying why there is none (``cluster.nvml.gpu_identity``'s reason);
    ``name_override``: the contradiction the user overrode (``--device-name-override``)."""
    cpu = cpu_info()
    if gpu_info and gpu_info.get("kind", "gpu") == "gpu":
        out = {**gpu_info, "host_cpu": cpu["cpu_model"]}
    else:
        out = {**cpu, "gpu": f"none ({(gpu_info or {}).get('reason', 'not probed')})"}
    if name_override:
        out["name_override"] = name_override
    return out


def slug(name: str) -> str:
    """``AMD EPYC 7B13 64-Core Processor`` → ``amd-epyc-7b13-64-core-processor``."""
    s = re.sub(r"\(r\)|\(tm\)|\bcpu\b\s*@.*$", "", name.lower())
    s = re.sub(r"[^a-z0-9]+", "-", s).strip("-")
    return s or "unknown"


def host_name() -> str:
    return socket.gethostname()


def versions() -> dict[str, str]:
    """Versions of the packages that shape a run (absent ones are left out), and Python's."""
    out = {"python": platform.python_version()}
    for pkg in PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            continue
    return out
