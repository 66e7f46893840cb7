"""Host eras (host model): per host/software generation host costs, the legacy era
unchanged, cuDNN kernels and views dispatched at their own cost, autotuning per distinct
convolution configuration."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from test_emulator import conv_net, job

from gpuscope.cluster.devices import HOST_ERAS, DeviceSpec, _parse, get_device, load_catalog
from gpuscope.core.errors import InputError
from gpuscope.emulator import EmulatorParams, Estimate, default_params, estimate
from gpuscope.emulator.calibration.fit import HOST_RUN_PARAMS, HOST_STEP_PARAMS
from gpuscope.emulator.hostwork import per_tensor_extra_dispatch
from gpuscope.emulator.perf import GraphCost, gpu_times

MODERN = {"step_sync_ms": 2.0, "dispatch_us": 20.0, "cudnn_dispatch_us": 90.0,
          "view_dispatch_us": 0.0, "startup_s": 10.0, "per_tensor_optimizer": 0.0,
          "loader_handoff_ms": 0.0}
P = EmulatorParams(host_eras={"modern": MODERN})


def test_for_era_overrides_only_that_era() -> None:
    assert P.for_era("legacy") is P
    m = P.for_era("modern")
    assert (m.step_sync_ms, m.dispatch_us, m.cudnn_dispatch_us, m.startup_s) == (2.0, 20.0, 90.0, 10.0)
    assert m.cpu_ms_per_sample == P.cpu_ms_per_sample and m.dispatch_us != P.dispatch_us


def test_unknown_era_parameter_is_refused() -> None:
    with pytest.raises(InputError, match="host era 'modern'"):
        EmulatorParams.from_dict({"host_eras": {"modern": {"dispatch_ms": 1.0}}})
    round_trip = EmulatorParams.from_dict(P.to_dict())
    assert round_trip.host_eras == P.host_eras


def _conv_step_on(device: str, era: str) -> tuple[GraphCost, DeviceSpec, Estimate]:
    """The batch-8 conv net's cost and its estimate on ``device`` (whose era is checked)."""
    cost = GraphCost.from_graph(conv_net(8), 8)
    dev = get_device(device)
    assert dev.host_era == era
    return cost, dev, estimate(job(batch_size=8), cost, dev, P)


def test_legacy_dispatch_is_one_cost_per_op() -> None:
    cost, dev, e = _conv_step_on("titanx", "legacy")
    # PyTorch 1.x: the foreach optimizer kernels and zero_grad run once per parameter tensor
    n = cost.n_dispatch + per_tensor_extra_dispatch(cost)
    assert e.t_dispatch_s == pytest.approx(n * P.dispatch_us * 1e-6 / dev.host_single_core, rel=1e-12)
    assert e.t_sync_s == pytest.approx((P.step_sync_ms + P.loader_handoff_ms) * 1e-3 / dev.host_single_core)


def test_modern_dispatch_prices_cudnn_kernels_and_views_apart() -> None:
    cost, dev, e = _conv_step_on("h100", "modern")
    n_other = cost.n_dispatch - cost.n_cudnn - cost.n_views
    expect = (n_other * 20.0 + cost.n_cudnn * 90.0) * 1e-6 / dev.host_single_core
    assert cost.n_cudnn == 40 and e.t_dispatch_s == pytest.approx(expect)
    # the same device put in the legacy era gets the legacy costs
    legacy = estimate(job(batch_size=8), cost, dataclasses.replace(dev, host_era="legacy"), P)
    n_legacy = cost.n_dispatch + per_tensor_extra_dispatch(cost)  # PyTorch 1.x optimizer loops
    assert legacy.t_dispatch_s == pytest.approx(n_legacy * 12e-6 / dev.host_single_core)


def test_autotuning_counts_distinct_conv_configurations() -> None:
    # 20 convolutions of one shape: cuDNN benchmarks the configuration once.
    g, j = conv_net(8), job(batch_size=8)
    cost = GraphCost.from_graph(g, 8)
    assert cost.n_conv_forward == 20 and cost.n_conv_configs == 1
    dev = get_device("titanx")
    e = estimate(j, cost, dev, P)
    upload = cost.param_bytes / (dev.pcie_gbs * 1e9 * P.h2d_eff)
    assert e.startup_s == pytest.approx(P.startup_s + P.autotune_s_per_conv + upload)


def test_catalog_eras() -> None:
    cat = load_catalog()
    assert {d.host_era for d in cat.values()} <= set(HOST_ERAS)
    # seed 001's and Gavel's machines keep the legacy era, the measured H100 is modern
    for n in ("gtx1080", "rtx2070", "titanx", "k80", "p100", "v100"):
        assert cat[n].host_era == "legacy"
    assert cat["h100"].host_era == "modern"
    d = {k: v for k, v in dataclasses.asdict(cat["h100"]).items() if k not in ("name", "sources")}
    with pytest.raises(InputError, match="unknown host_era 'pytorch3'"):
        _parse("x", {**d, "host_era": "pytorch3"}, Path("devices.toml"))


def test_calibrated_modern_era_is_fitted_and_faster_per_op() -> None:
    p = default_params()
    m = p.host_eras["modern"]
    assert set(HOST_STEP_PARAMS) | set(HOST_RUN_PARAMS) <= set(m)
    # a 2021+ host with PyTorch 2.x, measured in-process: less serial latency per step than
    # the 2016 P100 host with its DataLoader workers (the legacy sync is the modern one's)
    assert m["step_sync_ms"] < p.step_sync_ms + p.loader_handoff_ms
    assert m["loader_handoff_ms"] == 0.0 and m["per_tensor_optimizer"] == 0.0


def test_amp_convolutions_pay_nchw_layout_transposes() -> None:
    cost = GraphCost.from_graph(conv_net(32), 32)
    dev = get_device("a100")
    with_t = gpu_times(cost, dev, P, "amp-fp16")[0]
    without = gpu_times(cost, dev, P.with_(amp_layout_passes=0.0), "amp-fp16")[0]
    assert with_t > without
    # FP32/TF32 convolutions and devices without half-precision tensor cores pay nothing
    assert gpu_times(cost, dev, P, "fp32") == gpu_times(cost, dev, P.with_(amp_layout_passes=0.0), "fp32")
    p100 = get_device("p100")
    assert gpu_times(cost, p100, P, "amp-fp16") == gpu_times(cost, p100, P.with_(amp_layout_passes=0.0), "amp-fp16")


def test_default_params_reads_the_calibration_once_per_version(tmp_path, monkeypatch) -> None:
    """``default_params`` returns the same (immutable) object while ``calibration.json`` is
    unchanged, and the file's new values once it changes."""
    import json

    import gpuscope.emulator.params as params_mod

    src = json.loads(params_mod.CALIBRATION_FILE.read_text())
    f = tmp_path / "calibration.json"
    f.write_text(json.dumps(src))
    monkeypatch.setattr(params_mod, "CALIBRATION_FILE", f)
    a = default_params()
    assert default_params() is a
    src["dispatch_us"] = float(src.get("dispatch_us", a.dispatch_us)) + 1.5
    f.write_text(json.dumps(src, indent=2))  # a different size as well as a new mtime
    b = default_params()
    assert b is not a and b.dispatch_us == pytest.approx(a.dispatch_us + 1.5)
    f.unlink()
    assert default_params() == EmulatorParams()
