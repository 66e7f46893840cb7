"""Fit the kernel model on measured kernel latencies; validate it leaving one GPU out.

Input: a table in NeuSight's schema (``gpuscope.emulator.kernels.ops``) with ``device`` (a
catalog name or alias: ``Tesla T4``) and ``latency_ms``: one launch timed with CUDA events
around the Python call (``start.record(); op(x); end.record()`` on an idle GPU). The start
event is stamped when the host starts dispatching; the kernel starts ``pre`` later (PyTorch's
dispatch and the launch); the end event is queued ``post`` after the launch (the call's return
path) and stamped when both it and the kernel are done. So::

    latency = pre(op, device) + max(post(op, device), t_kernel(shape, device))

flat at ``pre + post`` (25-41 us on NeuSight's five machines) until the kernel outlasts the
host's return path, then growing with it (the measurements show both regimes).
``pre`` and ``post`` are nuisances of the host, not the GPU, fitted per (op, device) jointly
with the class's parameters; an unmeasured device gets the medians of the measured ones
(``KernelParams.floors_us``: ``<op>`` = pre, ``<op>:post`` = post). The class parameters are shared by every device:
the device enters only through its spec sheet (``KernelDevice``). Each class is fitted on
its ops by robust least squares on ``log(latency)`` (soft-L1), in dependency order: the
memory parameters on the element-wise ops, then softmax and layer norm (which stream as
memory kernels do), the SIMT GEMM on ``bmm``/``linear``, then convolutions (implicit GEMMs).

``leave_one_gpu_out`` refits everything without one GPU and predicts it, for every GPU.
``fit_device`` fits one device's effective compute and bandwidth scale and its floors from
its own sweep, the class parameters held (for a GPU profiled with ``gpuscope profile``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gpuscope.cluster.devices import DeviceSpec, get_device, resolve_device_name
from gpuscope.core.errors import InputError
from gpuscope.emulator.kernels.device import KernelDevice
from gpuscope.emulator.kernels.model import KernelBatch, device_seconds
from gpuscope.emulator.kernels.ops import (
    BINARY,
    OP_CLASS,
    UNARY,
    batch_from_table,
    table_batches,
    table_seconds,
)
from gpuscope.emulator.kernels.params import KernelParams

#: Fit order: (parameter table, ops it is fitted on, its keys that are fractions <= 1).
FIT_STEPS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("memory", (*BINARY, *UNARY), ("dram_eff", "dram_eff_hbm", "l2_frac")),
    ("softmax", ("softmax",), ()),
    ("layer_norm", ("ln",), ()),
    ("gemm_simt", ("bmm", "linear"), ("eff", "bw_eff", "occ_128", "occ_pow")),
    ("conv", ("conv",), ("conv_eff", "dw_eff")),
)


#: Tables that get a shape correction (``kernels.correction``): those whose analytic model
#: leaves shape-dependent errors shared by the measured GPUs.
CORRECTED: frozenset[str] = frozenset({"conv"})


def neusight_dir() -> Path:
    from gpuscope.core.data import external_dir

    return external_dir() / "neusight-kernels"


def read_kernel_table(path: str | Path, ops: Sequence[str] | None = None) -> pd.DataFrame:
    """A kernel table: one parquet/CSV file, or a folder of them (NeuSight: one parquet per
    op), optionally only ``ops``; ``InputError`` when nothing readable is there."""
    from gpuscope.core.io import read_table

    p = Path(path)
    files = sorted(p.glob("*.parquet")) + sorted(p.glob("*.csv")) if p.is_dir() else [p]
    if ops is not None and p.is_dir():
        files = [f for f in files if f.stem in set(ops)]
    if not files:
        raise InputError(f"no kernel table (*.parquet, *.csv) in {p}")
    df = pd.concat([read_table(f, "kernel table") for f in files], ignore_index=True)
    for c in ("op", "device"):
        if c in df.columns:
            df[c] = df[c].astype(str)
    if ops is not None and "op" in df.columns:
        df = df[df["op"].isin(list(ops))].reset_index(drop=True)
    return df


def catalog_names(devices: pd.Series, catalog: str | Path | None = None) -> pd.Series:
    """Catalog names of a ``device`` column (names or aliases); ``InputError`` on the first
    unknown one."""
    out = {}
    for d in devices.unique():
        name = resolve_device_name(str(d), catalog)
        if name is None:
            raise InputError(f"kernel table: device {d!r} is neither a catalog device nor an "
                             f"alias of one (datasets/devices.toml)")
        out[d] = name
    return devices.map(out).astype(str)


@dataclass
class _Data:
    """One (op, device) group of a kernel table, ready to price."""

    op: str
    device: str
    dev: KernelDevice
    kb: KernelBatch
    y: np.ndarray  # log latency, seconds


def _groups(df: pd.DataFrame, catalog: str | Path | None) -> list[_Data]:
    dev_names = catalog_names(df["device"], catalog)
    out = []
    for (op, dn), g in df.groupby([df["op"].astype(str), dev_names], sort=True):
        lat = pd.to_numeric(g["latency_ms"], errors="coerce").to_numpy(dtype=float)
        ok = np.isfinite(lat) & (lat > 0)
        g = g[ok]
        out.append(_Data(str(op), str(dn), KernelDevice.from_spec(get_device(str(dn), catalog)),
                         batch_from_table(g), np.log(lat[ok] * 1e-3)))
    return out


def _sample(df: pd.DataFrame, n: int | None, seed: int) -> pd.DataFrame:
    if not n:
        return df
    key = df["op"].astype(str) + "|" + df["device"].astype(str)
    idx = df.assign(_k=key).sample(frac=1.0, random_state=seed).groupby("_k").head(n).index
    return df.loc[sorted(idx)]


@dataclass
class KernelFitResult:
    """Fitted parameters and the per-(op, device) floors (microseconds) of the fit devices."""

    params: KernelParams
    floors: dict[tuple[str, str], float] = field(default_factory=dict)


def _fit_table(p: KernelParams, table: str, fractions: tuple[str, ...], data: list[_Data],
               floors: dict[tuple[str, str], float]) -> KernelParams:
    from scipy.optimize import least_squares

    keys = sorted(getattr(p, table))
    x0 = np.log([getattr(p, table)[k] for k in keys])
    lo = np.full(len(keys), -np.inf)
    hi = np.array([0.0 if k in fractions else np.inf for k in keys])
    x0 = np.minimum(x0, hi - 1e-6)
    fl0 = np.array([floors.get((d.op, d.device), 15.0) for d in data]
                   + [floors.get((d.op + ":post", d.device), 12.0) for d in data])
    nd = len(data)

    def params_of(x: np.ndarray) -> KernelParams:
        tab: dict[str, Any] = {**getattr(p, table), **dict(zip(keys, map(float, np.exp(x))))}
        return replace(p, **{table: tab})  # type: ignore[arg-type]

    def resid(z: np.ndarray) -> np.ndarray:
        q = params_of(z[: len(keys)])
        fl = z[len(keys):] * 1e-6
        return np.concatenate([
            np.log(measured_latency(fl[i], fl[nd + i], device_seconds(d.kb, d.dev, q, fixed=False)))
            - d.y for i, d in enumerate(data)])

    z0 = np.concatenate([x0, fl0])
    lb = np.concatenate([lo, np.full(2 * nd, 0.01)])
    ub = np.concatenate([hi, np.full(2 * nd, 1000.0)])
    # each (op, device) floor moves its own rows only: a sparse Jacobian, few evaluations
    sizes = [len(d.y) for d in data]
    start = np.cumsum([0, *sizes])
    sp = np.zeros((start[-1], len(z0)), dtype=bool)
    sp[:, : len(keys)] = True
    for i in range(nd):
        sp[start[i]:start[i + 1], [len(keys) + i, len(keys) + nd + i]] = True
    r = least_squares(resid, z0, bounds=(lb, ub), loss="soft_l1", f_scale=0.05,
                      x_scale="jac", max_nfev=200, jac_sparsity=sp)
    for i, d in enumerate(data):
        floors[(d.op, d.device)] = float(r.x[len(keys) + i])
        floors[(d.op + ":post", d.device)] = float(r.x[len(keys) + nd + i])
    return params_of(r.x[: len(keys)])


def measured_latency(pre: float | np.ndarray, post: float | np.ndarray,
                     t: np.ndarray) -> np.ndarray:
    """Seconds a CUDA-event timing of one launch reads (module docstring), with a smooth
    maximum (the 8-norm) so that the fit's Jacobian stays finite at the knee."""
    hi = np.maximum(post, t)
    lo = np.minimum(post, t)
    return pre + hi * (1.0 + (lo / np.maximum(hi, 1e-30)) ** 8) ** 0.125


def _fit_correction(p: KernelParams, table: str, data: list[_Data],
                    floors: Mapping[tuple[str, str], float]) -> KernelParams:
    """The table's shape correction (``kernels.correction``), fitted on the log residuals of
    the rows where the kernel outlasts the host's return path (the rest show only floors)."""
    from gpuscope.emulator.kernels import correction
    from gpuscope.emulator.kernels.model import shape_features

    q = replace(p, corrections={k: v for k, v in p.corrections.items() if k != table})
    xs, rs = [], []
    for d in data:
        t = device_seconds(d.kb, d.dev, q, fixed=False)
        pre = floors[(d.op, d.device)] * 1e-6
        post = floors[(d.op + ":post", d.device)] * 1e-6
        meas = np.exp(d.y)
        ok = (meas - pre > 1.5 * post) & (t > 0)
        if ok.any():
            xs.append(shape_features(table, d.kb.take(ok), d.dev, t[ok]))
            rs.append(np.log(meas[ok] - pre) - np.log(t[ok]))
    if not xs or sum(map(len, rs)) < 50:
        return q
    model = correction.fit(np.concatenate(xs), np.concatenate(rs))
    return replace(q, corrections={**q.corrections, table: model})


def fit_kernel_params(df: pd.DataFrame, base: KernelParams, catalog: str | Path | None = None,
                      sample: int | None = 1500, seed: int = 0,
                      progress: Callable[[str], None] | None = None,
                      corrections: bool = True) -> KernelFitResult:
    """Fit every class's table on the ops of ``df`` it covers (module docstring), then its
    shape correction (``corrections``); tables whose ops are absent keep ``base``'s values.
    ``sample``: rows per (op, device) used (all: None)."""
    df = _sample(df, sample, seed)
    data = _groups(df, catalog)
    p = replace(base, corrections={})
    floors: dict[tuple[str, str], float] = {}
    for table, ops, fractions in FIT_STEPS:
        sub = [d for d in data if d.op in ops]
        if not sub:
            if table in base.corrections:
                p = replace(p, corrections={**p.corrections, table: base.corrections[table]})
            continue
        if progress:
            progress(table)
        p = _fit_table(p, table, fractions, sub, floors)
        if corrections and table in CORRECTED:
            p = _fit_correction(p, table, sub, floors)
    med: dict[str, list[float]] = {}
    for (op, _), v in floors.items():
        med.setdefault(op, []).append(v)
    fl = {**base.floors_us, **{op: float(np.median(v)) for op, v in med.items()}}
    return KernelFitResult(replace(p, floors_us=fl), floors)


def predict_ms(df: pd.DataFrame, params: KernelParams, catalog: str | Path | None = None,
               floors: Mapping[tuple[str, str], float] | None = None,
               devices: pd.Series | None = None) -> np.ndarray:
    """Predicted ``latency_ms`` of each row: its device time seen through the host's ``pre``
    and ``post`` of its (op, device) from ``floors`` or, failing that, the op's medians
    (``params.floors_us``)."""
    dev_names = catalog_names(df["device"] if devices is None else devices, catalog)
    out = np.full(len(df), np.nan)
    fl = floors or {}
    for dn in dev_names.unique():
        rows = (dev_names == dn).to_numpy()
        dev = KernelDevice.from_spec(get_device(dn, catalog))
        t = table_seconds(df[rows], dev, params)  # checks the rows: a bad table is one line
        ops = df["op"].astype(str).to_numpy()[rows]
        pre = np.array([fl.get((o, dn), params.floors_us.get(o, 0.0)) for o in ops])
        post = np.array([fl.get((o + ":post", dn), params.floors_us.get(o + ":post", 0.0))
                         for o in ops])
        out[rows] = measured_latency(pre * 1e-6, post * 1e-6, t) * 1e3
    return out


def leave_one_gpu_out(df: pd.DataFrame, base: KernelParams, catalog: str | Path | None = None,
                      sample: int | None = 1500, seed: int = 0,
                      progress: Callable[[str], None] | None = None,
                      corrections: bool = True,
                      fits: dict[str, object] | None = None,
                      unseen_generation: str | None = "volta") -> pd.DataFrame:
    """Each GPU's rows predicted by a fit on the other GPUs only: ``df`` with ``class``,
    ``held_out`` (the catalog name) and ``pred_ms``; ``fits`` (if given) receives each
    held-out GPU's parameters. A held-out GPU whose cuBLAS kernel generation no other GPU
    shares (the A100's ``ampere_sgemm``) is priced with ``unseen_generation``'s tiles (None:
    its own, i.e. the library's tile catalog taken as known)."""
    from gpuscope.emulator.kernels.gemm import SIMT_GENERATION

    names = catalog_names(df["device"], catalog)
    archs = {n: get_device(n, catalog).arch for n in names.unique()}
    parts = []
    for held in sorted(names.unique()):
        if progress:
            progress(f"fit without {held}")
        fit = fit_kernel_params(df[names != held], base, catalog, sample, seed,
                                corrections=corrections)
        gen = SIMT_GENERATION.get(archs[held], "ampere")
        seen = {SIMT_GENERATION.get(a, "ampere") for n, a in archs.items() if n != held}
        if unseen_generation and gen not in seen:
            fit.params = replace(fit.params, tile_generation={
                **fit.params.tile_generation, archs[held]: unseen_generation})
        test = df[names == held]
        if fits is not None:
            fits[held] = fit.params
        parts.append(test.assign(held_out=held, pred_ms=predict_ms(test, fit.params, catalog)))
    out = pd.concat(parts)
    return out.assign(**{"class": out["op"].map(OP_CLASS)})


#: Compute peaks a device fit scales, each by its own factor: the FP32 CUDA cores, the TF32
#: and the FP16/BF16 tensor cores (``KernelDevice`` field -> catalog field).
PEAKS: dict[str, str] = {"fp32": "fp32_tflops", "tf32": "tf32_tflops", "fp16": "tensor_tflops"}
#: Row precisions (``kernelschema``) whose compute kernels run at each peak, where the
#: device has it (fp32 rows of an Ampere convolution run on TF32: the fit prices them so).
PEAK_ROWS: dict[str, tuple[str, ...]] = {"fp32": ("fp32",), "tf32": ("tf32",),
                                         "fp16": ("fp16", "bf16")}


@dataclass(frozen=True)
class DeviceFit:
    """One device's figures fitted from its own kernel sweep: a scale on each compute peak
    (``scales``, keys of ``PEAKS``: the clock and library efficiency it sustains against the
    datasheet's), on its DRAM bandwidth, and its per-op host floors (``<op>`` = pre,
    ``<op>:post`` = post, microseconds). A peak without rows in the sweep keeps the FP32
    scale; ``fitted`` names the peaks the sweep measured."""

    scales: dict[str, float]
    bw_scale: float
    floors_us: dict[str, float]
    fitted: tuple[str, ...] = ()

    @property
    def compute_scale(self) -> float:
        """The FP32 peak's scale."""
        return self.scales["fp32"]

    def device(self, dev: KernelDevice) -> KernelDevice:
        """``dev`` with the fitted peaks and bandwidth."""
        return replace(dev, bw=dev.bw * self.bw_scale,
                       **{k: getattr(dev, k) * self.scales[k] for k in PEAKS})

    def apply(self, spec: DeviceSpec) -> DeviceSpec:
        """``spec`` with the fitted peaks and bandwidth (sources say so)."""
        how = "fitted on a kernel sweep (gpuscope emulator fit)"
        src = {**spec.sources, **{f: f"{how}: {getattr(spec, f):g} x {self.scales[k]:.3f}"
                                  + ("" if k in self.fitted or not self.fitted
                                     else " (no rows at this peak: the FP32 scale)")
                                  for k, f in PEAKS.items()},
               "mem_bw_gbs": f"{how}: {spec.mem_bw_gbs:g} x {self.bw_scale:.3f}"}
        return replace(spec, mem_bw_gbs=spec.mem_bw_gbs * self.bw_scale, sources=src,
                       **{f: getattr(spec, f) * self.scales[k] for k, f in PEAKS.items()})


def fit_device(kernels: pd.DataFrame, spec: DeviceSpec, params: KernelParams,
               floors_only: bool = False) -> DeviceFit:
    """Fit ``spec``'s compute-peak scales (one per peak its rows exercise: ``PEAK_ROWS``),
    bandwidth scale and per-op floors on its own kernel sweep (the kernel-table schema with
    ``latency_ms`` and optionally ``precision``), the class parameters ``params`` held, by
    robust least squares on log latency; ``floors_only`` holds the scales at 1 (the host's
    floors alone)."""
    from scipy.optimize import least_squares

    if "latency_ms" not in kernels.columns or kernels.empty:
        raise InputError("kernel sweep: needs rows with a latency_ms column")
    kernels = kernels.reset_index(drop=True)
    ops = sorted(kernels["op"].astype(str).unique())
    y = np.log(pd.to_numeric(kernels["latency_ms"], errors="coerce").to_numpy(dtype=float) * 1e-3)
    if not np.isfinite(y).all():
        raise InputError("kernel sweep: latency_ms must be positive numbers")
    groups = table_batches(kernels)  # a bad row: one line, before the fit
    oi = np.array([ops.index(o) for o in kernels["op"].astype(str)])
    base = KernelDevice.from_spec(spec)
    prec = set(kernels["precision"].astype(str)) if "precision" in kernels.columns else {"fp32"}
    mm = kernels["op"].astype(str).isin(["bmm", "linear", "conv"]).to_numpy()
    free = ["fp32"] + [k for k in ("tf32", "fp16") if getattr(base, k) > 0 and mm.any()
                       and prec & set(PEAK_ROWS[k])]
    nf = len(free)

    def fit_of(z: np.ndarray) -> DeviceFit:
        sc = {k: float(np.exp(z[free.index(k)] if k in free else z[0])) for k in PEAKS}
        fl = z[nf + 1:]
        return DeviceFit(sc, float(np.exp(z[nf])),
                         {**{o: float(v) for o, v in zip(ops, fl)},
                          **{o + ":post": float(v) for o, v in zip(ops, fl[len(ops):])}},
                         tuple(free))

    def resid(z: np.ndarray) -> np.ndarray:
        t = table_seconds(groups, fit_of(z).device(base), params)
        fl = z[nf + 1:] * 1e-6
        return np.log(measured_latency(fl[oi], fl[len(ops) + oi], t)) - y

    z0 = np.concatenate([np.zeros(nf + 1), [params.floors_us.get(o, 15.0) for o in ops],
                         [params.floors_us.get(o + ":post", 12.0) for o in ops]])
    tight = 1e-9 if floors_only else 1.0
    lb = np.concatenate([np.full(nf + 1, -3.0 * tight), np.full(2 * len(ops), 0.01)])
    ub = np.concatenate([np.full(nf + 1, tight), np.full(2 * len(ops), 1000.0)])
    sp = np.zeros((len(y), len(z0)), dtype=bool)  # a floor moves its own op's rows only
    sp[:, : nf + 1] = True
    sp[np.arange(len(y)), nf + 1 + oi] = True
    sp[np.arange(len(y)), nf + 1 + len(ops) + oi] = True
    # unit variable scales (log scales, floors in us): with x_scale="jac" the soft-L1 fit
    # crawled and stopped (ftol) well short of the optimum, a noiseless sweep's peaks 3 % off
    r = least_squares(resid, z0, bounds=(lb, ub), loss="soft_l1", f_scale=0.05, x_scale=1.0,
                      jac_sparsity=sp)
    return fit_of(r.x)
