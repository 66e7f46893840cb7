"""Synthetic 6 Hz traces of an emulated run, in the profiler's format.

A run is a sequence of phases, each sampled every ``period_s`` (seed 001 §2.2: 1/6 s):

* **start-up** (process start and imports, CUDA context, weights upload, cuDNN autotuning):
  one host core busy; device memory 0, then the context, then ramping to context + weights;
  autotuning at the end (GPU busy, memory + workspace trials), deterministic;
* per epoch, **training**: the GPU is busy the first ``t_gpu/t_iter`` of every step (step
  lengths jittered by ``iter_jitter``), so the sampled utilisation is the exact busy fraction
  of each window (a slow host shows as low utilisation, or as on/off samples when a step is
  longer than a sample); memory holds the whole footprint (caching allocator);
* random **input-pipeline stalls** inside training (Poisson, exponential lengths): GPU idle,
  host at its training level (waiting on I/O);
* **evaluation** (forward passes on a held-out slice) and a **checkpoint** write (GPU idle,
  one host core serialising) at the end of every epoch;
* seeded Gaussian sensor noise.

An out-of-memory run stops after start-up, its memory at the device's capacity. Everything is
vectorised numpy over the samples; the phase list (a few per epoch) is the only Python loop.
The whole run is sampled; a run longer than ``max_trace_samples`` samples (default 200 000,
~9 h at 6 Hz: a full-dataset run without steps_per_epoch) is sampled at a coarser period,
recorded as the trace's ``sample_period_s``.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpuscope.cluster.devices import DeviceSpec
from gpuscope.emulator.params import EmulatorParams
from gpuscope.emulator.perf import Estimate
from gpuscope.jobs.spec import JobSpec

PERIOD_S: float = 1.0 / 6.0
# Phase codes.
STARTUP, TRAIN, STALL, EVAL, CKPT, OOM_END = range(6)


@dataclass(frozen=True)
class Phases:
    """Phase boundaries of a run: ``kind[i]`` lasts from ``start[i]`` to ``start[i+1]``;
    ``offset[i]`` is a training piece's position in its epoch's training time."""

    start: np.ndarray
    kind: np.ndarray
    offset: np.ndarray
    end_s: float


def run_rng(seed: int, device: str, run_id: str) -> np.random.Generator:
    """Generator of one run: same seed, device and run -> same trace, independent of order."""
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(f"{device}/{run_id}".encode())])


def phases(est: Estimate, job: JobSpec, params: EmulatorParams, rng: np.random.Generator) -> Phases:
    """Lay out the run's phases (see the module docstring)."""
    starts: list[float] = [0.0]
    kinds: list[int] = [STARTUP]
    offs: list[float] = [0.0]
    t = est.startup_s
    if est.status != "ok":
        starts.append(t)
        kinds.append(OOM_END)
        return Phases(np.array(starts), np.array(kinds), np.zeros(2), t + 1.0)
    train_s = job.steps * est.iter_s
    rate = params.stall_rate_per_min / 60.0
    for _ in range(job.epochs):
        n_stall = int(rng.poisson(rate * train_s))
        cuts = np.sort(rng.uniform(0.0, train_s, n_stall))
        lens = rng.exponential(params.stall_s, n_stall)
        prev = 0.0
        for c, ln in zip(cuts, lens):  # training piece, then the stall that interrupts it
            starts += [t, t + float(c) - prev]
            kinds += [TRAIN, STALL]
            offs += [prev, 0.0]
            t += float(c) - prev + float(ln)
            prev = float(c)
        starts += [t, t + train_s - prev, t + train_s - prev + est.eval_s]
        kinds += [TRAIN, EVAL, CKPT]
        offs += [prev, 0.0, 0.0]
        t += train_s - prev + est.eval_s + est.ckpt_s
    return Phases(np.array(starts), np.array(kinds), np.array(offs), t)


class IterTimeline:
    """One epoch of training steps with jittered lengths (mean ``iter_s``, relative s.d.
    ``jitter``): the GPU is busy for the first ``busy_s/iter_s`` of every step. ``busy(u)`` is
    the GPU-busy seconds up to training time u; a window's utilisation is its difference."""

    def __init__(self, steps: int, iter_s: float, busy_s: float, jitter: float,
                 rng: np.random.Generator) -> None:
        d = iter_s * np.clip(1.0 + jitter * rng.standard_normal(steps), 0.5, 1.5)
        d *= steps * iter_s / d.sum()  # the epoch lasts exactly steps x iter_s
        self.start = np.concatenate([[0.0], np.cumsum(d)])
        self.busy_len = d * (busy_s / iter_s)
        self.busy_cum = np.concatenate([[0.0], np.cumsum(self.busy_len)])

    def busy(self, u: np.ndarray) -> np.ndarray:
        k = np.clip(np.searchsorted(self.start, u, side="right") - 1, 0, self.busy_len.size - 1)
        return self.busy_cum[k] + np.clip(u - self.start[k], 0.0, self.busy_len[k])


def effective_period(est: Estimate, period_s: float, max_samples: int) -> float:
    """The sampling period: ``period_s``, coarsened for runs longer than ``max_samples``
    samples (a full-dataset run of days; profiling campaigns set steps_per_epoch instead)."""
    return max(period_s, 1.05 * est.exec_time_s / max_samples)


def synth_trace(
    est: Estimate, job: JobSpec, device: DeviceSpec, params: EmulatorParams, seed: int = 0,
    period_s: float = PERIOD_S, sensor_noise: bool = True,
) -> tuple[pd.DataFrame, float]:
    """Samples (``t_s``, ``gpu_util``, ``gpu_mem_util``, ``gpu_mem``, ``cpu_util``) of the
    emulated run and its execution time in seconds. ``sensor_noise=False`` leaves out the
    Gaussian sensor noise (with ``iter_jitter`` and ``stall_rate_per_min`` at 0 in ``params``:
    a noise-free trace, the reference of ``gpuscope.predictor.physics.analytic``)."""
    rng = run_rng(seed, device.name, job.key)
    ph = phases(est, job, params, rng)
    period_s = effective_period(est, period_s, int(params.max_trace_samples))
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

    # Start-up as a real PyTorch run shows it (NVML at 6 Hz): process start and imports (one
    # core busy, nothing on the GPU), CUDA context creation (memory steps to the context),
    # weights upload (memory ramps to context + weights), then cuDNN/cuBLAS autotuning in the
    # last fifth: the GPU busy benchmarking candidate algorithms, memory at context + weights
    # + workspace trials. Deterministic (no random levels): the start-up is below the
    # training footprint, so the labeler's steady-state window excludes it.
    st = kind == STARTUP
    frac = np.clip(tau / max(est.startup_s, 1e-9), 0.0, 1.0)
    base_mb = est.memory.context_mb + est.memory.weights_mb
    ctx = est.memory.context_mb
    mem[st] = np.where(frac[st] < 0.4, 0.0,
                       np.where(frac[st] < 0.6, ctx,
                                ctx + (base_mb - ctx) * np.clip((frac[st] - 0.6) / 0.2, 0.0, 1.0)))
    tune = st & (frac > 0.8)
    gpu[tune] = 90.0
    memu[tune] = 90.0 * 0.3
    mem[tune] = base_mb + min(est.memory.workspace_mb, 0.5 * est.memory.activations_mb)
    cpu[st] = one_core

    tr = kind == TRAIN
    if tr.any():
        tl = IterTimeline(job.steps, est.iter_s, min(est.t_gpu_s, est.iter_s), params.iter_jitter, rng)
        u = ph.offset[idx[tr]] + tau[tr]
        g = (tl.busy(u + period_s) - tl.busy(u)) / period_s
        gpu[tr] = 100.0 * g
        memu[tr] = 100.0 * g * (est.t_mem_s / max(est.t_gpu_s, 1e-12))
        cpu[tr] = 100.0 * est.cpu_util
    stall = kind == STALL
    # an input-pipeline stall waits on I/O (page cache miss, GC): the loader keeps its cores at
    # the training level while the GPU idles (v1 put the CPU 1.5x higher, which made the
    # stalls the CPU bursts and the Poisson-random training pieces the idle runs)
    cpu[stall] = 100.0 * est.cpu_util
    ev = kind == EVAL
    ev_util = 85.0 * est.gpu_util
    gpu[ev] = ev_util
    memu[ev] = ev_util * est.gpu_mem_util / max(est.gpu_util, 1e-12)
    cpu[ev] = 100.0 * est.cpu_util * 0.6
    oom = kind == OOM_END
    mem[oom] = device.mem_mb * rng.uniform(0.97, 0.995, int(oom.sum()))
    gpu[oom] = rng.uniform(0.0, 30.0, int(oom.sum()))

    # Sensor noise: a few percent on utilisations, a few MB on memory.
    sd = 1.0 if sensor_noise else 0.0
    gpu = np.clip(gpu + sd * rng.normal(0.0, 2.0, n) * (gpu > 0), 0.0, 100.0)
    memu = np.clip(memu + sd * rng.normal(0.0, 1.5, n) * (memu > 0), 0.0, 100.0)
    cpu = np.clip(cpu + sd * rng.normal(0.0, 1.0, n), 0.0, 100.0)
    mem = np.clip(mem + sd * rng.normal(0.0, 2.0, n), 0.0, device.mem_mb)
    df = pd.DataFrame({"t_s": t, "gpu_util": np.round(gpu, 2), "gpu_mem_util": np.round(memu, 2),
                       "gpu_mem": np.round(mem, 1), "cpu_util": np.round(cpu, 2)})
    return df, float(ph.end_s)
