"""What NVML says about a GPU: its identity (for a measured run's provenance) and the catalog
fields it can tell (for ``gpuscope devices add --from-nvml``).

NVML reports the name, memory, CUDA cores, compute capability, the maximum SM and memory
clocks, the memory bus width, the PCIe generation and the default power limit. From those:
``arch`` (compute capability), ``sm_count`` (cores / cores per SM of the capability),
``fp32_tflops`` (cores x 2 FLOPs x max SM clock), ``mem_bw_gbs`` (2 transfers per memory
clock x bus width: 1555 GB/s for an A100's 1215 MHz x 5120 bits, 320 GB/s for a T4's 5001 MHz
x 256 bits), ``boost_clock_mhz``. NVML cannot say the tensor-core peaks, the host's speed or
the price: those come from ``--like`` or ``--spec``.

The NVML module is injectable (``nvml=``): tests pass a fake ``pynvml``. A base module.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

_MB = 1024.0 * 1024.0
#: FP32 CUDA cores per SM by compute capability (CUDA C Programming Guide, "Arithmetic
#: Instructions" throughput table): the key is (major, minor), else (major, -1).
CORES_PER_SM: dict[tuple[int, int], int] = {
    (3, -1): 192, (5, -1): 128, (6, 0): 64, (6, -1): 128, (7, -1): 64,
    (8, 0): 64, (8, -1): 128, (9, -1): 128,
}


def arch_of(major: int, minor: int) -> str | None:
    """Catalog architecture of a compute capability (None: not one the catalog knows)."""
    if major == 7:
        return "turing" if minor >= 5 else "volta"
    if major == 8:
        return "ada" if minor >= 9 else "ampere"
    return {3: "kepler", 5: "maxwell", 6: "pascal", 9: "hopper"}.get(major)


def cores_per_sm(major: int, minor: int) -> int | None:
    return CORES_PER_SM.get((major, minor), CORES_PER_SM.get((major, -1)))


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def read_identity(nvml: Any, handle: Any, index: int) -> dict[str, Any]:
    """Name, memory total (MB), driver, UUID and index of an opened GPU (``kind`` "gpu")."""
    mem = nvml.nvmlDeviceGetMemoryInfo(handle)
    info = {"kind": "gpu", "name": _text(nvml.nvmlDeviceGetName(handle)),
            "memory_total_mb": float(mem.total) / _MB,
            "driver": _text(nvml.nvmlSystemGetDriverVersion()), "gpu_index": index}
    try:
        info["uuid"] = _text(nvml.nvmlDeviceGetUUID(handle))
    except Exception:  # an NVML without the call: the rest still identifies the GPU
        pass
    return info


def _open(nvml: ModuleType | None, index: int) -> tuple[Any, Any, str]:
    """(module, handle, "") of GPU ``index``, or (module or None, None, why not)."""
    if nvml is None:
        try:
            import pynvml as nvml_mod
        except ImportError as e:
            return None, None, f"nvidia-ml-py not installed ({e})"
        nvml = nvml_mod
    try:
        nvml.nvmlInit()
    except Exception as e:  # NVMLError_LibraryNotFound/DriverNotLoaded on CPU hosts
        return None, None, f"NVML unavailable: {type(e).__name__}: {e}"
    try:
        count = int(nvml.nvmlDeviceGetCount())
        if index >= count:
            nvml.nvmlShutdown()
            return None, None, f"NVML sees {count} GPU(s), none at index {index}"
        return nvml, nvml.nvmlDeviceGetHandleByIndex(index), ""
    except Exception as e:
        nvml.nvmlShutdown()
        return None, None, f"NVML device query failed: {type(e).__name__}: {e}"


def gpu_identity(nvml: ModuleType | None = None, index: int = 0) -> dict[str, Any]:
    """What NVML reports for GPU ``index`` (``read_identity``), or ``{"kind": "none",
    "reason": ...}`` where it sees no GPU."""
    mod, handle, why = _open(nvml, index)
    if mod is None:
        return {"kind": "none", "reason": why}
    try:
        return read_identity(mod, handle, index)
    except Exception as e:
        return {"kind": "none", "reason": f"NVML device query failed: {type(e).__name__}: {e}"}
    finally:
        mod.nvmlShutdown()


def _try(f: Any, *args: Any) -> Any:
    try:
        return f(*args)
    except Exception:
        return None


def gpu_spec(nvml: ModuleType | None = None, index: int = 0
             ) -> tuple[dict[str, Any], dict[str, str], dict[str, Any]]:
    """(catalog fields, their sources, identity) NVML can tell for GPU ``index`` (module
    docstring); a field NVML does not answer is left out. ``InputError`` without a GPU."""
    from gpuscope.core.errors import InputError

    mod, h, why = _open(nvml, index)
    if mod is None:
        raise InputError(f"--from-nvml: {why}")
    try:
        ident = read_identity(mod, h, index)
        cc = _try(mod.nvmlDeviceGetCudaComputeCapability, h)
        cores = _try(mod.nvmlDeviceGetNumGpuCores, h)
        sm_clock = _try(mod.nvmlDeviceGetMaxClockInfo, h, getattr(mod, "NVML_CLOCK_SM", 1))
        mem_clock = _try(mod.nvmlDeviceGetMaxClockInfo, h, getattr(mod, "NVML_CLOCK_MEM", 2))
        bus = _try(mod.nvmlDeviceGetMemoryBusWidth, h)
        pcie = _try(getattr(mod, "nvmlDeviceGetGpuMaxPcieLinkGeneration",
                            mod.nvmlDeviceGetMaxPcieLinkGeneration), h)
        power = _try(mod.nvmlDeviceGetPowerManagementDefaultLimit, h)
    finally:
        mod.nvmlShutdown()
    src = f"nvml: {ident['name']}"
    out: dict[str, Any] = {"mem_gb": round(ident["memory_total_mb"] / 1024.0, 2)}
    if cc:
        major, minor = int(cc[0]), int(cc[1])
        arch, per_sm = arch_of(major, minor), cores_per_sm(major, minor)
        if arch:
            out["arch"] = arch
        if cores and per_sm:
            out["sm_count"] = int(cores) // per_sm
    if sm_clock:
        out["boost_clock_mhz"] = float(sm_clock)
        if cores:
            out["fp32_tflops"] = round(float(cores) * 2.0 * float(sm_clock) / 1e6, 2)
    if mem_clock and bus:
        out["mem_bw_gbs"] = round(2.0 * float(mem_clock) * float(bus) / 8.0 / 1000.0, 1)
    if pcie:
        out["pcie_gen"] = int(pcie)
    if power:
        out["power_w"] = round(float(power) / 1000.0, 1)
    notes = {"arch": f"compute capability {cc[0]}.{cc[1]}" if cc else "",
             "sm_count": f"{cores} CUDA cores" if cores else "",
             "fp32_tflops": f"{cores} cores x 2 x {sm_clock} MHz" if cores and sm_clock else "",
             "mem_bw_gbs": f"2 x {mem_clock} MHz x {bus} bits" if mem_clock and bus else "",
             "mem_gb": "memory.total", "boost_clock_mhz": "max SM clock",
             "pcie_gen": "max PCIe generation", "power_w": "default power limit"}
    return out, {k: f"{src}, {notes[k]}" for k in out}, ident


#: Relative difference between NVML's memory total and the catalog's that still names the
#: same GPU (NVML reports a little less than the marketed size: 81559 MiB on an 80 GB H100).
MEMORY_TOLERANCE: float = 0.10


def _compact(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def _model_tokens(name: str) -> list[str]:
    """The parts of a catalog name that name the GPU model: those with a digit, except
    memory sizes (``a100-pcie-80gb`` -> ``a100``); the whole name when none has a digit."""
    parts = [p for p in name.lower().split("-") if p]
    model = [p for p in parts if any(c.isdigit() for c in p) and not p.endswith("gb")]
    return [_compact(p) for p in model] or [_compact(name)]


def name_conflict(name: str, ident: dict[str, Any], bundled: dict[str, Any],
                  catalog: dict[str, Any]) -> str | None:
    """Why ``--device-name name`` contradicts what NVML reports (``gpu_identity``), or None.

    With no GPU, a bundled GPU type's name is a contradiction (a CPU run is not a measured
    A100); another name is the user's own label, and the run is recorded as CPU-only. With a
    GPU, a catalog name whose memory differs from NVML's by more than
    :data:`MEMORY_TOLERANCE`, or a bundled name whose model (``a100``, ``rtx2070``) is not in
    NVML's name, is a contradiction; a name outside the catalog is accepted as given."""
    spec = catalog.get(name)
    if ident.get("kind") != "gpu":
        if spec is not None and name in bundled:
            return (f"--device-name {name} names a bundled GPU type ({spec.arch}, "
                    f"{spec.mem_gb:g} GB) but NVML sees no GPU ({ident.get('reason', '')})")
        return None
    if spec is None:
        return None
    seen, mem = str(ident.get("name", "")), float(ident.get("memory_total_mb", 0.0))
    if abs(mem - spec.mem_mb) > MEMORY_TOLERANCE * spec.mem_mb:
        return (f"--device-name {name} has {spec.mem_gb:g} GB in the catalog but NVML reports "
                f"{seen} with {mem / 1024:.1f} GB")
    if name in bundled and not all(t in _compact(seen) for t in _model_tokens(name)):
        return f"--device-name {name} is not the GPU NVML reports ({seen})"
    return None
