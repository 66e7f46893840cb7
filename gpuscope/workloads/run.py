"""Run one job for real: ``python -m gpuscope.workloads.run --job job.json``.

Trains the job's workload on CUDA when present (else CPU) for ``steps × epochs`` steps, with
batches from the CPU input pipeline (``gpuscope.workloads.data``) in DataLoader workers, logs
the loss of every step to a CSV (``step, epoch, t_s, loss``), and prints ONE JSON line on
stdout::

    {"status": "ok"|"oom"|"error", "exec_time_s": ..., "train_time_s": ..., "steps": ...,
     "device": ..., "device_name": ..., "error": null|"..."}

Exit codes (the profiler's runner maps them to statuses): ``EXIT_OK`` 0, ``EXIT_ERROR`` 1,
``EXIT_INPUT`` 2 (invalid job file or arguments), ``EXIT_OOM`` 3 (``torch.cuda.OutOfMemoryError``,
``MemoryError``, or an allocator ``RuntimeError`` saying it is out of memory).

``--memory-limit-mb N`` caps the process's address space (``RLIMIT_AS``) at N MB above its
size once torch is imported, so that a job too big for N MB really fails to allocate on CPU
and takes the out-of-memory path, as it would on a small GPU.
"""

from __future__ import annotations

import argparse
import csv
import gc
import json
import platform
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_INPUT = 2
EXIT_OOM = 3

_OOM_MARKERS = ("out of memory", "can't allocate memory", "cannot allocate memory",
                "bad_alloc", "failed to allocate", "alloc_failed")  # last: cuBLAS/cuDNN


def is_oom(exc: BaseException) -> bool:
    """True for out-of-memory failures of the GPU or the host allocator."""
    import torch

    if isinstance(exc, (MemoryError, torch.cuda.OutOfMemoryError)):
        return True
    msg = str(exc).lower()
    return isinstance(exc, RuntimeError) and any(m in msg for m in _OOM_MARKERS)


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def limit_memory(headroom_mb: int) -> int:
    """Set RLIMIT_AS to the current virtual size + ``headroom_mb``; returns the limit in bytes."""
    import resource

    import psutil

    limit = psutil.Process().memory_info().vms + headroom_mb * 2**20
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    return limit


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m gpuscope.workloads.run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--job", required=True, help="JSON file holding one JobSpec object")
    p.add_argument("--loss-log", help="CSV file for the per-step loss (step, epoch, t_s, loss)")
    p.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                   help="auto: CUDA when present, else CPU")
    p.add_argument("--workers", type=int, default=None,
                   help="DataLoader workers (default min(4, cores); 0 loads in the main process)")
    p.add_argument("--memory-limit-mb", type=int, default=None,
                   help="cap the address space at N MB above start-up size (RLIMIT_AS)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--real-data", choices=("digits",), default=None,
                   help="train on real data (sklearn's digits as MNIST) so the loss converges")
    return p.parse_args(argv)


def _pipeline_target(kind: str) -> str:
    return {"classifier": "classifier", "vae": "vae"}.get(kind, "gan")


def configure_backends(job: Any, device: Any) -> None:
    """CUDA math settings of a training job: cuDNN autotuning (as real training scripts do);
    PyTorch's defaults for fp32 (cuDNN convolutions on TF32, matmuls in full fp32), which is
    what the emulator models; a ``tf32`` job also puts matmuls on TF32 tensor cores."""
    import torch

    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = job.precision == "tf32"
        torch.backends.cudnn.allow_tf32 = True


def train(args: argparse.Namespace, job: Any, device: Any, result: dict[str, Any]) -> None:
    """Build the workload on ``device`` and train it, updating ``result`` as it goes."""
    import torch
    from tqdm import tqdm

    from gpuscope.workloads.data import PipelineSpec, epoch_batches
    from gpuscope.workloads.realdata import real_batches
    from gpuscope.workloads.workload import build_workload

    t0 = time.perf_counter()
    configure_backends(job, device)
    result["precision"] = job.precision
    wl = build_workload(job, device, seed=args.seed)
    spec = PipelineSpec(job.dataset, _pipeline_target(wl.kind))
    needs_labels = wl.kind in ("classifier", "conditional_gan")
    # Images go through the decode/augment pipeline in DataLoader workers; token ids,
    # sequences and tabular rows cost the host almost nothing to make, so they are drawn
    # in the main process with the workload's own shapes (lm, seq2seq, RNN, user jobs).
    image_input = job.dataset_spec.kind in ("image", "frames")
    log_fh = open(args.loss_log, "w", newline="") if args.loss_log else None  # noqa: SIM115
    writer = csv.writer(log_fh) if log_fh else None
    if writer:
        writer.writerow(["step", "epoch", "t_s", "loss"])
    step = 0
    t_train = time.perf_counter()
    result["build_time_s"] = round(t_train - t0, 4)
    result["data"] = args.real_data or "synthetic"
    bar = tqdm(total=job.total_steps, desc=job.key, unit="step", disable=None, file=sys.stderr)
    try:
        for epoch in range(job.epochs):
            batches: Iterable[tuple[torch.Tensor, ...]]
            if args.real_data:
                batches = real_batches(args.real_data, job.dataset, spec.target, job.batch_size,
                                       job.steps, args.seed, epoch)
            elif image_input:
                batches = epoch_batches(spec, job.batch_size, job.steps, args.workers, args.seed,
                                        epoch, pin_memory=device.type == "cuda")
            else:
                batches = _sampled_batches(wl, job.steps, args.seed, epoch)
            for raw in batches:
                xs = tuple(t.to(device, non_blocking=True) for t in raw)
                batch = xs if (needs_labels or not image_input) else xs[:1]
                loss = float(wl.train_step(batch))  # one host sync per step, to log the loss
                step += 1
                result["steps"] = step
                if writer:
                    writer.writerow([step, epoch, round(time.perf_counter() - t_train, 6),
                                     f"{loss:.6g}"])
                bar.update(1)
            if log_fh:
                log_fh.flush()
        if device.type == "cuda":
            torch.cuda.synchronize()
        result["train_time_s"] = round(time.perf_counter() - t_train, 4)
    finally:
        bar.close()
        if log_fh:
            log_fh.close()


def _sampled_batches(wl: Any, steps: int, seed: int, epoch: int) -> Iterator[tuple[Any, ...]]:
    """``steps`` synthetic batches of the workload's real shapes on the host, one seed each."""
    for s in range(steps):
        yield wl.sample_batch(device="cpu", seed=seed * 1_000_003 + epoch * 100_003 + s)


def main(argv: list[str] | None = None) -> int:
    t_start = time.perf_counter()
    result: dict[str, Any] = {"status": "error", "exec_time_s": None, "steps": 0,
                              "device": None, "device_name": None, "error": None}

    def finish(status: str, code: int, error: str | None = None) -> int:
        result.update(status=status, error=error,
                      exec_time_s=round(time.perf_counter() - t_start, 4))
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()
        return code

    try:
        args = parse_args(argv)
    except SystemExit as e:  # argparse already printed the reason on stderr
        return finish("error", EXIT_INPUT, "invalid arguments") if e.code else int(e.code or 0)

    import torch

    from gpuscope.core.errors import InputError
    from gpuscope.jobs.spec import JobSpec

    try:
        job = JobSpec.from_json_file(args.job)
        if job.graph is not None:
            raise InputError("job names a graph file; only catalog models can be run")
        if args.workers is not None and args.workers < 0:
            raise InputError(f"--workers must be >= 0, got {args.workers}")
        if args.memory_limit_mb is not None and args.memory_limit_mb <= 0:
            raise InputError(f"--memory-limit-mb must be > 0, got {args.memory_limit_mb}")
        want = args.device
        if want == "cuda" and not torch.cuda.is_available():
            raise InputError("--device cuda asked for, but CUDA is not available")
        device = torch.device("cuda" if want in ("auto", "cuda") and torch.cuda.is_available()
                              else "cpu")
        if args.memory_limit_mb is not None and device.type == "cuda":
            # CUDA reserves large virtual address ranges; an address-space cap breaks its init.
            raise InputError("--memory-limit-mb applies to CPU runs; add --device cpu")
    except InputError as e:
        return finish("error", EXIT_INPUT, str(e))
    result["job"] = job.key
    result["device"] = device.type
    result["device_name"] = (torch.cuda.get_device_name(device) if device.type == "cuda"
                             else _cpu_name())
    if args.memory_limit_mb is not None:
        result["memory_limit_bytes"] = limit_memory(args.memory_limit_mb)
    try:
        train(args, job, device, result)
    except Exception as e:  # noqa: BLE001 - every failure becomes a status, never a traceback
        oom = is_oom(e)
        msg = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:500]
        del e
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
        return finish("oom", EXIT_OOM, msg) if oom else finish("error", EXIT_ERROR, msg)
    return finish("ok", EXIT_OK)


if __name__ == "__main__":
    sys.exit(main())
