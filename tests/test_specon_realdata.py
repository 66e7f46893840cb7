"""Real loss curves: sklearn digits as MNIST, the profiler keeping loss logs, Optimus fits."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from gpuscope.core.errors import InputError
from gpuscope.jobs.spec import JobSpec
from gpuscope.profiling import RunOptions, read_trace, run_job
from gpuscope.specon.losscurve import fit, read_loss_log
from gpuscope.workloads import build_workload
from gpuscope.workloads.realdata import digits_28, real_batches


def test_digits_batches_shapes_and_labels() -> None:
    x, y = digits_28()
    assert x.shape == (1797, 1, 28, 28) and 0.0 <= float(x.min()) and float(x.max()) <= 1.0
    assert sorted(set(y.tolist())) == list(range(10))
    seq = list(real_batches("digits", "mnist_seq", "classifier", 64, 30, seed=1))
    assert len(seq) == 30 and seq[0][0].shape == (64, 28, 28)
    img = next(real_batches("digits", "mnist", "classifier", 8, 1))[0]
    assert img.shape == (8, 1, 28, 28) and float(img.min()) < 0  # standardised
    with pytest.raises(InputError):
        next(real_batches("digits", "cifar10", "classifier", 8, 1))


def test_vae_mlp_converges_on_digits_and_fit_reports_f20() -> None:
    torch.set_num_threads(1)  # the shared 2-core machine: OpenMP spinning costs 100x here
    wl = build_workload(JobSpec("vae_mlp", "mnist", "adam", 64, 1), seed=0)
    losses = [float(wl.train_step((x,))) for x, _ in
              real_batches("digits", "mnist", "vae", 64, 60, seed=0)]
    head, tail = np.mean(losses[:5]), np.mean(losses[-10:])
    assert tail < 0.85 * head  # real data: the negative ELBO really falls (459 -> ~350)
    c = fit(np.arange(1, 61) / 60, np.array(losses))
    assert 0.3 < c.f(0.2) <= 1.0


def test_runner_keeps_the_loss_log_beside_the_trace(tmp_path: Path) -> None:
    code = ("import sys, json; open(sys.argv[1], 'w').write('step,epoch,t_s,loss\\n1,0,0.1,2.3\\n"
            "2,0,0.2,1.9\\n'); print(json.dumps({'status': 'ok'}))")
    opts = RunOptions(device_name="testcpu", command=(sys.executable, "-c", code, "{loss_log}"),
                      timeout_s=60)
    job = JobSpec("gru", "mnist_seq", "adam", 8, 1, steps_per_epoch=2)
    trace = tmp_path / "traces" / f"{job.key}.parquet"
    meta = run_job(job, trace, opts)
    assert meta.status == "ok"
    assert meta.result["loss_log"] == f"losses/{job.key}.csv"
    kept = tmp_path / meta.result["loss_log"]
    p, loss = read_loss_log(kept)
    assert list(loss) == [2.3, 1.9] and list(p) == [0.5, 1.0]
    assert read_trace(trace)[1].result["loss_log"] == meta.result["loss_log"]


@pytest.mark.slow
def test_real_data_run_end_to_end(tmp_path: Path) -> None:
    job = JobSpec("rnn", "mnist_seq", "adam", 32, 1, steps_per_epoch=20)
    trace = tmp_path / "traces" / f"{job.key}.parquet"
    meta = run_job(job, trace, RunOptions(device_name="testcpu", timeout_s=240, real_data="digits",
                                          use_nvml=False))
    assert meta.status == "ok", meta.error
    assert meta.result["data"] == "digits" and meta.result["steps"] == 20
    rows = (tmp_path / meta.result["loss_log"]).read_text().splitlines()
    assert rows[0] == "step,epoch,t_s,loss" and len(rows) == 21
    assert json.loads(json.dumps(meta.result))["loss_log"].endswith(".csv")
