"""Seed 004's workloads (models.rnn): shapes and parameter counts worked out by hand."""

from __future__ import annotations

import pytest
import torch

from gpuscope.jobs.spec import JobSpec
from gpuscope.workloads import build_workload, param_count
from gpuscope.workloads.models.rnn import dynamic_rnn

# LSTM(28→h) in PyTorch: 4·(28h + h² + 2h) (two bias vectors); GRU: 3·(...); dense h·10 + 10.
LSTM128 = 4 * (28 * 128 + 128 * 128 + 2 * 128)  # 80,896
PARAMS = {
    "rnn": LSTM128 + 128 * 10 + 10,                                    # 82,186
    "birnn": 2 * LSTM128 + 256 * 10 + 10,                              # 164,362
    "gru": 3 * (28 * 128 + 128 * 128 + 2 * 128) + 128 * 10 + 10,       # 61,962
    "dynamic_rnn": 4 * (28 * 64 + 64 * 64 + 2 * 64) + 64 * 10 + 10,    # 24,714
    # 784·512+512, two heads 512·2+2, decoder 2·512+512 and 512·784+784
    "vae_mlp": 784 * 512 + 512 + 2 * (512 * 2 + 2) + 2 * 512 + 512 + 512 * 784 + 784,  # 807,700
}


@pytest.mark.parametrize("model", list(PARAMS))
def test_rnn_family_shapes_and_params(model: str) -> None:
    ds = "mnist" if model == "vae_mlp" else "mnist_seq"
    wl = build_workload(JobSpec(model, ds, "adam", 4, 1))
    assert param_count(wl) == PARAMS[model]
    batch = wl.sample_batch(seed=1)
    if model == "vae_mlp":
        assert batch[0].shape == (4, 1, 28, 28)
        mean, logvar = wl.modules["encoder"](batch[0])
        assert mean.shape == logvar.shape == (4, 2)
        assert wl.modules["decoder"](mean).shape == (4, 1, 28, 28)
    else:
        assert batch[0].shape == (4, 28, 28)
        assert wl.modules["model"](batch[0]).shape == (4, 10)
    loss = float(wl.train_step(batch))
    assert loss > 0 and loss == loss


def test_dynamic_rnn_reads_each_sequence_at_its_own_end() -> None:
    torch.manual_seed(0)
    net = dynamic_rnn(28, 28, 10)
    x = torch.randn(2, 28, 28)
    x[0, 10:] = 0.0  # sample 0 is 10 steps long, then padding
    short = net(x[:1, :10])  # the same sample without padding
    assert torch.allclose(net(x)[0], short[0], atol=1e-5)
