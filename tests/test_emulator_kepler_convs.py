"""Per-architecture Winograd speed-ups (Kepler convolutions).

``arch_winograd["kepler"]`` replaces ``winograd_speedup`` for 3x3 convolutions on Kepler only
(fitted on jcjohnson/cnn-benchmarks' K40c vs GTX 1080 cuDNN 5 times by
``benchmarks/emulator_kepler_convs.py``); every other kernel and architecture is unchanged.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpuscope.cluster.devices import get_device
from gpuscope.core.errors import InputError
from gpuscope.emulator.calibration.fit import fit_arch_winograd
from gpuscope.emulator.params import CALIBRATION_FILE, EmulatorParams, default_params
from gpuscope.emulator.perf import GraphCost, kernel_times
from gpuscope.graphs.opgraph import OP_CLASSES

N = 3.0 * 4096**2  # elements each kernel touches: fill = N / (N + SMs * 2048), close to 1


def _cost() -> GraphCost:
    """Two identical compute-bound convolutions, the first 3x3 (Winograd), the second not."""
    flops = np.array([2.0 * 4096**3, 2.0 * 4096**3])
    t = np.array([True, True])
    return GraphCost(flops=flops, bytes=np.array([4 * N, 4 * N]), numel=np.array([N, N]),
                     cls=np.array([OP_CLASSES.index("conv")] * 2), is_conv_fp32=t, is_half=~t,
                     forward=t, winograd=np.array([True, False]), n_dispatch=2,
                     n_dispatch_forward=2, n_conv_forward=2, param_bytes=0.0,
                     activation_bytes=0.0, batch_size=1)


def test_kepler_3x3_speedup_by_hand_and_nothing_else_moves() -> None:
    base = EmulatorParams(arch_eff={**EmulatorParams().arch_eff, "kepler": 0.5})
    kep = base.with_(arch_winograd={"kepler": 1.2})
    cost, k80 = _cost(), get_device("k80")
    launch = base.launch_us * 1e-6
    t0, _ = kernel_times(cost, k80, base)
    t1, _ = kernel_times(cost, k80, kep)
    fill = N / (N + k80.sm_count * base.fill_threads_per_sm)
    # 4.37 TFLOP/s x 758/875 sustained x 0.6 (conv) x 0.5 (kepler) x fill x 1.2 (3x3 on Kepler)
    rate = 4.37e12 * (758 / 875) * 0.6 * 0.5 * fill
    assert t1[0] == pytest.approx(cost.flops[0] / (rate * 1.2) + launch, rel=1e-9)
    assert t0[0] == pytest.approx(cost.flops[0] / (rate * 1.8) + launch, rel=1e-9)
    assert (t1[0] - launch) / (t0[0] - launch) == pytest.approx(1.8 / 1.2)  # 1.5x slower
    assert t1[1] == t0[1]  # not a 3x3 convolution: untouched
    for dev in ("p100", "v100", "gtx1080", "m60", "a100"):  # other architectures keep 1.8
        d = get_device(dev)
        assert np.array_equal(kernel_times(cost, d, base)[0], kernel_times(cost, d, kep)[0])


def test_calibration_carries_the_fitted_kepler_speedup() -> None:
    p = default_params()
    assert p.arch_winograd == {"kepler": pytest.approx(1.2012)}
    assert p.winograd_speedup == 1.8  # every other architecture
    assert "jcjohnson/cnn-benchmarks" in CALIBRATION_FILE.read_text()  # provenance
    assert EmulatorParams.from_dict(p.to_dict()).arch_winograd == p.arch_winograd  # round trip


@pytest.mark.parametrize("table,msg", [
    ({"gk110": 1.2}, "unknown architecture"),
    ({"kepler": 0.9}, "not a 3x3 speed-up"),
    ({"kepler": 2.5}, "not a 3x3 speed-up"),
    ([1.2], "expected a table"),
])
def test_bad_arch_winograd_table_is_one_clear_error(table: object, msg: str) -> None:
    with pytest.raises(InputError, match=msg):
        EmulatorParams.from_dict({"arch_winograd": table})


def test_fit_recovers_a_known_speedup_through_the_refit() -> None:
    # errors vanish at w = 1.5; the refit sets kepler = 1 / w, as a fit-set refit would move it
    calls: list[float] = []

    def refit(p: EmulatorParams) -> EmulatorParams:
        calls.append(p.arch_winograd["kepler"])
        return p.with_(arch_eff={**p.arch_eff, "kepler": 1.0 / p.arch_winograd["kepler"]})

    def errors(p: EmulatorParams) -> np.ndarray:
        assert p.arch_eff["kepler"] == pytest.approx(1.0 / p.arch_winograd["kepler"])
        return np.log(p.arch_winograd["kepler"] / 1.5) * np.array([1.0, 2.0])

    out = fit_arch_winograd("kepler", errors, EmulatorParams(), refit)
    assert out.arch_winograd["kepler"] == pytest.approx(1.5, abs=2e-3)
    assert out.arch_eff["kepler"] == pytest.approx(1.0 / 1.5, abs=2e-3)
    assert calls and all(1.0 <= w <= 2.25 for w in calls)
    # the bound holds where the data would want more than Winograd's 2.25x
    far = fit_arch_winograd("kepler", lambda p: np.array([np.log(p.arch_winograd["kepler"] / 4.0)]),
                            EmulatorParams())
    assert far.arch_winograd["kepler"] == pytest.approx(2.25, abs=2e-3)
