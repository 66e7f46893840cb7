"""The allocator's fast paths give what the plain ones give: list scheduling in chunks, the
FIFO simulation by pointer (against the heap of waiting jobs), and a large plan CSV."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpuscope.allocator import ClusterSpec
from gpuscope.allocator.policies import list_schedule
from gpuscope.allocator.simulate import Schedule, schedule_frame

base = importlib.import_module("gpuscope.allocator.policies.base")
sim = importlib.import_module("gpuscope.allocator.simulate")


def _plain_list_schedule(t: np.ndarray, arrivals: np.ndarray, counts: list[int],
                         order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Earliest completion, job by job, written out plainly (every GPU a candidate)."""
    free = [[0.0] * c for c in counts]
    dev, start = np.full(len(t), -1), np.full(len(t), np.nan)
    for j in order:
        best = None
        for d, gpus in enumerate(free):
            g = int(np.argmin(gpus))
            s = max(gpus[g], arrivals[j])
            if np.isfinite(t[j, d]) and (best is None or s + t[j, d] < best[0]):
                best = (s + t[j, d], d, g, s)
        if best is not None:
            free[best[1]][best[2]] = best[0]
            dev[j], start[j] = best[1], best[3]
    return dev, start


@pytest.mark.parametrize("chunk", [1, 7, 1 << 16])
def test_list_schedule_in_chunks_is_the_plain_one(chunk: int,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "SCHEDULE_CHUNK", chunk)
    rng = np.random.default_rng(3)
    n = 300
    t = rng.exponential(100.0, (n, 3))
    t[rng.random((n, 3)) < 0.2] = np.inf  # does not fit there
    t[:5] = np.inf  # fits nowhere
    arrivals = np.sort(rng.uniform(0, 2000, n))
    order = np.lexsort((np.arange(n), rng.permutation(n) % 17, arrivals))
    cluster = ClusterSpec.from_arg("a:2,b:1,c:3")
    dev, start = list_schedule(t, arrivals, cluster, order)
    want_dev, want_start = _plain_list_schedule(t, arrivals, [2, 1, 3], order)
    np.testing.assert_array_equal(dev, want_dev)
    np.testing.assert_array_equal(start, want_start)
    assert (dev[:5] == -1).all() and np.isnan(start[:5]).all()


@pytest.mark.parametrize("k", [1, 3, 8])
def test_fifo_pointer_simulation_is_the_heap_one(k: int) -> None:
    rng = np.random.default_rng(k)
    n = 2_000
    arr = np.round(np.sort(rng.uniform(0, 5_000, n)))  # ties in arrival
    dur = rng.exponential(40.0 * k, n)
    dur[::13] = 0.0
    by = np.lexsort((np.arange(n), arr))
    fast = sim._simulate_in_arrival_order(arr, dur, by, k, np.empty(n),
                                          np.empty(n, dtype=np.int64))
    plain = sim._simulate_heap(arr, dur, arr.copy(), by, k, np.empty(n),
                               np.empty(n, dtype=np.int64))
    for a, b in zip(fast, plain, strict=True):
        np.testing.assert_array_equal(a, b)
    # and by hand: GPU g's jobs never overlap, none starts before it arrives
    start, finish, gpu = fast
    assert (start >= arr).all()
    for g in range(k):
        s, f = start[gpu == g], finish[gpu == g]
        o = np.argsort(s, kind="stable")
        assert (s[o][1:] >= f[o][:-1]).all()


def test_large_plan_csv_is_pandas_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuscope.allocator.report import _csv
    from gpuscope.core.io import csv_text

    csvarrow = importlib.import_module("gpuscope.core.io.csvarrow")
    monkeypatch.setattr(csvarrow, "MIN_ROWS", 100)
    monkeypatch.setattr(csvarrow, "CHUNK_ROWS", 333)
    rng = np.random.default_rng(0)
    n = 1_000
    device = rng.integers(-1, 2, n)
    start = np.where(device >= 0, rng.uniform(0, 1e6, n), np.nan)
    sched = Schedule(start, start + rng.exponential(500.0, n), np.where(device >= 0, 0, -1))
    frame = schedule_frame(np.array([f"q{i}" for i in range(n)], dtype=object),
                           ClusterSpec.from_arg("v100:1,a100:1"), device,
                           np.arange(n) * 0.5, sched)
    assert frame["status"].eq("rejected").any()
    _csv(frame, tmp_path / "plan.csv")
    assert (tmp_path / "plan.csv").read_text() == csv_text(frame)
    back = pd.read_csv(tmp_path / "plan.csv", keep_default_na=False)
    assert back["jct_s"].replace("", np.nan).astype(float).tolist() == pytest.approx(
        frame["jct_s"].tolist(), nan_ok=True, rel=0, abs=0)


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("keys", ["arrival", "equal", "reversed-index", "random"])
def test_simulation_takes_a_fast_path_only_when_it_is_the_heap_one(k: int, keys: str) -> None:
    # Arrivals not in index order, with ties; equal keys make the heap break ties by index,
    # which is not the arrival order here, so no fast path may be taken for them.
    rng = np.random.default_rng(7)
    n = 500
    arr = np.round(rng.uniform(0, 2_000, n))
    dur = rng.exponential(30.0 * k, n)
    key = {"arrival": arr.copy(), "equal": np.zeros(n),
           "reversed-index": -np.arange(n, dtype=float), "random": rng.uniform(0, 1, n)}[keys]
    by = np.lexsort((np.arange(n), arr))
    got = sim._simulate_type(arr, dur, key, k)
    plain = sim._simulate_heap(arr, dur, key, by, k, np.empty(n), np.empty(n, dtype=np.int64))
    # one GPU's vectorised path sums with cumsum: the same times up to rounding
    for a, b in zip(got[:2], plain[:2], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(got[2], plain[2])
