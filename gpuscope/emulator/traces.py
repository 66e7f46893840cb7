"""Synthetic 6 Hz traces of an emulated run, in the profiler's format (issue 4, item 3).

A run is a sequence of phases, each sampled every ``period_s`` (seed 001 §2.2: 1/6 s):

* **start-up** (process start, CUDA context, cuDNN autotuning, weights upload): one host core
  busy, device memory ramping to context + weights, autotuning kernels as bursts at the end;
* per epoch, **training**: within a sample window the GPU is busy ``t_gpu`` of every
  ``t_iter`` seconds, so the sampled utilisation is the exact busy fraction of that window
  (a slow host shows as low utilisation, or as on/off samples when an iteration is longer
  than a sample); memory holds the whole footprint (caching allocator);
* random **input-pipeline stalls** inside training (Poisson, exponential lengths): GPU idle,
  host busy;
* **evaluation** (forward passes on a held-out slice) and a **checkpoint** write (GPU idle,
  one host core serialising) at the end of every epoch;
* seeded Gaussian sensor noise.

An out-of-memory run stops after start-up, its memory at the device's capacity. Everything is
vectorised numpy over the samples; the phase list (a few per epoch) is the only Python loop.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpuscope.devices import DeviceSpec
from gpuscope.emulator.params import EmulatorParams
from gpuscope.emulator.perf import Estimate
from gpuscope.jobs import JobSpec

PERIOD_S: float = 1.0 / 6.0
# Phase codes.
STARTUP, TRAIN, STALL, EVAL, CKPT, OOM_END = range(6)


@dataclass(frozen=True)
class Phases:
    """Phase boundaries of a run: ``kind[i]`` lasts from ``start[i]`` to ``start[i+1]``."""

    start: np.ndarray
    kind: np.ndarray
    end_s: float


def run_rng(seed: int, device: str, run_id: str) -> np.random.Generator:
    """Generator of one run: same seed, device and run -> same trace, independent of order."""
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(f"{device}/{run_id}".encode())])


def phases(est: Estimate, job: JobSpec, params: EmulatorParams, rng: np.random.Generator) -> Phases:
    """Lay out the run's phases (see the module docstring)."""
    starts: list[float] = [0.0]
    kinds: list[int] = [STARTUP]
    t = est.startup_s
    if est.status != "ok":
        starts.append(t)
        kinds.append(OOM_END)
        return Phases(np.array(starts), np.array(kinds), t + 1.0)
    train_s = job.steps * est.iter_s
    rate = params.stall_rate_per_min / 60.0
    for _ in range(job.epochs):
        n_stall = int(rng.poisson(rate * train_s))
        cuts = np.sort(rng.uniform(0.0, train_s, n_stall))
        lens = rng.exponential(params.stall_s, n_stall)
        prev = 0.0
        for c, ln in zip(cuts, lens):  # training piece, then the stall that interrupts it
            starts.append(t)
            kinds.append(TRAIN)
            t += float(c) - prev
            starts.append(t)
            kinds.append(STALL)
            t += float(ln)
            prev = float(c)
        starts.append(t)
        kinds.append(TRAIN)
        t += train_s - prev
        starts.append(t)
        kinds.append(EVAL)
        t += est.eval_s
        starts.append(t)
        kinds.append(CKPT)
        t += est.ckpt_s
    return Phases(np.array(starts), np.array(kinds), t)


def _busy_fraction(tau: np.ndarray, dt: float, busy: float, period: float) -> np.ndarray:
    """Busy fraction of windows [tau, tau+dt) of a periodic signal busy for the first ``busy``
    seconds of every ``period`` seconds (exact, vectorised)."""
    def cum(x: np.ndarray) -> np.ndarray:
        return np.floor(x / period) * busy + np.minimum(np.mod(x, period), busy)
    return (cum(tau + dt) - cum(tau)) / dt


def synth_trace(
    est: Estimate, job: JobSpec, device: DeviceSpec, params: EmulatorParams, seed: int = 0,
    period_s: float = PERIOD_S,
) -> tuple[pd.DataFrame, float]:
    """Samples (``t_s``, ``gpu_util``, ``gpu_mem_util``, ``gpu_mem``, ``cpu_util``) of the
    emulated run and its execution time in seconds."""
    rng = run_rng(seed, device.name, job.key)
    ph = phases(est, job, params, rng)
    t = np.arange(0.0, ph.end_s, period_s)
    idx = np.searchsorted(ph.start, t, side="right") - 1
    kind = ph.kind[idx]
    tau = t - ph.start[idx]
    n = t.size
    threads = float(device.host_threads)
    one_core = 100.0 / threads

    gpu = np.zeros(n)
    memu = np.zeros(n)
    cpu = np.full(n, one_core)
    mem = np.full(n, est.memory.total_mb)

    # Start-up: memory ramps to context + weights, autotuning bursts in the last fifth.
    st = kind == STARTUP
    frac = np.clip(tau / max(est.startup_s, 1e-9), 0.0, 1.0)
    base_mb = est.memory.context_mb + est.memory.weights_mb
    mem[st] = base_mb * np.minimum(1.0, frac[st] * 1.25)
    tune = st & (frac > 0.8)
    gpu[tune] = rng.uniform(20.0, 100.0, int(tune.sum()))
    memu[tune] = gpu[tune] * 0.3
    cpu[st] = one_core * rng.uniform(0.8, 1.0, int(st.sum()))

    tr = kind == TRAIN
    if tr.any():
        g = _busy_fraction(tau[tr], period_s, est.t_gpu_s, est.iter_s)
        gpu[tr] = 100.0 * g
        memu[tr] = 100.0 * g * (est.t_mem_s / max(est.t_gpu_s, 1e-12))
        cpu[tr] = 100.0 * est.cpu_util
    stall = kind == STALL
    cpu[stall] = min(100.0, 100.0 * est.cpu_util * 1.5 + one_core)
    ev = kind == EVAL
    ev_util = 85.0 * est.gpu_util
    gpu[ev] = ev_util
    memu[ev] = ev_util * est.gpu_mem_util / max(est.gpu_util, 1e-12)
    cpu[ev] = 100.0 * est.cpu_util * 0.6
    oom = kind == OOM_END
    mem[oom] = device.mem_mb * rng.uniform(0.97, 0.995, int(oom.sum()))
    gpu[oom] = rng.uniform(0.0, 30.0, int(oom.sum()))

    # Sensor noise: a few percent on utilisations, a few MB on memory.
    gpu = np.clip(gpu + rng.normal(0.0, 2.0, n) * (gpu > 0), 0.0, 100.0)
    memu = np.clip(memu + rng.normal(0.0, 1.5, n) * (memu > 0), 0.0, 100.0)
    cpu = np.clip(cpu + rng.normal(0.0, 1.0, n), 0.0, 100.0)
    mem = np.clip(mem + rng.normal(0.0, 2.0, n), 0.0, device.mem_mb)
    df = pd.DataFrame({"t_s": t, "gpu_util": np.round(gpu, 2), "gpu_mem_util": np.round(memu, 2),
                       "gpu_mem": np.round(mem, 1), "cpu_util": np.round(cpu, 2)})
    return df, float(ph.end_s)
