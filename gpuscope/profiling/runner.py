"""Run one JobSpec in a subprocess while sampling it (seed 001 §3.1, Fig. 3: the job profiler).

The job runs through the workloads entry point
``python -m gpuscope.workloads.run --job job.json --loss-log F`` (exit 0 ok, 3 out of memory,
1 error, 2 invalid job). The runner samples the machine and the job's process tree every
``period_s`` (seed 001: 1/6 s), measures the wall-clock execution time, and turns the exit
into a status ``ok | oom | error | timeout`` — an out-of-memory job is a result (seed 001
Fig. 5–7), not a crash. The trace is written atomically, so a killed campaign never leaves a
half-written file behind.

The job dies with its campaign. It runs in its own process group (a timeout, Ctrl-C
or SIGTERM kills the whole group) and, on Linux, with a parent-death signal
(``prctl(PR_SET_PDEATHSIG, SIGKILL)``), so even a SIGKILLed campaign leaves no orphan
training job behind to slow down the resumed runs. Each run also records how busy the host
was with *other* processes (``host_busy_frac``, ``host_busy``: :func:`host_busy`).
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

import psutil

from gpuscope.cluster.nvml import gpu_identity
from gpuscope.core.errors import InputError
from gpuscope.jobs.spec import JobSpec
from gpuscope.profiling.host import device_identity, host_name, versions
from gpuscope.profiling.samplers import Sampler
from gpuscope.profiling.trace import DEFAULT_PERIOD_S, TraceMeta, write_trace

EXIT_STATUS: dict[int, str] = {0: "ok", 3: "oom"}
ENTRY_POINT: tuple[str, ...] = ("-m", "gpuscope.workloads.run")
#: A run is flagged ``host_busy`` when other processes used more than this fraction of all
#: cores before or during it (its measured times and CPU labels are then not clean).
HOST_BUSY_FRAC: float = 0.25
#: Length of the pre-run look at the host's CPU use (seconds).
BUSY_PROBE_S: float = 0.2
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class RunOptions:
    """How to run and sample a job.

    Attributes:
        device_name: name recorded as the run's device (e.g. ``h100``, ``amd-epyc``).
        timeout_s: wall-clock limit; the job's process group is killed past it.
        period_s: sampling period.
        memory_limit_mb: passed to the entry point (``--memory-limit-mb``: RLIMIT_AS), so a
            job can truly run out of memory on a CPU host.
        job_device: ``--device`` for the entry point (``cpu``/``cuda``); None = its default.
        use_nvml: sample the GPU through NVML when available.
        gpu_index: GPU to sample.
        command: replaces the entry point (tests); ``{job}`` and ``{loss_log}`` are filled in.
        real_data: ``--real-data`` for the entry point (``digits``: real labels, so the loss
            log shows real convergence); None = the synthetic pipeline.
        busy_probe_s: seconds of host CPU sampling before the job starts (0: none); with the
            run's own samples it gives ``host_busy_frac``.
        name_override: why ``device_name`` contradicts what NVML reports, when the user kept
            it anyway (``--device-name-override``); recorded in the run's ``device_info``.
    """

    device_name: str
    timeout_s: float = 600.0
    period_s: float = DEFAULT_PERIOD_S
    memory_limit_mb: int | None = None
    job_device: str | None = None
    use_nvml: bool = True
    gpu_index: int = 0
    command: tuple[str, ...] | None = None
    real_data: str | None = None
    busy_probe_s: float = BUSY_PROBE_S
    name_override: str = ""


def _command(opts: RunOptions, job_file: Path, loss_log: Path) -> list[str]:
    if opts.command is not None:
        return [a.replace("{job}", str(job_file)).replace("{loss_log}", str(loss_log)) for a in opts.command]
    cmd = [sys.executable, *ENTRY_POINT, "--job", str(job_file), "--loss-log", str(loss_log)]
    if opts.memory_limit_mb is not None:
        cmd += ["--memory-limit-mb", str(int(opts.memory_limit_mb))]
    if opts.job_device is not None:
        cmd += ["--device", opts.job_device]
    if opts.real_data is not None:
        cmd += ["--real-data", opts.real_data]
    return cmd


def _tail(path: Path, size: int = 1 << 20) -> str:
    """The last ``size`` bytes of a job's output (its last lines say how it ended; a job
    that prints gigabytes is not read whole)."""
    with path.open("rb") as fh:
        fh.seek(max(0, path.stat().st_size - size))
        return fh.read().decode("utf-8", errors="replace")


def keep_loss_log(loss_log: Path, trace_path: Path, run_id: str) -> str | None:
    """Copy the run's per-step loss log beside its trace, ``<runs>/losses/<run_id>.csv``
    (atomically); returns that path relative to the run folder, or None without a log."""
    if not loss_log.exists() or loss_log.stat().st_size == 0:
        return None
    from gpuscope.core.io import read_bytes, write_bytes

    dest = trace_path.parent.parent / "losses" / f"{run_id}.csv"
    write_bytes(dest, read_bytes(loss_log, "loss log"), what="loss log", check=False)
    return f"losses/{run_id}.csv"


def _prctl() -> Any:
    """libc's ``prctl``, looked up in the parent (``dlopen`` in a forked child of a threaded
    process could deadlock); None where there is none (not Linux)."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def _die_with_parent(prctl: Any, parent_pid: int) -> None:
    """``preexec_fn`` of the job (runs in the child before exec): SIGKILL it when the campaign
    dies (Linux ``PR_SET_PDEATHSIG``); if the campaign already died, exit now."""
    if prctl is None:  # not Linux: the process group still covers timeouts and Ctrl-C
        return
    prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died between fork and prctl
        os._exit(137)


def host_busy(cpu_util: Any, proc_cpu_util: Any, before_pct: float | None
              ) -> tuple[float | None, bool]:
    """(fraction of all cores other processes used, busy flag) of a run: the
    larger of the pre-run probe and the run's mean of ``cpu_util - proc_cpu_util`` (system
    CPU minus the job's own process tree, per sample)."""
    vals = []
    if before_pct is not None and math.isfinite(before_pct):
        vals.append(before_pct / 100.0)
    if cpu_util is not None and proc_cpu_util is not None and len(cpu_util):
        other = [max(float(c) - float(p), 0.0) for c, p in zip(cpu_util, proc_cpu_util)
                 if math.isfinite(float(c)) and math.isfinite(float(p))]
        if other:
            vals.append(sum(other) / len(other) / 100.0)
    if not vals:
        return None, False
    frac = round(min(max(vals), 1.0), 4)
    return frac, frac > HOST_BUSY_FRAC


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the job's process group, then SIGKILL what is left after 2 s."""
    for sig, wait_s in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def _last_json_line(text: str) -> dict[str, Any]:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict):
                return obj
    return {}


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:500] if lines else ""


def run_job(
    job: JobSpec,
    trace_path: str | Path,
    opts: RunOptions,
    nvml: ModuleType | None = None,
) -> TraceMeta:
    """Run ``job`` once, sample it, write its trace to ``trace_path``; return its metadata."""
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    from gpuscope.core.io import temp_dir

    with temp_dir("run") as tmpd:
        job_file, loss_log = tmpd / "job.json", tmpd / "loss.log"
        job_file.write_text(json.dumps(job.to_dict()))
        out_path, err_path = tmpd / "stdout", tmpd / "stderr"
        sampler = Sampler(opts.period_s, nvml=nvml, use_nvml=opts.use_nvml, gpu_index=opts.gpu_index)
        # what NVML reports, sampled or not: the run's device identity (or "no GPU")
        gpu_info = sampler.device_info()
        sampled_gpu = bool(gpu_info)
        gpu_info = gpu_info or gpu_identity(nvml, opts.gpu_index)
        before = psutil.cpu_percent(interval=opts.busy_probe_s) if opts.busy_probe_s > 0 \
            else None
        cmd, me, prctl = _command(opts, job_file, loss_log), os.getpid(), _prctl()
        with out_path.open("wb") as out_fh, err_path.open("wb") as err_fh:
            t0 = time.monotonic()
            # A new session: on timeout the whole process group (data loader workers too) dies;
            # the parent-death signal: a SIGKILLed campaign takes its job along.
            try:
                proc = subprocess.Popen(
                    cmd, stdout=out_fh, stderr=err_fh, stdin=subprocess.DEVNULL,
                    start_new_session=True, preexec_fn=lambda: _die_with_parent(prctl, me),
                )
            except OSError as e:  # the command itself cannot start: the environment's fault
                raise InputError(f"cannot start the job command {cmd[0]!r}: "
                                 f"{e.strerror or e}") from None
            sampler.pid = proc.pid
            sampler.start()
            timed_out = False
            try:
                rc = proc.wait(timeout=opts.timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc)
                rc = proc.returncode
            except BaseException:
                _kill_group(proc)  # Ctrl-C / SIGTERM of the campaign: take the job down too
                sampler.stop()
                raise
            exec_time_s = time.monotonic() - t0
            df = sampler.stop()
        stdout, stderr = _tail(out_path), _tail(err_path)
        kept = keep_loss_log(loss_log, Path(trace_path), job.key)
    result = _last_json_line(stdout)
    busy_frac, busy = host_busy(df.get("cpu_util"), df.get("proc_cpu_util"), before)
    if kept:
        result["loss_log"] = kept  # the metadata names the log (seed 004 needs real curves)
    if timed_out:
        status, error = "timeout", f"killed after {opts.timeout_s:g} s"
    else:
        status = EXIT_STATUS.get(rc, "error")
        # The entry point's own error message is the most precise; else stderr's last line.
        error = "" if status == "ok" else str(
            result.get("error") or _last_line(stderr) or f"exit code {rc}")[:500]
        if error == "invalid arguments" and _last_line(stderr):  # argparse said which
            error = f"{error}: {_last_line(stderr)}"[:500]
        if rc is not None and rc < 0:
            error = f"killed by signal {-rc}; {error}"
    meta = TraceMeta(
        run_id=job.key,
        job=job.to_dict(),
        device=opts.device_name,
        status=status,
        exec_time_s=float(exec_time_s),
        provenance="measured",
        device_info=device_identity(gpu_info, opts.name_override),
        host=host_name(),
        sample_period_s=float(opts.period_s),
        mem_total_mb=gpu_info.get("memory_total_mb") if sampled_gpu else None,
        missing=dict(sampler.missing),
        versions=versions(),
        started_at=started_at,
        error=error,
        result=result,
        host_busy_frac=busy_frac,
        host_busy=busy,
    )
    write_trace(trace_path, df, meta)
    return meta
