"""The research multi-device GNN (``research/gnn_multidevice.py``,
``benchmarks/predictor_multidevice.py``): the device's feature vector appended to u."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpuscope.cluster.devices import get_device
from gpuscope.core.errors import InputError
from gpuscope.predictor.gnn.evaluation import bundle_predict
from gpuscope.predictor.gnn.train import TrainConfig
from gpuscope.testing import synthetic_dataset
from research.gnn_multidevice import combine, device_vector, fit_multidevice, with_device

FAST = dict(epochs=3, steps=2, hidden=16, progress=False, graph_stats=True)


def test_multi_device_model_reads_the_device_spec() -> None:
    v = device_vector("gtx1080")
    assert v[0].item() == pytest.approx(math.log10(get_device("gtx1080").fp32_tflops), rel=1e-6)
    a = synthetic_dataset(n_jobs=12, max_nodes=10, unseen=0, seed=1, device="gtx1080")
    b = synthetic_dataset(n_jobs=12, max_nodes=10, unseen=0, seed=2, device="h100", speed=4.0)
    res = fit_multidevice([a, b], TrainConfig(**FAST))
    assert res.bundle.config.context_dim == a.contexts.shape[1] + len(v)
    slow = bundle_predict(res.bundle, with_device(a, "gtx1080"))
    fast = bundle_predict(res.bundle, with_device(a, "h100"))
    assert not np.allclose(slow, fast)  # only the device spec differs


def test_multidevice_gnn_refuses_mixed_provenance() -> None:
    a = synthetic_dataset(n_jobs=6, max_nodes=8, unseen=0, seed=1, device="gtx1080")
    b = synthetic_dataset(n_jobs=6, max_nodes=8, unseen=0, seed=2, device="h100")
    assert len(combine([a, b])) == len(a) + len(b)  # several devices: legitimate
    b.provenance = "measured"
    with pytest.raises(InputError, match="several provenances"):
        combine([a, b])
