"""The bundled emulated datasets match the code: emulator version, graph
fingerprints of a few re-exported graphs, and one run re-emulated per device."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from gpuscope.cluster.devices import get_device
from gpuscope.core.data import bundled
from gpuscope.emulator import default_params, estimate, synth_trace
from gpuscope.emulator.calibration.bundle import bundle_is_current, graph_fingerprint
from gpuscope.emulator.params import EMULATOR_VERSION
from gpuscope.emulator.perf import GraphCost
from gpuscope.graphs.export import export_graph
from gpuscope.jobs.spec import JobSpec
from gpuscope.profiling import TraceMeta, label_trace
from gpuscope.profiling.labeling import DEFAULT_METHOD

BUNDLES = sorted(p for p in bundled("emulated").iterdir() if (p / "manifest.json").exists())
# vgg11: a graph with dropout (gpuscope.graphs.ops.dropout), which lenet and gan lack
SMALL = [JobSpec("lenet", "cifar10", "sgd", 8, 10, steps_per_epoch=100),
         JobSpec("gan", "mnist", "adam", 16, 10, steps_per_epoch=100),
         JobSpec("vgg11", "cifar10", "sgd", 8, 10, steps_per_epoch=100)]
REGEN = "python benchmarks/emulator_bundle.py"


@pytest.fixture(scope="module")
def graphs() -> dict[str, object]:
    return {j.graph_key: export_graph(j) for j in SMALL}


def test_bundles_exist() -> None:
    assert len(BUNDLES) >= 7


@pytest.mark.parametrize("ds", BUNDLES, ids=lambda p: p.name)
def test_bundle_matches_code(ds: Path, graphs: dict) -> None:
    problems = bundle_is_current(ds, graphs)  # type: ignore[arg-type]
    assert not problems, f"{ds} is stale ({'; '.join(problems)}): run {REGEN}"
    m = json.loads((ds / "manifest.json").read_text())
    assert m["emulator_version"] == EMULATOR_VERSION and len(m["graph_fingerprints"]) == m["graphs"]
    # the labels follow the labeler's default rule (a rule change alone leaves graphs as they were)
    assert m["labeling"]["method"] == DEFAULT_METHOD, f"{ds} labelled with {m['labeling']['method']}: run {REGEN}"
    labels = pd.read_parquet(ds / "labels.parquet").set_index("run_id")
    dev = get_device(str(labels.device.iloc[0]))
    p = default_params()
    for job in SMALL:
        g = graphs[job.graph_key]
        assert m["graph_fingerprints"][job.graph_key] == graph_fingerprint(g)  # type: ignore[arg-type]
        est = estimate(job, GraphCost.from_graph(g, job.batch_size), dev, p)  # type: ignore[arg-type]
        df, exec_s = synth_trace(est, job, dev, p, seed=0)
        row = labels.loc[job.key]
        assert exec_s == pytest.approx(row.exec_time_s, rel=1e-9), f"{ds} is stale: run {REGEN}"
        meta = TraceMeta(run_id=job.key, job=job.to_dict(), device=dev.name, status=est.status,
                         exec_time_s=exec_s, provenance="emulated", mem_total_mb=dev.mem_mb)
        again = label_trace(df, meta)
        assert again["gpu_util_peak"] == pytest.approx(row.gpu_util_peak, abs=0.01)
        assert again["gpu_util_burst_s"] == pytest.approx(row.gpu_util_burst_s, rel=1e-6, abs=1e-6)
