"""``gpuscope profile kernels``: time a sweep of single kernels on the local torch device.

Each planned row (``kernelplan``: GEMMs, convolutions, element-wise, softmax, layer norm and
the optimizer's ``torch._foreach_*`` ops, in every precision the device supports) builds its
tensors on the device, runs the op ``WARMUP`` times (cuDNN autotuning included:
``cudnn.benchmark`` is on, as in training), then times single launches as NeuSight did: on
CUDA an event recorded before and after the Python call, synchronised after each launch (an
idle GPU per launch); on CPU ``time.perf_counter`` around the call, the same code otherwise.
``latency_ms`` is the median of 3-``MAX_REPS`` launches (fewer for long kernels:
``REP_BUDGET_S`` per row).

Output: the kernel-table schema (``kernelschema``; what ``gpuscope emulate kernels`` and
``gpuscope emulator fit`` read) with ``device`` (the ``--device-name``), ``precision``,
``dtype``, ``status`` (``ok``, ``oom``, ``error``), ``latency_ms``, ``latency_ms_min``,
``reps``, ``key`` and the provenance of every row (``PROVENANCE``: what NVML and torch say the
device is; ``device_kind`` ``gpu`` or ``cpu-only``; ``timer``). Resumable: rows are written
every ``CHUNK_S`` seconds by an atomic rewrite of the table, a rerun skips the keys already
there, and an interrupt (Ctrl-C, SIGTERM) writes what was measured before it ends.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuscope.core.errors import InputError
from gpuscope.profiling.kernelplan import Limits, plan
from gpuscope.profiling.kernelschema import BINARY, PRECISION_DTYPES, SHAPE_COLUMNS, UNARY

WARMUP: int = 2
MAX_REPS: int = 10
#: Seconds of timed launches per row at most (at least 3 launches).
REP_BUDGET_S: float = 0.05
#: Seconds between atomic rewrites of the table.
CHUNK_S: float = 10.0
#: Mean seconds one planned row takes (build, warm-up, timing), by device type: the budget
#: divided by it is the plan's size.
ROW_COST_S: dict[str, float] = {"cuda": 0.04, "cpu": 0.03}
#: Bounds of the planned kernels on a CPU (seconds, not minutes, per row on one core).
CPU_LIMITS: tuple[int, float] = (2**16, 2.0**24)
#: Provenance columns, the same on every row of one run.
PROVENANCE: tuple[str, ...] = (
    "device_kind", "gpu_name", "gpu_uuid", "driver", "memory_total_mb", "sm_count", "l2_mb",
    "boost_clock_mhz", "compute_capability", "torch", "cuda", "host", "timer", "provenance",
)


def describe_device(device: Any) -> dict[str, Any]:
    """The provenance of ``device`` (a ``torch.device``): NVML's identity of the GPU
    (``cluster.nvml``), torch's properties, the host; ``device_kind`` ``cpu-only`` on CPU."""
    import torch

    from gpuscope.cluster.nvml import gpu_identity, gpu_spec

    info: dict[str, Any] = {k: None for k in PROVENANCE}
    info.update(torch=torch.__version__, cuda=torch.version.cuda, host=platform.node(),
                provenance="measured")
    if device.type != "cuda":
        info.update(device_kind="cpu-only", gpu_name="cpu", sm_count=os.cpu_count() or 1,
                    timer="perf_counter")
        return info
    idx = device.index if device.index is not None else torch.cuda.current_device()
    props = torch.cuda.get_device_properties(idx)
    info.update(device_kind="gpu", gpu_name=props.name, sm_count=props.multi_processor_count,
                memory_total_mb=props.total_memory / 2**20, timer="cuda-events",
                compute_capability=f"{props.major}.{props.minor}")
    l2 = getattr(props, "L2_cache_size", 0)
    info["l2_mb"] = l2 / 2**20 if l2 else None
    ident = gpu_identity(index=idx)
    if ident.get("kind") == "gpu":
        info.update(gpu_name=ident["name"], gpu_uuid=ident.get("uuid"), driver=ident["driver"],
                    memory_total_mb=ident["memory_total_mb"])
        try:
            info["boost_clock_mhz"] = gpu_spec(index=idx)[0].get("boost_clock_mhz")
        except InputError:
            pass
    return info


def supported_precisions(device: Any) -> tuple[str, ...]:
    """Row precisions the device runs natively: TF32 from compute capability 8.0, BF16 where
    torch says so, FP16 on every CUDA GPU; a CPU sweep is FP32 only."""
    import torch

    if device.type != "cuda":
        return ("fp32",)
    major = torch.cuda.get_device_capability(device)[0]
    out = ["fp32", *(["tf32"] if major >= 8 else []), "fp16"]
    return (*out, *(["bf16"] if torch.cuda.is_bf16_supported() else []))


def limits(device: Any) -> Limits:
    """Kernel bounds for ``device``: on a GPU 2^28 elements per tensor (at most 1/32 of its
    memory) and 2^39 FLOPs; ``CPU_LIMITS`` on CPU."""
    import torch

    if device.type != "cuda":
        return Limits(CPU_LIMITS[0], CPU_LIMITS[1], os.cpu_count() or 1)
    props = torch.cuda.get_device_properties(device)
    return Limits(int(min(2**28, props.total_memory // 32 // 4)), 2.0**39,
                  props.multi_processor_count)


def make_call(row: dict[str, Any], device: Any) -> Callable[[], Any]:
    """The op of one planned row, its tensors built on ``device`` (module docstring)."""
    import torch
    import torch.nn.functional as F

    op = str(row["op"])
    dt = getattr(torch, PRECISION_DTYPES[str(row["precision"])])
    torch.manual_seed(0)  # values drawn on the device itself: a 2^28-element tensor in ms

    def t(*shape: int, positive: bool = False) -> Any:
        if positive:
            return torch.rand(*shape, device=device, dtype=dt) + 0.5
        return torch.randn(*shape, device=device, dtype=dt)

    b = int(row.get("B", 1))
    if op == "bmm":
        x, y = t(b, int(row["M"]), int(row["N"])), t(b, int(row["N"]), int(row["K"]))
        return lambda: torch.bmm(x, y)
    if op == "linear":
        x, w, bias = t(b, int(row["M"]), int(row["N"])), t(int(row["K"]), int(row["N"])), \
            t(int(row["K"]))
        return lambda: F.linear(x, w, bias)
    if op == "conv":
        c, k, ks, s = (int(row[c]) for c in ("Input_Channel", "Output_Channel", "Kernel_Szie",
                                              "Input_Size"))
        x, w = t(b, c, s, s), t(k, c, ks, ks)
        st, pad = int(row["Stride"]), int(row["Padding"])
        return lambda: F.conv2d(x, w, stride=st, padding=pad)
    h = int(row["H"])
    if op == "softmax":
        x = t(b, h)
        return lambda: torch.softmax(x, dim=-1)
    if op == "ln":
        x, w, bias = t(b, h), t(h), t(h)
        return lambda: F.layer_norm(x, (h,), w, bias)
    if op.startswith("foreach_"):
        xs = [t(h) for _ in range(b)]
        if op == "foreach_mulu":
            return lambda: torch._foreach_mul_(xs, 0.999)
        ys = [t(h) for _ in range(b)]
        if op == "foreach_add":
            return lambda: torch._foreach_add_(xs, ys, alpha=1e-3)
        zs = [t(h) for _ in range(b)]
        return lambda: torch._foreach_addcmul_(xs, ys, zs, value=1e-3)
    x = t(b, h, positive=op.startswith(("div", "pow")))
    if op in BINARY:
        y = t(b, h, positive=True)
        fn: Any = {"add": torch.add, "mul": torch.mul, "div": torch.div, "pow": torch.pow}[op]
        return lambda: fn(x, y)
    if op in UNARY:
        unary: dict[str, Callable[[], Any]] = {
            "addu": lambda: x + 0.5, "mulu": lambda: x * 0.5, "divu": lambda: x / 0.5,
            "powu": lambda: x ** 1.5, "relu": lambda: torch.relu(x),
            "tanh": lambda: torch.tanh(x), "gelu": lambda: F.gelu(x)}
        return unary[op]
    raise InputError(f"kernel sweep: unknown op {op!r}")


class Timer:
    """Times one call: CUDA events on a GPU, ``perf_counter`` on CPU (module docstring)."""

    def __init__(self, device: Any) -> None:
        import torch

        self.cuda = device.type == "cuda"
        self.torch = torch
        self.device = device

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize(self.device)

    def time_ms(self, fn: Callable[[], Any]) -> float:
        if not self.cuda:
            t0 = time.perf_counter()
            fn()
            return (time.perf_counter() - t0) * 1e3
        start = self.torch.cuda.Event(enable_timing=True)
        end = self.torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end))


def measure_row(row: dict[str, Any], device: Any, timer: Timer) -> dict[str, Any]:
    """``row`` with ``status``, ``latency_ms`` (median), ``latency_ms_min`` and ``reps``; an
    op that fails (out of memory, unsupported) is a row with its status, not an exception."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = row["precision"] == "tf32"
    torch.backends.cudnn.allow_tf32 = row["precision"] in ("fp32", "tf32")
    torch.backends.cudnn.benchmark = True
    out = {**row, "dtype": PRECISION_DTYPES[str(row["precision"])], "status": "ok",
           "latency_ms": float("nan"), "latency_ms_min": float("nan"), "reps": 0, "error": ""}
    fn: Callable[[], Any] | None = None
    try:
        fn = make_call(row, device)
        for _ in range(WARMUP):
            fn()
        timer.sync()
        times = [timer.time_ms(fn)]
        while len(times) < 3 or (len(times) < MAX_REPS and sum(times) < REP_BUDGET_S * 1e3):
            times.append(timer.time_ms(fn))
        out.update(latency_ms=statistics.median(times), latency_ms_min=min(times),
                   reps=len(times))
    except (RuntimeError, MemoryError) as e:
        oom = isinstance(e, MemoryError) or "out of memory" in str(e).lower()
        out.update(status="oom" if oom else "error", error=str(e).splitlines()[0][:200])
    finally:
        del fn
        if timer.cuda and out["status"] == "oom":
            torch.cuda.empty_cache()
    return out


def read_done(out: Path, device_name: str) -> Any:
    """The rows already in ``out`` (an empty table when it does not exist); a table of
    another device is refused."""
    import pandas as pd

    from gpuscope.core.io import read_table, require_columns

    if not out.exists():
        return pd.DataFrame()
    df = read_table(out, "kernel table")
    require_columns(df, ("key", "device"), out, "kernel table")
    others = sorted(set(df["device"].astype(str)) - {device_name})
    if others:
        raise InputError(f"{out} holds kernels of {', '.join(others)}, not {device_name}; "
                         "give another output file")
    return df


def sweep_kernels(out: str | Path, device_name: str, device: str = "cuda",
                  budget_s: float = 600.0, rows: int | None = None, seed: int = 0,
                  progress: bool = True, name_override: str = "") -> dict[str, Any]:
    """Measure the plan (``rows`` rows, default: the budget over ``ROW_COST_S``) on the
    torch ``device`` into the table ``out``, skipping rows already there and starting none
    after ``budget_s``; ``name_override``: the NVML contradiction a ``--device-name-override``
    kept (column ``device_name_override``). Returns counts (``measured``, ``skipped``,
    ``left``)."""
    import pandas as pd
    import torch

    from gpuscope.core.io import write_table
    from gpuscope.core.progress import bar

    out = Path(out)
    done = read_done(out, device_name)
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise InputError(f"--device {device!r} is not a torch device (cpu, cuda, cuda:1, "
                         "...)") from None
    if dev.type not in ("cpu", "cuda"):
        raise InputError(f"--device {device}: the sweep runs on cpu or cuda")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InputError(f"--device {device}: CUDA is not available on this host")
    n = rows if rows is not None else max(1, int(budget_s / ROW_COST_S[dev.type]))
    todo_all = plan(n, limits(dev), supported_precisions(dev), seed)
    have = set(done["key"].astype(str)) if len(done) else set()
    todo = [r for r in todo_all if r["key"] not in have]
    prov = {**describe_device(dev), "device": device_name, "device_name_override": name_override}
    timer = Timer(dev)
    table = done
    new: list[dict[str, Any]] = []

    def flush() -> None:
        nonlocal table, new
        if new:
            table = pd.concat([table, pd.DataFrame(new)], ignore_index=True)
            first = ["op", "device", "precision", "dtype", *SHAPE_COLUMNS, "latency_ms",
                     "latency_ms_min", "reps", "status", "error", "key"]
            cols = [c for c in first if c in table.columns]
            table = table[cols + [c for c in table.columns if c not in cols]]
            write_table(table, out, what="kernel table")
            new = []

    t0 = last = time.perf_counter()
    measured = 0
    try:
        for row in bar(todo, desc="kernels", unit="kernel", quiet=not progress):
            if time.perf_counter() - t0 > budget_s:
                break
            new.append({**measure_row(row, dev, timer), **prov})
            measured += 1
            if time.perf_counter() - last > CHUNK_S:
                flush()
                last = time.perf_counter()
    finally:
        flush()  # an interrupt keeps every measured row
    return {"out": str(out), "device": device_name, "device_kind": prov["device_kind"],
            "planned": len(todo_all), "skipped": len(todo_all) - len(todo),
            "measured": measured, "left": len(todo) - measured, "rows": len(table)}

