"""The kernel cost model (gpuscope.emulator.kernels): the physics a GEMM and a memory-bound
kernel must obey, a one-element kernel's floor, a device known only from its spec sheet,
``gpuscope emulate kernels`` on the NeuSight schema, and a device's figures fitted back from
its own kernel sweep."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from gpuscope.cli import main
from gpuscope.cluster.devices import get_device, load_catalog
from gpuscope.emulator.calibration.kernel_fit import fit_device, measured_latency
from gpuscope.emulator.kernels import KernelDevice, default_kernel_params, kernel_time
from gpuscope.emulator.kernels.model import device_seconds
from gpuscope.emulator.kernels.ops import OP_COLUMNS, batch_from_table

P = default_kernel_params()


def test_gemm_grows_with_every_dimension() -> None:
    base = dict(b=1, m=1024, n=1024, k=1024)
    t0 = kernel_time("gemm", "v100-pcie-32gb", **base)
    for dim in "bmnk":
        assert kernel_time("gemm", "v100-pcie-32gb", **{**base, dim: 4096}) > 2.0 * t0, dim


def test_batched_gemm_jumps_at_a_wave_boundary() -> None:
    # strided-batched SGEMM on Ampere: four 128 x 128 tiles per 256 x 256 output, 108 SMs;
    # a reduction of 200 is too short to split
    a100 = get_device("a100-pcie-40gb")
    t = {b: kernel_time("bmm", a100, B=b, M=256, N=200, K=256) for b in (26, 27, 28, 54, 55)}
    assert t[27] / t[26] < 1.05             # 104 and 108 tiles: one wave
    assert t[28] / t[27] > 1.5              # 112 tiles: a second wave for four more tiles
    assert t[54] / t[28] < 1.05             # which the next 104 tiles fill
    assert t[55] / t[54] > 1.3


def test_memory_bound_kernel_converges_to_the_bandwidth() -> None:
    for name in ("t4", "v100-pcie-32gb", "h100"):
        d = get_device(name)
        rates = []
        for h in (2**16, 2**20, 2**22, 2**24):  # 2 x 2^16 .. 2^24 floats: into and past the L2
            t = kernel_time("add", d, B=2, H=h) - (P.launch_us + P.mem_latency_us) * 1e-6
            rates.append(12.0 * 2 * h / t)
        want = d.mem_bw_gbs * 1e9 * P.memory["dram_eff_hbm" if d.mem_type.startswith("HBM") else "dram_eff"]
        assert rates[-1] == pytest.approx(want, rel=0.01)
        gaps = [abs(r / want - 1.0) for r in rates]
        assert gaps == sorted(gaps, reverse=True)  # closer and closer as the L2 stops holding it


def test_one_element_kernel_costs_its_floor_on_every_device() -> None:
    # the launch and one DRAM round trip (a row reduction adds its one reduction step), the
    # same for 1 and 8 elements: nothing left that scales with the data
    floor = (P.launch_us + P.mem_latency_us) * 1e-6
    for d in load_catalog().values():
        for op in ("add", "relu", "softmax", "ln"):
            t = kernel_time(op, d, B=1, H=1)
            assert floor <= t < floor + 2e-6, (d.name, op, t)
            assert kernel_time(op, d, B=1, H=8) == pytest.approx(t, rel=1e-2), (d.name, op)


def test_spec_only_device_gets_finite_predictions() -> None:
    # an Ada GPU known from its datasheet only: no L2, no clocks, not in the kernel data
    spec = replace(get_device("l4"), name="spec-only", l2_mb=0.0, boost_clock_mhz=0.0,
                   sustained_clock_mhz=0.0, aliases="")
    kd = KernelDevice.from_spec(spec)
    assert kd.l2 > 0 and 1e9 < kd.clock < 3e9
    rows = pd.DataFrame([{"op": op, **{c: 3 for c in cols}} for op, cols in OP_COLUMNS.items()])
    rows.loc[rows.op == "conv", ["Stride", "Padding"]] = [1, 1]
    for prec in ("fp32", "tf32", "amp-fp16", "amp-bf16"):
        t = device_seconds(batch_from_table(rows), kd, P, prec)
        assert np.isfinite(t).all() and (t > 0).all()
    for prec in ("fp32", "amp-bf16"):
        assert np.isfinite(kernel_time("gemm", spec, prec, 2, b=4, m=512, n=512, k=512))


def test_tensor_cores_speed_up_a_large_gemm() -> None:
    shape = dict(b=1, m=8192, n=8192, k=8192)
    fp32 = kernel_time("gemm", "a100", **shape)
    tf32 = kernel_time("gemm", "a100", "tf32", **shape)
    bf16 = kernel_time("gemm", "a100", "amp-bf16", 2, **shape)
    assert bf16 < tf32 < fp32 / 3
    # no BF16 tensor cores before Ampere: a V100 computes bf16 at the FP32 rate
    v100 = kernel_time("gemm", "v100", "amp-bf16", 2, **shape)
    assert v100 > 0.5 * kernel_time("gemm", "v100", **shape)


def test_dual_datapath_fp32_runs_at_the_cited_sgemm_rate() -> None:
    # cuBLAS 13.3 batched SGEMM on an H200 at 82 % of its FP32 FMA peak (h200_sgemm in
    # datasets/devices.toml): the model's share for such GEMMs (launch left out)
    h200 = KernelDevice.from_spec(get_device("h200"))
    assert h200.dual_fp32
    shares = [2.0 * b * s**3 / (kernel_time("gemm", "h200", b=b, m=s, n=s, k=s) - 2e-6) / h200.fp32
              for s in (4096, 8192) for b in (4, 8, 16)]
    assert float(np.median(shares)) == pytest.approx(0.82, abs=0.01)
    # GA100 has 64 FP32 lanes per SM, fitted on measured kernels: not scaled; GA10x (A10) is,
    # to an RTX 3080's 19.12 of 29.8 TFLOP/s share at 4096^3 (rtx3080_sgemm)
    assert not KernelDevice.from_spec(get_device("a100")).dual_fp32
    unscaled = replace(P, dual_fp32_scale={})
    shape = dict(b=1, m=4096, n=4096, k=4096)
    assert kernel_time("gemm", "a100", **shape) == pytest.approx(
        kernel_time("gemm", "a100", params=unscaled, **shape))
    assert kernel_time("gemm", "a10", **shape) / kernel_time(
        "gemm", "a10", params=unscaled, **shape) == pytest.approx(
            1 / P.dual_fp32_scale["ampere"], rel=0.01)


def test_simt_intensity_follows_lanes_and_shared_memory() -> None:
    # FP32 FLOP per shared-memory byte per clock, relative to a 64-lane SM with 128 B/clk:
    # GP104 (P4) and GA102 (A10) have 128 lanes, GP100 and GA100 64, Kepler's SMX 192 lanes
    # with 8-byte banks (256 B/clk)
    want = {"p4": 2.0, "a10": 2.0, "h100": 2.0, "p100": 1.0, "v100": 1.0, "t4": 1.0,
            "a100": 1.0, "k80": 1.5}
    got = {n: KernelDevice.from_spec(get_device(n)).simt_intensity for n in want}
    assert got == want


def test_a_simt_tile_needs_more_reuse_on_a_wider_sm() -> None:
    # the same 64 x 64 tile (arithmetic intensity a = 32), a full wave: the compute part of its
    # time grows by (a + 2 h) / (a + h) when the SM issues twice the FLOP per byte
    from gpuscope.emulator.kernels.gemm import tile_time

    pg = P.gemm_simt
    one = np.array([1.0])
    big = np.array([8192.0])

    def compute(q: float) -> float:
        t = tile_time(one, big, big, big, 64, 64, 1, 1e11, 80, 1.4e9, pg, q)
        per_sm = np.ceil(128 * 128 / 80)
        occ = min(1.0, pg["occ_128"] * (64 * 64 / 128.0**2) ** pg["occ_pow"])
        return float(t[0]) - np.ceil(per_sm * occ) * pg["cta_cycles"] / 1.4e9

    h = pg["ai_half"]
    assert compute(2.0) / compute(1.0) == pytest.approx((32 + 2 * h) / (32 + h), rel=1e-9)


def test_cited_sgemm_scales_reproduce_their_measurements() -> None:
    # each architecture no measured kernel covers is scaled so that the model reaches the
    # cited cuBLAS share on the cited GEMMs; the stored scales are the code's
    from gpuscope.emulator.calibration.cited import anchors, cited_scales, model_share

    for a in anchors():
        arch = a.archs[0]
        scale = (P.dual_fp32_scale if a.dual else P.simt_arch_scale)[arch]
        assert model_share(a, P, scale) == pytest.approx(a.share, abs=0.005), a.ref
    q = cited_scales(P)
    assert q.simt_arch_scale == pytest.approx(P.simt_arch_scale, abs=1e-3)
    assert q.dual_fp32_scale == pytest.approx(P.dual_fp32_scale, abs=1e-3)


def _table() -> pd.DataFrame:
    rows = [{"op": "bmm", "B": 16, "M": 512, "N": 64, "K": 512},
            {"op": "linear", "B": 1, "M": 2048, "N": 1024, "K": 4096},
            {"op": "conv", "B": 8, "Input_Channel": 64, "Output_Channel": 64, "Kernel_Szie": 3,
             "Input_Size": 56, "Stride": 1, "Padding": 1},
            {"op": "add", "B": 4096, "H": 1024}, {"op": "gelu", "B": 512, "H": 4096},
            {"op": "softmax", "B": 8192, "H": 512}, {"op": "ln", "B": 8192, "H": 1024}]
    return pd.DataFrame(rows).assign(latency_ms=1.0, extra="kept")


def test_emulate_kernels_round_trips_the_schema(tmp_path, capsys) -> None:
    src = tmp_path / "k.parquet"
    _table().assign(device="Tesla T4").to_parquet(src)  # a name the GPU reports (alias)
    out = tmp_path / "out.parquet"
    assert main(["emulate", "kernels", "--input", str(src), "-o", str(out)]) == 0
    got = pd.read_parquet(out)
    assert list(got.columns) == [*pd.read_parquet(src).columns, "pred_ms"]
    assert got.drop(columns="pred_ms").equals(pd.read_parquet(src))
    assert (got.pred_ms > 0).all() and np.isfinite(got.pred_ms).all()
    # --devices prices every row on each device (CSV in, CSV out)
    csv = tmp_path / "k.csv"
    _table().to_csv(csv, index=False)
    out2 = tmp_path / "out.csv"
    assert main(["emulate", "kernels", "--input", str(csv), "--devices", "v100,h100",
                 "-o", str(out2)]) == 0
    two = pd.read_csv(out2)
    assert len(two) == 2 * len(_table()) and set(two.device) == {"v100", "h100"}
    v, h = (two[two.device == d].pred_ms.to_numpy() for d in ("v100", "h100"))
    assert (h[:3] < v[:3]).all()  # the H100 computes the GEMMs and the convolution faster


@pytest.mark.parametrize("change,msg", [
    ({"op": "bmmm"}, "unknown op"), ({"K": -3}, "row 0: op 'bmm' has K"),
    ({"device": "rtx9090"}, "device 'rtx9090'"),
])
def test_emulate_kernels_bad_rows_are_one_line(tmp_path, capsys, change, msg) -> None:
    df = _table().assign(device="t4")
    for k, v in change.items():
        df.loc[0, k] = v
    src = tmp_path / "k.csv"
    df.to_csv(src, index=False)
    assert main(["emulate", "kernels", "--input", str(src), "-o", str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and msg in err[0], err
    assert not (tmp_path / "o.csv").exists()


def test_emulate_kernels_on_a_table_without_ops_is_one_line(tmp_path, capsys) -> None:
    # a job queue given by mistake: no op column (once a traceback from pandas)
    src = tmp_path / "queue.csv"
    src.write_text("job_id,model,dataset,optimizer,batch_size,epochs\nj1,resnet50,imagenet,sgd,4,1\n")
    assert main(["emulate", "kernels", "--input", str(src), "--devices", "v100",
                 "-o", str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no 'op' column" in err[0], err


def test_fitted_device_figures_reproduce_its_measurements() -> None:
    # a sweep "measured" on a T4 that sustains 0.8 of its catalog compute and 0.9 of its
    # bandwidth, with host floors of 20 + 10 us: the fit finds those figures back
    spec = get_device("t4")
    rng = np.random.default_rng(0)
    n = 60
    sweep = pd.concat([
        pd.DataFrame({"op": "bmm", "B": rng.integers(1, 64, n), "M": rng.integers(64, 1024, n),
                      "N": rng.integers(64, 1024, n), "K": rng.integers(64, 1024, n)}),
        pd.DataFrame({"op": "add", "B": rng.integers(1, 4096, n), "H": rng.integers(64, 8192, n)}),
    ], ignore_index=True)
    true = KernelDevice.from_spec(spec)
    true = replace(true, fp32=true.fp32 * 0.8, fp16=true.fp16 * 0.8, bw=true.bw * 0.9)
    t = device_seconds(batch_from_table(sweep), true, P, fixed=False)
    sweep["latency_ms"] = measured_latency(20e-6, 10e-6, t) * 1e3
    f = fit_device(sweep, spec, P)
    assert f.compute_scale == pytest.approx(0.8, rel=0.02)
    assert f.bw_scale == pytest.approx(0.9, rel=0.02)
    assert f.floors_us["add"] == pytest.approx(20.0, rel=0.05)
    fitted = KernelDevice.from_spec(f.apply(spec))
    back = device_seconds(batch_from_table(sweep), fitted, P, fixed=False)
    assert np.median(np.abs(np.log(back / t))) < 0.01


def test_conv_arch_scale_slows_only_that_architectures_convolutions() -> None:
    # a compute-bound convolution: its time on Kepler doubles at half the scale (less the
    # launch), a GEMM on Kepler and a convolution on a Volta do not move
    conv = dict(B=64, Input_Channel=256, Output_Channel=256, Kernel_Szie=3, Input_Size=56,
                Stride=1, Padding=1)
    kepler = {**P.conv_arch_scale, "kepler": P.conv_arch_scale.get("kepler", 1.0)}
    base = replace(P, conv_arch_scale=kepler)
    half = replace(P, conv_arch_scale={**kepler, "kepler": kepler["kepler"] / 2})
    t0, t1 = (kernel_time("conv", "k80", params=q, **conv) - 2e-6 for q in (base, half))
    assert t1 / t0 == pytest.approx(2.0, rel=0.02)
    for op, dev, shape in (("gemm", "k80", dict(b=1, m=2048, n=2048, k=2048)),
                           ("conv", "v100", conv)):
        assert kernel_time(op, dev, params=half, **shape) == kernel_time(op, dev, params=base,
                                                                         **shape)


def test_ratio_scale_solves_a_time_inverse_in_the_scale() -> None:
    # log(a / s + b) - log(c) = target has the closed form s = a / (c e^target - b)
    from gpuscope.emulator.calibration.cited import ratio_scale

    a, b, c, target = 3.0, 0.5, 1.2, 0.4
    s = ratio_scale(lambda x: float(np.log((a / x + b) / c)), target, iters=60)
    assert s == pytest.approx(a / (c * np.exp(target) - b), rel=1e-6)
