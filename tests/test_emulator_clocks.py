"""Sustained rather than boost clocks and seed 001's §4.2 / Fig. 7 device
order: a device's compute peaks are scaled by its sustained over boost SM
clock, its memory bandwidth is not; the 70 W T4 sustains ~900 MHz of its 1,590 MHz boost
(datasets/devices.toml ``mlperf_t4_clock``)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from gpuscope.cluster.devices import get_device, load_catalog, load_references
from gpuscope.core.errors import InputError
from gpuscope.emulator import EmulatorParams
from gpuscope.emulator.perf import GraphCost, kernel_times
from gpuscope.graphs.opgraph import OpGraph, OpNode

P = EmulatorParams()


def one_op(op: str, klass: str, numel: int, flops: float) -> GraphCost:
    """One FP32 kernel reading and writing ``numel`` elements with ``flops`` FLOPs."""
    nodes = [OpNode("input:0", "Input", "constant", (numel,), numel, 4, 0.0, 0.0, "data"),
             OpNode("k", op, klass, (numel,), numel, 4, flops, 8.0 * numel, "forward")]
    return GraphCost.from_graph(OpGraph("one", nodes, [(0, 1)], {"batch_size": 1}), 1)


def test_sustained_clock_scales_compute_peaks_not_bandwidth() -> None:
    at_boost = dataclasses.replace(get_device("t4"), boost_clock_mhz=1590.0, sustained_clock_mhz=0.0)
    held = dataclasses.replace(at_boost, sustained_clock_mhz=900.0)
    assert at_boost.clock_factor == 1.0 and held.clock_factor == pytest.approx(900 / 1590)
    n = 10**7
    compute = one_op("aten.mm.default", "matmul", n, 1e12)  # 1 TFLOP over 80 MB: compute-bound
    memory = one_op("aten.add.Tensor", "elementwise", n, float(n))  # 1 FLOP per element
    fixed = (P.kernels.launch_us + P.kernels.mem_latency_us) * 1e-6  # launch, DRAM latency
    tc = float(kernel_times(compute, held, P)[0][0]) - fixed
    tb = float(kernel_times(compute, at_boost, P)[0][0]) - fixed
    assert tc / tb == pytest.approx(1590 / 900, rel=1e-6)
    # a streaming kernel past the L2: DRAM-bound, the memory clock is not throttled (the L2's
    # bandwidth, on the SM clock, serves a sliver of an 80 MB working set)
    assert float(kernel_times(memory, held, P)[0][0]) == pytest.approx(
        float(kernel_times(memory, at_boost, P)[0][0]), rel=1e-4)


def test_clock_fields_are_cited_and_consistent() -> None:
    refs = load_references()
    for name, d in load_catalog().items():
        for f in ("boost_clock_mhz", "sustained_clock_mhz"):
            if getattr(d, f) > 0:
                src = d.sources.get(f, "")
                assert src.split(":")[0].strip() in refs, f"{name}.{f} has no known source"
        assert 0 < d.clock_factor <= 1.0


def test_catalog_t4_sustained_clock_and_rtx2070_boost() -> None:
    assert get_device("t4").clock_factor == pytest.approx(900 / 1590)
    assert get_device("rtx2070").clock_factor == 1.0  # no cited sustained clock: boost kept


def _catalog_text(**clocks: float) -> str:
    """A one-device catalog (the GTX 1080's fields) with the given clock fields."""
    d = {**get_device("gtx1080").to_dict(), **clocks}
    d.pop("name")
    lines = [f"{k} = {json.dumps(v)}" for k, v in d.items()]
    return "[devices.x]\n" + "\n".join(lines) + "\n"


def test_bad_clock_is_one_line_error(tmp_path: Path) -> None:
    cases = {"ok": _catalog_text(boost_clock_mhz=1000.0, sustained_clock_mhz=900.0),
             "above": _catalog_text(boost_clock_mhz=1000.0, sustained_clock_mhz=2000.0),
             "negative": _catalog_text(boost_clock_mhz=-1.0)}
    for name, text in cases.items():  # one file each: the catalog is cached per path
        (tmp_path / f"{name}.toml").write_text(text)
    assert load_catalog(tmp_path / "ok.toml")["x"].clock_factor == pytest.approx(0.9)
    with pytest.raises(InputError, match="sustained_clock_mhz needs boost_clock_mhz"):
        load_catalog(tmp_path / "above.toml")
    with pytest.raises(InputError, match="boost_clock_mhz must be >= 0"):
        load_catalog(tmp_path / "negative.toml")


@pytest.fixture(scope="module")
def fig7_subset(catalog_graphs) -> dict[str, float]:
    """Seed 001 §4.2 / Fig. 7 means on the 12 Table 3 CNNs on CIFAR-10 (batch 32, SGD; the
    full 424-run check is benchmarks/emulator_seed001.py), computed once for both tests."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from emulator_seed001 import fig7_means

    from gpuscope.jobs.spec import TABLE3_CNNS, JobSpec

    jobs = [JobSpec(m, "cifar10", "sgd", 32, 10, steps_per_epoch=100) for m in TABLE3_CNNS]
    means, n = fig7_means(catalog_graphs, jobs=jobs)  # graphs shared with tests/test_graphs.py
    assert n == len(jobs)
    return means


@pytest.mark.slow
def test_fig7_gtx1080_slowest_on_cifar10_subset(fig7_subset) -> None:
    """Seed 001 §4.2 / Fig. 7: the GTX 1080 has the highest mean execution time."""
    assert fig7_subset["gtx1080"] > max(fig7_subset["rtx2070"], fig7_subset["titanx"]), fig7_subset


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=(
    "known miss, kept visible: the Titan X's 128-lane Pascal SMs need twice the GEMM tile reuse "
    "of the RTX 2070's 64-lane Turing SMs (KernelDevice.simt_intensity), which the held-out "
    "kernel and CNN-iteration measurements support, and the Titan X now emulates ~4 % slower "
    "here, where the paper has it fastest; strict, so the day the order holds this fails "
    "(docs/emulator.md, 'Host model and seed 001')"))
def test_fig7_titan_x_fastest_on_cifar10_subset(fig7_subset) -> None:
    """Seed 001 §4.2 / Fig. 7: the Titan X has the lowest mean execution time."""
    from emulator_seed001 import fig7_order_holds

    assert fig7_order_holds(fig7_subset), fig7_subset
