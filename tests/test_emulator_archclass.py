"""Per-(architecture, op class) efficiencies (cuBLAS SGEMM on Kepler, kepmm).

``arch_class_eff["kepler:matmul"]`` replaces ``class_eff * arch_eff`` for the compute side of
Kepler matmuls only; convolutions (fitted on ResNet-50) and every other architecture are
unchanged.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpuscope.cluster.devices import get_device
from gpuscope.core.errors import InputError
from gpuscope.emulator.params import EmulatorParams, default_params
from gpuscope.emulator.perf import GraphCost, class_compute_eff, kernel_times
from gpuscope.graphs.opgraph import OP_CLASSES


def _cost() -> GraphCost:
    """One large matmul and one large (1x1, no Winograd) convolution, compute-bound."""
    flops = np.array([2.0 * 4096**3, 2.0 * 4096**3])
    n = 3.0 * 4096**2
    cls = np.array([OP_CLASSES.index("matmul"), OP_CLASSES.index("conv")])
    t = np.array([True, True])
    return GraphCost(flops=flops, bytes=np.array([4 * n, 4 * n]), numel=np.array([n / 3, n / 3]),
                     cls=cls, is_conv_fp32=np.array([False, True]), is_half=~t, forward=t,
                     winograd=~t, n_dispatch=2, n_dispatch_forward=2, n_conv_forward=1,
                     param_bytes=0.0, activation_bytes=0.0, batch_size=1)


def test_kepler_matmul_runs_at_the_cited_fraction_and_nothing_else_moves() -> None:
    base = EmulatorParams(arch_eff={**EmulatorParams().arch_eff, "kepler": 0.45})
    cited = base.with_(arch_class_eff={"kepler:matmul": 0.63})
    cost, k80 = _cost(), get_device("k80")
    t0, _ = kernel_times(cost, k80, base)
    t1, _ = kernel_times(cost, k80, cited)
    fill = cost.numel / (cost.numel + k80.sm_count * base.fill_threads_per_sm)  # work = numel
    want = cost.flops[0] / (k80.fp32_tflops * 1e12 * 0.63 * k80.clock_factor * fill[0])
    assert t1[0] == pytest.approx(want + base.launch_us * 1e-6, rel=1e-9)
    assert t1[0] < t0[0]  # 0.63 of peak beats 0.7 * 0.45
    assert t1[1] == t0[1]  # the convolution keeps class_eff * arch_eff
    for dev in ("p100", "v100", "gtx1080", "a100"):  # other architectures: identical
        d = get_device(dev)
        assert np.array_equal(kernel_times(cost, d, base)[0], kernel_times(cost, d, cited)[0])
    eff = class_compute_eff(cited, "kepler")
    assert eff[OP_CLASSES.index("matmul")] == 0.63
    assert eff[OP_CLASSES.index("conv")] == pytest.approx(0.6 * 0.45)


def test_calibration_carries_the_cited_kepler_sgemm_and_k80_clock() -> None:
    p = default_params()
    assert p.arch_class_eff == {"kepler:matmul": 0.63}  # 3.15 / 5.0 TFLOP/s (k40_sgemm)
    assert get_device("k80").clock_factor == pytest.approx(758 / 875)  # k80_gemm_clock


@pytest.mark.parametrize("table,msg", [
    ({"kepler:gemm": 0.6}, "not \"<arch>:<op class>\""),
    ({"matmul": 0.6}, "not \"<arch>:<op class>\""),
    ({"kepler:matmul": 1.5}, "not a fraction of peak"),
    ({"kepler:matmul": 0.0}, "not a fraction of peak"),
])
def test_bad_arch_class_table_is_one_clear_error(table: dict[str, float], msg: str) -> None:
    with pytest.raises(InputError, match=msg):
        EmulatorParams.from_dict({"arch_class_eff": table})
