"""Kepler convolutions against published K40c vs GTX 1080 times
(CHANGELOG.md, "2.4 candidate: Kepler convolutions").

Source: jcjohnson/cnn-benchmarks, README.md at commit 0367b1f5aaec73271be733bc342babe0f4060c7b
(https://github.com/jcjohnson/cnn-benchmarks): Torch, cuDNN 5.0.05, CUDA 8.0 RC, batch 16,
``Total (ms)`` = one ``model:forward`` plus one ``model:backward`` (``cnn_benchmark.lua``: no loss,
no weight update), mean of 10 passes after a warm-up, on one machine with a GeForce GTX 1080 and
a Tesla K40c. The K40c runs at its 745 MHz base clock unless its user selects a boost clock
("All boards ship with core clock set to the base clock value", NVIDIA Tesla K40 board
specification BD-06902-001_v05, Key Features: 2880 cores, base 745 MHz, boosts 810/875 MHz,
288 GB/s, 15 SMX), so it is emulated at 2880 x 2 x 0.745 = 4.29 TFLOP/s.

The published ratios fit ``arch_winograd["kepler"]`` (``calibrate.fit_arch_winograd``): at each
candidate speed-up the Kepler efficiency is refitted on the fit set (Gavel's ResNet-50 K80
steps/s, as ``benchmarks/emulator_fidelity.py`` fits it), so the eight ratios decide only how
much 3x3 convolutions gain on Kepler. No held-out family is used. Prints the per-network
ratios with one speed-up for every architecture and with the fitted Kepler one, and the
values ``gpuscope/emulator/calibration.json`` should carry (``--check`` exits 1 if it differs).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import torch
from torch import nn

from gpuscope.cluster.devices import DeviceSpec, get_device
from gpuscope.emulator.calibration.fit import Point, fit_arch_eff, fit_arch_winograd, load_gavel
from gpuscope.emulator.params import EmulatorParams, default_params
from gpuscope.emulator.perf import GraphCost, kernel_times
from gpuscope.graphs import GraphCache
from gpuscope.graphs.frontends.torch import trace_train_step
from gpuscope.workloads.models import basic as mb
from gpuscope.workloads.models import resnet as mr

#: jcjohnson/cnn-benchmarks @0367b1f, "Total (ms)" at batch 16: (GTX 1080, Tesla K40c), cuDNN 5005.
PUBLISHED_MS: dict[str, tuple[float, float]] = {
    "alexnet": (23.18, 61.48), "vgg16": (232.55, 920.21), "vgg19": (281.69, 1129.65),
    "resnet18": (47.07, 168.30), "resnet34": (79.70, 303.80), "resnet50": (153.90, 449.90),
    "resnet101": (235.33, 797.89), "resnet152": (328.90, 1146.73),
}
BATCH = 16


class _Basic(nn.Module):
    """ResNet-18/34 block: two 3x3 convs with BN, projection shortcut when the shape changes."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(True),
            nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
        self.sc: nn.Module = nn.Identity()
        if stride != 1 or cin != cout:
            self.sc = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.sc(x))


def resnet(depth: int) -> nn.Module:
    """He et al. 2016 ImageNet ResNets (fb.resnet.torch, which the benchmark converted)."""
    basic = depth in (18, 34)
    blocks = {18: (2, 2, 2, 2), 34: (3, 4, 6, 3), 50: (3, 4, 6, 3), 101: (3, 4, 23, 3),
              152: (3, 8, 36, 3)}[depth]
    layers: list[nn.Module] = [mr.imagenet_stem(3, 64)]
    cin = 64
    for stage, (n, width) in enumerate(zip(blocks, (64, 128, 256, 512))):
        for i in range(n):
            stride = 2 if (i == 0 and stage > 0) else 1
            layers.append(_Basic(cin, width, stride) if basic else mr.Bottleneck(cin, width, stride))
            cin = width if basic else width * mr.Bottleneck.expansion
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 1000)]
    return nn.Sequential(*layers)


def bvlc_alexnet() -> nn.Module:
    """BVLC AlexNet as Caffe defines it (grouped conv2/4/5, LRN; 227x227 input)."""
    return nn.Sequential(
        nn.Conv2d(3, 96, 11, 4), nn.ReLU(True), nn.LocalResponseNorm(5, 1e-4, 0.75), nn.MaxPool2d(3, 2),
        nn.Conv2d(96, 256, 5, padding=2, groups=2), nn.ReLU(True), nn.LocalResponseNorm(5, 1e-4, 0.75),
        nn.MaxPool2d(3, 2), nn.Conv2d(256, 384, 3, padding=1), nn.ReLU(True),
        nn.Conv2d(384, 384, 3, padding=1, groups=2), nn.ReLU(True),
        nn.Conv2d(384, 256, 3, padding=1, groups=2), nn.ReLU(True), nn.MaxPool2d(3, 2), nn.Flatten(),
        nn.Dropout(0.5), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(True), nn.Dropout(0.5),
        nn.Linear(4096, 4096), nn.ReLU(True), nn.Linear(4096, 1000))


MODELS: dict[str, Callable[[], nn.Module]] = {
    "alexnet": bvlc_alexnet, "vgg16": lambda: mb.vgg("vgg16", 3, 224, 1000),
    "vgg19": lambda: mb.vgg("vgg19", 3, 224, 1000), "resnet18": lambda: resnet(18),
    "resnet34": lambda: resnet(34), "resnet50": lambda: resnet(50),
    "resnet101": lambda: resnet(101), "resnet152": lambda: resnet(152),
}


def step_cost(name: str, batch: int = BATCH) -> GraphCost:
    """One forward and backward of ``name`` on the meta device (the optimizer step is traced
    but left out of ``fwd_bwd_ms``, as the benchmark times none)."""
    model = MODELS[name]().to("meta")
    side = 227 if name == "alexnet" else 224
    x = torch.empty(batch, 3, side, side, device="meta")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(b: torch.Tensor) -> None:
        opt.zero_grad()
        model(b).sum().backward()
        opt.step()

    return GraphCost.from_graph(trace_train_step(step, x, model, [opt], name=f"{name}-b{batch}"), batch)


def k40c() -> DeviceSpec:
    """Tesla K40c at the base clock it ships with (module docstring)."""
    return replace(get_device("k80"), name="k40c", fp32_tflops=2880 * 2 * 0.745e-3,
                   mem_bw_gbs=288.0, sm_count=15, boost_clock_mhz=0.0, sustained_clock_mhz=0.0)


def fwd_bwd_ms(cost: GraphCost, device: DeviceSpec, params: EmulatorParams) -> float:
    """Emulated GPU time of the forward and backward kernels, ms."""
    t, _ = kernel_times(cost, device, params)
    keep = ~cost.optimizer if cost.optimizer is not None else np.ones(t.size, dtype=bool)
    return 1e3 * float(t[keep].sum())


def ratio_errors(costs: dict[str, GraphCost], params: EmulatorParams) -> np.ndarray:
    """log(emulated / published) K40c-over-GTX-1080 time ratio per network."""
    kep, pas = k40c(), get_device("gtx1080")
    return np.array([np.log(fwd_bwd_ms(c, kep, params) / fwd_bwd_ms(c, pas, params)
                            / (PUBLISHED_MS[n][1] / PUBLISHED_MS[n][0])) for n, c in costs.items()])


def kepler_refit() -> Callable[[EmulatorParams], EmulatorParams]:
    """``params`` with ``arch_eff["kepler"]`` refitted on Gavel's ResNet-50 K80 steps/s from
    the same prior ``benchmarks/emulator_fidelity.py`` fits it from (the fit set)."""
    gavel = load_gavel()
    gavel = gavel[(gavel.model == "ResNet-50") & (gavel.n_gpus == 1) & (gavel.device == "k80")]
    cache, k80 = GraphCache(), get_device("k80")
    from gpuscope.jobs.spec import JobSpec

    points = []
    for r in gavel.itertuples():
        job = JobSpec("resnet50", "imagenet", "sgd", int(r.batch_size), 1)
        points.append(Point(job, GraphCost.from_graph(cache.get_or_export(job), job.batch_size),
                            k80, float(r.steps_per_s), 1, f"resnet50-b{r.batch_size}"))

    def refit(params: EmulatorParams) -> EmulatorParams:
        prior = EmulatorParams(host_eras=params.host_eras, arch_class_eff=params.arch_class_eff,
                               arch_winograd=params.arch_winograd)
        kepler = fit_arch_eff(points, prior).arch_eff["kepler"]
        return params.with_(arch_eff={**params.arch_eff, "kepler": kepler})

    return refit


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless calibration.json carries the fitted values (within 1 %%)")
    args = ap.parse_args()
    refit = kepler_refit()
    costs = {n: step_cost(n) for n in MODELS}
    cal = default_params()
    uniform = refit(cal.with_(arch_winograd={k: v for k, v in cal.arch_winograd.items() if k != "kepler"}))
    fitted = fit_arch_winograd("kepler", lambda p: ratio_errors(costs, p), cal, refit)
    kep, pas = k40c(), get_device("gtx1080")
    print("K40c / GTX 1080 forward+backward time, batch 16 (jcjohnson/cnn-benchmarks @0367b1f, cuDNN 5.0.05)")
    print(f"{'network':<10} {'published':>9} {'uniform':>8} {'log err':>8} {'fitted':>7} {'log err':>8}")
    eu, ef = ratio_errors(costs, uniform), ratio_errors(costs, fitted)
    for (n, c), a, b in zip(costs.items(), eu, ef):
        pub = PUBLISHED_MS[n][1] / PUBLISHED_MS[n][0]
        ru = fwd_bwd_ms(c, kep, uniform) / fwd_bwd_ms(c, pas, uniform)
        rf = fwd_bwd_ms(c, kep, fitted) / fwd_bwd_ms(c, pas, fitted)
        print(f"{n:<10} {pub:9.2f} {ru:8.2f} {a:+8.3f} {rf:7.2f} {b:+8.3f}")
    w, k = fitted.arch_winograd["kepler"], fitted.arch_eff["kepler"]
    print(f"uniform (winograd_speedup {uniform.winograd_speedup} on Kepler, kepler "
          f"{uniform.arch_eff['kepler']:.4f}): median|log| {np.median(np.abs(eu)):.3f}, "
          f"rms {np.sqrt(np.mean(eu ** 2)):.3f}")
    print(f"fitted  (arch_winograd kepler {w:.3f}, kepler {k:.4f}): median|log| "
          f"{np.median(np.abs(ef)):.3f}, rms {np.sqrt(np.mean(ef ** 2)):.3f}")
    have_w = cal.arch_winograd.get("kepler", cal.winograd_speedup)
    ok = abs(have_w / w - 1) < 0.01 and abs(cal.arch_eff["kepler"] / k - 1) < 0.01
    print(f"calibration.json: arch_winograd kepler {have_w:.3f}, kepler {cal.arch_eff['kepler']:.4f}"
          f" ({'matches' if ok else 'DIFFERS from'} the fit)")
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
