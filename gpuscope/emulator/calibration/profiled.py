"""A profiled GPU's catalog entry from its own kernel sweep (``gpuscope emulator fit``).

Input: a kernel table of one device (``gpuscope profile kernels``: the kernel-table schema with
``latency_ms``, ``precision``, ``status`` and the sweep's provenance columns). The device's
starting figures are its catalog entry (a bundled or user GPU of that name) or, for a GPU the
catalog lacks, those of a ``like`` device, adapted as ``gpuscope devices add --like`` does
(peaks and bandwidth scaled by SM count x clock) to the SM count, L2, memory, clock and
architecture the sweep recorded from torch and NVML. ``kernel_fit.fit_device`` then fits, the
kernel model's class parameters held, one scale per compute peak the sweep exercised (FP32,
TF32, FP16/BF16 tensor cores), one on the DRAM bandwidth, and the host's per-op floors of a
single timed launch. The result:

* ``devices.toml``: the catalog entry with the fitted peaks and bandwidth (every field, each
  with its source), for ``--catalog`` of ``estimate``, ``emulate`` and the rest. A bundled
  name cannot be reused, so a bundled GPU's entry is ``<name>-fitted``;
* ``kernel_params.json``: the kernel model's parameters with this device's host floors
  (``gpuscope emulate kernels --kernel-params``);
* ``fit.json``: the scales, floors, what was fitted on, and how well the entry reproduces its
  own measurements (median |log(pred / measured)|, overall and per op class).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gpuscope.cluster.devices import DeviceSpec
from gpuscope.core.errors import InputError
from gpuscope.emulator.calibration.kernel_fit import DeviceFit, fit_device, measured_latency
from gpuscope.emulator.kernels.device import KernelDevice
from gpuscope.emulator.kernels.ops import OP_CLASS, table_seconds
from gpuscope.emulator.kernels.params import KernelParams

#: Sweep provenance columns that describe the device (``profiling.kernels.PROVENANCE``) and
#: the catalog fields they give a new GPU's entry.
MEASURED_FIELDS: dict[str, str] = {"sm_count": "sm_count", "l2_mb": "l2_mb",
                                   "boost_clock_mhz": "boost_clock_mhz"}


@dataclass
class ProfiledFit:
    """A fitted device: its catalog ``name`` and ``entry`` (catalog fields with ``sources``),
    the ``fit``, the parameters with its floors, and a JSON-able ``report``."""

    name: str
    entry: dict[str, Any]
    spec: DeviceSpec
    fit: DeviceFit
    params: KernelParams
    report: dict[str, Any]


def device_rows(df: pd.DataFrame, device: str) -> pd.DataFrame:
    """The measured rows of ``device`` in a kernel table: ``status`` ok (when present) and a
    positive ``latency_ms``; ``InputError`` when none or another device's table."""
    if "op" not in df.columns or "latency_ms" not in df.columns:
        raise InputError("kernel table: needs op and latency_ms columns (gpuscope profile "
                         "kernels writes them)")
    if "device" in df.columns:
        names = set(df["device"].astype(str))
        if device not in names:
            raise InputError(f"kernel table holds kernels of {', '.join(sorted(names))}, not "
                             f"{device}; give --device one of them")
        df = df[df["device"].astype(str) == device]
    if "status" in df.columns:
        df = df[df["status"].astype(str) == "ok"]
    lat = pd.to_numeric(df["latency_ms"], errors="coerce")
    df = df[np.isfinite(lat) & (lat > 0)]
    unknown = sorted(set(df["op"].astype(str)) - set(OP_CLASS))
    if unknown:
        more = f" and {len(unknown) - 5:,} more" if len(unknown) > 5 else ""
        raise InputError(f"kernel table: unknown op(s) {', '.join(u[:40] for u in unknown[:5])}"
                         f"{more}; known: {', '.join(OP_CLASS)}")
    if len(df) < 8:
        raise InputError(f"kernel table: {len(df)} measured row(s) of {device}; the fit needs "
                         "at least 8")
    return df.reset_index(drop=True)


def _measured(df: pd.DataFrame) -> dict[str, Any]:
    """The device facts the sweep recorded (first row; the same on every row)."""
    row = df.iloc[0]
    out: dict[str, Any] = {}
    for col in ("device_kind", "gpu_name", "memory_total_mb", "compute_capability",
                *MEASURED_FIELDS):
        v = row.get(col) if col in df.columns else None
        if v is not None and not (isinstance(v, float) and math.isnan(v)):
            out[col] = v
    return out


def base_entry(name: str, like: str | None, facts: dict[str, Any]
               ) -> tuple[str, dict[str, Any]]:
    """(entry name, full catalog entry with sources) to start the fit from (module
    docstring)."""
    from gpuscope.cluster.devices import DEFAULT_CATALOG, load_catalog
    from gpuscope.cluster.nvml import arch_of
    from gpuscope.cluster.usercatalog import resolve_like

    known = load_catalog()
    bundled = load_catalog(DEFAULT_CATALOG)
    if like is None:
        if name not in known:
            raise InputError(f"device {name!r} is not in the catalog: give --like DEVICE (a "
                             "catalog GPU to start from, e.g. h100)")
        spec = known[name]
        entry = {**spec.to_dict(), "sources": dict(spec.sources)}
        entry.pop("name")
        if name in bundled:  # the names the GPU reports stay with the bundled entry
            entry.pop("aliases", None)
        return (f"{name}-fitted" if name in bundled else name), entry
    gpu = facts.get("device_kind") == "gpu"
    given: dict[str, Any] = {}
    src: dict[str, str] = {}
    if gpu:
        for col, field in MEASURED_FIELDS.items():
            if col in facts and float(facts[col]) > 0:
                given[field] = int(facts[col]) if field == "sm_count" else float(facts[col])
                src[field] = f"kernel sweep: {facts.get('gpu_name', '')} ({col})"
        if "memory_total_mb" in facts:
            given["mem_gb"] = round(float(facts["memory_total_mb"]) / 1024.0, 2)
            src["mem_gb"] = f"kernel sweep: {facts.get('gpu_name', '')} (NVML memory.total)"
        cc = str(facts.get("compute_capability", ""))
        if cc.count(".") == 1 and (arch := arch_of(*map(int, cc.split(".")))):
            given["arch"], src["arch"] = arch, f"kernel sweep: compute capability {cc}"
    out_name = f"{name}-fitted" if name in bundled else name
    entry = resolve_like(out_name, {**given, "like": like, "sources": src}, known,
                         "emulator fit --like")
    return out_name, entry


def fit_profiled(kernels: pd.DataFrame, device: str, params: KernelParams,
                 like: str | None = None, source: str = "kernel table") -> ProfiledFit:
    """Fit ``device``'s figures on its rows of ``kernels`` (module docstring)."""
    from gpuscope.cluster.devices import _parse

    df = device_rows(kernels, device)
    facts = _measured(df)
    name, entry = base_entry(device, like, facts)
    spec0 = _parse(name, entry, Path(source))
    fit = fit_device(df, spec0, params)
    spec = fit.apply(spec0)
    entry = {**entry, **{k: round(float(getattr(spec, k)), 4) for k in
                         ("fp32_tflops", "tf32_tflops", "tensor_tflops", "mem_bw_gbs")},
             "sources": dict(spec.sources)}
    pfl = {**params.floors_us, **fit.floors_us}
    fitted_params = params.with_(floors_us=pfl, provenance={
        **params.provenance, "device_floors": f"{name}: host floors fitted on {source}"})
    t = table_seconds(df, KernelDevice.from_spec(spec), params)
    ops = df["op"].astype(str)
    pre = ops.map(lambda o: fit.floors_us[o]).to_numpy() * 1e-6
    post = ops.map(lambda o: fit.floors_us[o + ":post"]).to_numpy() * 1e-6
    pred = measured_latency(pre, post, t) * 1e3
    err = np.abs(np.log(pred / df["latency_ms"].astype(float).to_numpy()))
    cls = ops.map(OP_CLASS)
    report = {
        "device": name, "profiled_as": device, "like": like, "kernels": source,
        "rows": len(df), "ops": sorted(set(ops)),
        "precisions": sorted(set(df["precision"].astype(str))) if "precision" in df else ["fp32"],
        "device_kind": facts.get("device_kind", "unknown"), "gpu_name": facts.get("gpu_name"),
        "scales": fit.scales, "fitted_peaks": list(fit.fitted), "bw_scale": fit.bw_scale,
        "floors_us": fit.floors_us,
        "median_abs_log": float(np.median(err)),
        "median_abs_log_by_class": {c: float(np.median(err[(cls == c).to_numpy()]))
                                    for c in sorted(set(cls))},
        "provenance": {"gpu": "measured", "cpu-only": "cpu-only"}.get(
            str(facts.get("device_kind")), "measured (device kind not recorded)"),
    }
    return ProfiledFit(name, entry, spec, fit, fitted_params, report)


def write_profiled(res: ProfiledFit, out: str | Path, inputs: list[str | Path]) -> dict[str, str]:
    """Write ``devices.toml``, ``kernel_params.json`` and ``fit.json`` into the folder ``out``
    (each atomically); returns their paths."""
    from gpuscope.cluster.usercatalog import HEADER, to_toml
    from gpuscope.core.io import check_output, make_dirs, write_json, write_text

    out = check_output(out, inputs, kind="dir", what="fit folder")
    make_dirs(out)
    head = (f"{HEADER}\n{res.name}: fitted on the kernel sweep {res.report['kernels']} "
            f"({res.report['rows']} rows, {res.report['provenance']}) by gpuscope emulator fit.")
    paths = {"catalog": out / "devices.toml", "kernel_params": out / "kernel_params.json",
             "fit": out / "fit.json"}
    write_text(paths["catalog"], to_toml({res.name: res.entry}, head), inputs, "device catalog")
    write_text(paths["kernel_params"], _params_json(res.params), inputs, "kernel parameters")
    write_json(paths["fit"], res.report, inputs, "fit report")
    return {k: str(v) for k, v in paths.items()}


def _params_json(p: KernelParams) -> str:
    import json

    return json.dumps(p.to_dict(), indent=1, sort_keys=True) + "\n"
