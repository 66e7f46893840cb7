"""Tensor-core formats per architecture (``cluster.precision``), for every architecture of the
catalog: the table, the emulator's estimates through it (no BF16 tensor cores before Ampere:
an amp-bf16 job there multiplies at the FP32 rate), the estimate's warning, the docs' copy."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gpuscope.cli import main
from gpuscope.cluster.devices import ARCHS, load_catalog
from gpuscope.cluster.precision import effective_precision, precision_table, supports
from gpuscope.emulator import estimate
from gpuscope.emulator.perf import GraphCost
from gpuscope.graphs.opgraph import OpGraph, OpNode
from gpuscope.jobs.spec import JobSpec

#: From the whitepapers, written out independently of the module's table: (FP16, BF16, TF32).
EXPECTED = {"kepler": (False, False, False), "maxwell": (False, False, False),
            "pascal": (False, False, False), "volta": (True, False, False),
            "turing": (True, False, False), "ampere": (True, True, True),
            "ada": (True, True, True), "hopper": (True, True, True)}


def _mm(name: str, m: int, n: int, k: int, phase: str = "forward") -> OpNode:
    return OpNode(name, "aten.mm.default", "matmul", (m, n), m * n, 2, 2.0 * m * n * k,
                  float(2 * (m * k + k * n + m * n)), phase)


def _graph() -> OpGraph:
    """A transformer layer's GEMMs traced under autocast (2-byte tensors)."""
    t, w = 4096, 1024
    nodes = [_mm("qkv", t, 3 * w, w), _mm("out", t, w, w), _mm("ffn1", t, 4 * w, w),
             _mm("ffn2", t, w, 4 * w), _mm("wgrad", w, 4 * w, t, "backward")]
    return OpGraph("layer", nodes, [], {"batch_size": 8})


def _device(arch: str):  # noqa: ANN202 - a DeviceSpec
    return next(d for d in load_catalog().values() if d.arch == arch)


def test_every_catalog_architecture_is_in_the_table() -> None:
    assert set(EXPECTED) == set(ARCHS) >= {d.arch for d in load_catalog().values()}


@pytest.mark.parametrize("arch", ARCHS)
def test_table(arch: str) -> None:
    fp16, bf16, tf32 = EXPECTED[arch]
    assert (supports(arch, "amp-fp16"), supports(arch, "amp-bf16"), supports(arch, "tf32")) \
        == (fp16, bf16, tf32)
    assert supports(arch, "fp32")
    used, why = effective_precision(arch, "amp-bf16")
    assert used == "amp-bf16" and (why is None) == bf16
    if not bf16:
        assert "no BF16 tensor cores before Ampere" in str(why) and "FP32 rate" in str(why)
    used, why = effective_precision(arch, "tf32")
    assert used == ("tf32" if tf32 else "fp32") and (why is None) == tf32


@pytest.mark.parametrize("arch", ARCHS)
def test_emulator_uses_only_the_formats_the_architecture_has(arch: str) -> None:
    dev, cost = _device(arch), GraphCost.from_graph(_graph())

    def step(prec: str, d=dev) -> float:  # noqa: ANN001
        return estimate(JobSpec("gpt2", "wikitext103", "adamw", 8, 1, precision=prec), cost,
                        d).iter_s

    fp16, bf16, _ = EXPECTED[arch]
    if bf16:  # BF16 tensor cores at the FP16 tensor rate
        assert step("amp-bf16") == pytest.approx(step("amp-fp16"))
    else:  # half-size tensors, FP32 math: amp-fp16 on the device without its tensor cores
        assert step("amp-bf16") == pytest.approx(step("amp-fp16", replace(dev, tensor_tflops=0)))
    if fp16 and not bf16:  # Volta, Turing: the FP16 tensor cores do not help bf16 (a GPT-2
        # step of b8 is mostly GEMMs: FP32 math costs at least a third more)
        assert step("amp-bf16") > 1.3 * step("amp-fp16")
    # a catalog entry that claims tensor peaks the architecture lacks does not get them
    fake = replace(dev, tensor_tflops=1000.0, tf32_tflops=500.0)
    if not fp16:
        assert step("amp-fp16", fake) == pytest.approx(step("amp-fp16"))


def test_estimate_warns_once_per_precision(tmp_path: Path, capsys) -> None:
    from gpuscope.graphs import write_graph

    g = write_graph(_graph(), tmp_path / "layer.json")
    assert main(["estimate", "--graph", str(g), "--dataset", "wikitext103", "--batch-size", "8",
                 "--precision", "amp-bf16", "--devices", "v100,t4,a100", "--format", "csv"]) == 0
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("warning:")]
    assert lines == ["warning: amp-bf16 on v100, t4: no BF16 tensor cores before Ampere: "
                     "amp-bf16 keeps half-size tensors but multiplies at the FP32 rate"]


def test_docs_print_the_table() -> None:
    docs = (Path(__file__).resolve().parents[1] / "docs" / "devices.md").read_text()
    assert precision_table() in docs
