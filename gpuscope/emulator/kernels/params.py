"""The kernel model's parameters (``kernel_params.json`` beside this module).

One table of named constants per kernel class, fitted on measured kernels
(``gpuscope.emulator.calibration.kernel_fit``; ``provenance`` says on what), plus the fixed
costs every kernel pays on the device (``launch_us``, ``mem_latency_us``) and, for tables of
single timed launches (``gpuscope emulate kernels``), the host-side floor such a measurement
includes per op (``floors_us``: PyTorch's dispatch and the launch, as CUDA events around one
call see them). ``tile_generation`` overrides which cuBLAS kernel generation's tiles an
architecture uses (``gemm.SIMT_GENERATION``; the leave-one-GPU-out check uses it for a
generation no fitted GPU has). ``simt_arch_scale`` scales the SIMT GEMM and convolution
efficiency of an architecture no kernel measurement covers, so that the model reproduces a
cited figure (Kepler: cuBLAS SGEMM at 0.63 of a K40's boost peak, ``k40_sgemm`` in
``datasets/devices.toml``).
``dual_fp32_scale`` does the same, per architecture, for SMs whose FP32 peak counts two
datapaths (``KernelDevice.dual_fp32``: GA10x, Ada, Hopper; no measured kernel has one), from
cited cuBLAS SGEMM figures (``h200_sgemm``, ``rtx3080_sgemm`` in ``datasets/devices.toml``).
``conv_arch_scale`` scales the SIMT convolutions (cuDNN) of an architecture no measured kernel
covers on top of that, from measured network times (Kepler: ``jcjohnson_cnn``). All three
are computed by ``gpuscope.emulator.calibration.cited``.
Stored as JSON, loaded without running code.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpuscope.core.errors import InputError

KERNEL_PARAMS_FILE: Path = Path(__file__).with_name("kernel_params.json")
#: Parameter tables and their keys (every key must be present in a parameters file).
TABLES: dict[str, tuple[str, ...]] = {
    "gemm_simt": ("eff", "ai_half", "occ_128", "occ_pow", "cta_cycles", "bw_eff"),
    "gemm_tc": ("eff", "ai_half", "occ_128", "occ_pow", "cta_cycles", "bw_eff"),
    "conv": ("conv_eff", "wino_gain", "wino_traffic", "dw_eff"),
    "memory": ("dram_eff", "dram_eff_hbm", "l2_bytes_per_clk", "l2_frac", "l2_sharp"),
    "softmax": ("passes_long", "rows_per_sm", "row_cycles", "cols_cycles"),
    "layer_norm": ("passes_long", "rows_per_sm", "row_cycles", "cols_cycles"),
    "batch_norm": ("passes_long", "rows_per_sm", "row_cycles", "cols_cycles"),
    "reduce": ("passes_long", "rows_per_sm", "row_cycles", "cols_cycles"),
    "attention": ("eff",),
}


@dataclass(frozen=True)
class KernelParams:
    """Constants of the kernel model (module docstring; each class's module gives the math)."""

    gemm_simt: dict[str, float]
    gemm_tc: dict[str, float]
    conv: dict[str, float]
    memory: dict[str, float]
    softmax: dict[str, float]
    layer_norm: dict[str, float]
    batch_norm: dict[str, float]
    reduce: dict[str, float]
    attention: dict[str, float]
    launch_us: float = 2.0
    mem_latency_us: float = 0.4
    floors_us: dict[str, float] = field(default_factory=dict)
    corrections: dict[str, dict[str, Any]] = field(default_factory=dict)
    tile_generation: dict[str, str] = field(default_factory=dict)
    simt_arch_scale: dict[str, float] = field(default_factory=dict)
    dual_fp32_scale: dict[str, float] = field(default_factory=dict)
    conv_arch_scale: dict[str, float] = field(default_factory=dict)
    provenance: dict[str, str] = field(default_factory=dict)

    def with_(self, **changes: Any) -> KernelParams:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> KernelParams:
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise InputError(f"kernel parameters: unknown key(s) {', '.join(unknown)}")
        kw: dict[str, Any] = {}
        for t, keys in TABLES.items():
            tab = d.get(t)
            if not isinstance(tab, dict) or set(keys) - set(tab):
                raise InputError(f"kernel parameters: table {t!r} needs {', '.join(keys)}")
            kw[t] = {k: _positive(f"{t}.{k}", tab[k]) for k in keys}
        for k in ("launch_us", "mem_latency_us"):
            if k in d:
                kw[k] = _positive(k, d[k], zero=True)
        kw["floors_us"] = {str(k): _positive(f"floors_us.{k}", v, zero=True)
                           for k, v in dict(d.get("floors_us", {})).items()}
        kw["corrections"] = {str(k): _correction(str(k), v)
                             for k, v in dict(d.get("corrections", {})).items()}
        kw["tile_generation"] = _tile_generation(d.get("tile_generation", {}))
        kw["simt_arch_scale"] = {str(a): _positive(f"simt_arch_scale.{a}", v)
                                 for a, v in dict(d.get("simt_arch_scale", {})).items()}
        kw["dual_fp32_scale"] = {str(a): _positive(f"dual_fp32_scale.{a}", v)
                                 for a, v in dict(d.get("dual_fp32_scale", {})).items()}
        kw["conv_arch_scale"] = {str(a): _positive(f"conv_arch_scale.{a}", v)
                                 for a, v in dict(d.get("conv_arch_scale", {})).items()}
        kw["provenance"] = {str(k): str(v) for k, v in dict(d.get("provenance", {})).items()}
        return cls(**kw)

    def save(self, path: str | Path) -> Path:
        from gpuscope.core.io import write_text

        return write_text(Path(path), json.dumps(self.to_dict(), indent=1, sort_keys=True)
                          + "\n", what="kernel parameters")

    @classmethod
    def load(cls, path: str | Path) -> KernelParams:
        from gpuscope.core.io import read_json

        return cls.from_dict(read_json(path, "kernel parameters", kind=dict))


def _positive(name: str, v: Any, zero: bool = False) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise InputError(f"kernel parameters: {name} = {v!r} is not a number") from None
    if not (f >= 0.0 if zero else f > 0.0) or f != f or f == float("inf"):
        raise InputError(f"kernel parameters: {name} = {f} must be {'>= 0' if zero else '> 0'}")
    return f


def _tile_generation(v: Any) -> dict[str, str]:
    """Architecture -> cuBLAS SIMT kernel generation overrides, both checked."""
    from gpuscope.cluster.devices import ARCHS
    from gpuscope.emulator.kernels.gemm import TILES

    out = {str(a): str(g) for a, g in dict(v).items()}
    for a, g in out.items():
        if a not in ARCHS or g not in TILES or g == "tensor":
            raise InputError(f"kernel parameters: tile_generation {a!r} = {g!r}: expected an "
                             f"architecture and one of maxwell, volta, ampere")
    return out


def _correction(table: str, v: Any) -> dict[str, Any]:
    """A stored shape correction (``kernels.correction``), checked for shape and finiteness."""
    import numpy as np

    from gpuscope.emulator.kernels.correction import FEATURES, TABLE_CLASS

    if table not in TABLE_CLASS:
        raise InputError(f"kernel parameters: correction for unknown table {table!r}")
    nf = len(FEATURES[TABLE_CLASS[table]])
    try:
        knots = [[float(k) for k in ks] for ks in v["knots"]]
        lo, hi = [float(x) for x in v["lo"]], [float(x) for x in v["hi"]]
        coef, icpt = [float(c) for c in v["coef"]], float(v["intercept"])
    except (KeyError, TypeError, ValueError):
        raise InputError(f"kernel parameters: correction {table!r} needs knots, lo, hi, "
                         f"coef, intercept") from None
    if len(knots) != nf or len(lo) != nf or len(hi) != nf or len(coef) != nf + sum(map(len, knots)):
        raise InputError(f"kernel parameters: correction {table!r} does not match its "
                         f"{nf} features")
    if not np.isfinite([*coef, icpt, *lo, *hi]).all():
        raise InputError(f"kernel parameters: correction {table!r} has non-finite numbers")
    return {"knots": knots, "lo": lo, "hi": hi, "coef": coef, "intercept": icpt}


@lru_cache(maxsize=1)
def _default() -> KernelParams:
    return KernelParams.load(KERNEL_PARAMS_FILE)


def default_kernel_params() -> KernelParams:
    """The fitted parameters shipped with gpuscope (``kernel_params.json``)."""
    return _default()
