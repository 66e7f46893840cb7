"""The jobs/datasets foundation: dataset kinds, parametric datasets, precision,
gradient accumulation, optimizers, per-kind batches — and that none of it changes the keys or
the traced graphs of the existing catalog jobs."""

from __future__ import annotations

import collections
import hashlib
import json
import math

import pytest
import torch

from gpuscope.core.errors import InputError
from gpuscope.graphs.encoding import CONTEXT_DIM, context_vector
from gpuscope.graphs.export import export_graph
from gpuscope.jobs import (
    DATASETS,
    OPTIMIZERS,
    JobSpec,
    parse_dataset,
    read_queue,
    shape_dataset,
    table_jobs,
    write_queue,
)
from gpuscope.workloads.workload import Workload, make_workload


# -- existing jobs are untouched ---------------------------------------------------------------
def test_existing_keys_are_pinned() -> None:
    assert JobSpec("resnet50", "imagenet", "sgd", 32, 10).key == "resnet50-imagenet-sgd-b32-e10"
    assert JobSpec("cvae", "MNIST", "adam", 16, 20, steps_per_epoch=50).key == \
        "cvae-mnist-adam-b16-e20-s50"
    assert JobSpec("x", "cifar10", "adam", 8, 1, graph="g/my_net.pbtxt").graph_key == \
        "my_net-cifar10-adam-b8"
    assert len(table_jobs(3)) == 432 and len(table_jobs(4)) == 112  # as on main


#: sha1 of (op, shape, dtype bytes, phase) per node + edges, computed on main before the
#: foundation landed (commit 183ca54): the traced graphs of catalog fp32 jobs must not move.
_PINNED = {
    ("lenet", "cifar10", "sgd", 8): ("d19887f34e2e0f67cd053e09eeee0662bd84acc7", 80),
    ("cvae", "mnist", "adam", 16): ("c2b6d2dbaa72f8c6dbb240fb86aa8870f07341a6", 146),
    ("resnet20", "cifar10", "adam", 32): ("8f8125141787554bc829579081321f3062aa98b8", 506),
}


@pytest.mark.parametrize("args", list(_PINNED))
def test_existing_graphs_are_pinned(args: tuple) -> None:
    g = export_graph(JobSpec(*args, epochs=10))
    d = json.dumps([[(n.op, list(n.shape), n.dtype_bytes, n.phase) for n in g.nodes],
                    [list(e) for e in g.edges]])
    assert (hashlib.sha1(d.encode()).hexdigest(), g.num_nodes) == _PINNED[args]
    assert "precision" not in g.meta and "grad_accum" not in g.meta


def test_predictor_context_width_is_frozen() -> None:
    assert CONTEXT_DIM == 4 + 2 + 3
    u = context_vector(JobSpec("x", "tokens:seq=128", "adamw", 8, 1, module="m.py:f"))
    assert u.shape == (CONTEXT_DIM,) and float(u[4:].sum()) == 0.0


# -- datasets ------------------------------------------------------------------------------------
def test_named_datasets_have_real_sizes() -> None:
    assert DATASETS["wikitext2"].train_size == 2_088_628 // 35
    assert DATASETS["wikitext103"].vocab == 267_735
    assert DATASETS["ml20m"].sample_shape == (26_744,)
    assert DATASETS["monet2photo"].sample_shape == (3, 256, 256)
    assert DATASETS["pong"].sample_shape == (4, 84, 84) and DATASETS["pong"].kind == "frames"
    assert DATASETS["mnist_seq"].sample_shape == (28, 28)
    assert DATASETS["imagenet"].sample_bytes == 4 * 3 * 224 * 224
    assert DATASETS["wmt16_en_de"].sample_bytes == 8 * 128


def test_parametric_datasets_are_canonical() -> None:
    name, spec = parse_dataset("Tokens:vocab=30522, seq=1024")
    assert name == "tokens:seq=1024" and spec.sample_shape == (1024,) and spec.vocab == 30_522
    assert spec.train_size == 103_227_021 // 1024  # WikiText-103 tokens in 1024-token sequences
    assert parse_dataset("tokens:seq=512,vocab=30522")[0] == "tokens"  # all defaults
    name, spec = parse_dataset("sequence:steps=50,features=8,classes=3,samples=1000")
    assert spec.sample_shape == (50, 8) and spec.num_classes == 3 and spec.train_size == 1000
    assert parse_dataset("tabular:features=100")[1].sample_shape == (100,)
    assert shape_dataset("3x64x64") == "image:h=64,w=64"
    assert shape_dataset("28x28") == "sequence"
    job = JobSpec("x", "tokens:vocab=30522,seq=1024", "adamw", 4, 1, module="m.py:build")
    assert job.dataset == "tokens:seq=1024"
    assert "tokens_seq1024" in job.graph_key and ":" not in job.graph_key


@pytest.mark.parametrize("bad", ["tokens:seq=0", "tokens:len=5", "tokens:seq=x", "tabular",
                                 "image:c", "speech:rate=16000", "mnist2"])
def test_bad_datasets(bad: str) -> None:
    with pytest.raises(InputError):
        parse_dataset(bad)


@pytest.mark.parametrize("bad", ["3x224x224x5", "0x3", "axb", ""])
def test_bad_input_shapes(bad: str) -> None:
    with pytest.raises(InputError):
        shape_dataset(bad)


# -- job fields ----------------------------------------------------------------------------------
def test_new_fields_validate_and_key() -> None:
    j = JobSpec("resnet20", "cifar10", "sgd", 8, 1, precision="amp-bf16", grad_accum=4)
    assert j.graph_key == "resnet20-cifar10-sgd-b8-amp-bf16-ga4"
    assert j.samples_per_step == 32 and j.steps == math.ceil(50_000 / 32)
    for kw in ({"precision": "fp8"}, {"grad_accum": 0}, {"optimizer": "lamb"},
               {"module": "nofactory.py"}, {"module": "a.py:f", "hf": "gpt2"}):
        with pytest.raises(InputError):
            JobSpec(**{"model": "resnet20", "dataset": "cifar10", "optimizer": "sgd",
                       "batch_size": 8, "epochs": 1, **kw})
    a = JobSpec("net", "cifar10", "sgd", 8, 1, module="a.py:build")
    b = JobSpec("net", "cifar10", "sgd", 8, 1, module="b.py:build")
    assert a.graph_key != b.graph_key and a.source == "module"


def test_queue_round_trip_with_new_fields(tmp_path) -> None:
    jobs = [JobSpec("resnet20", "cifar10", "adamw", 8, 2, precision="amp-fp16", grad_accum=2),
            JobSpec.from_dict({"hf": "gpt2:n_layer=2", "dataset": "tokens:seq=128",
                               "optimizer": "adam", "batch_size": "4", "epochs": "1"})]
    assert jobs[1].model == "hf-gpt2"
    for ext in ("csv", "json"):
        back = read_queue(write_queue(jobs, tmp_path / f"q.{ext}"))
        assert [j.with_(job_id=None) for j in back] == jobs


# -- batches, precision, accumulation, optimizers -------------------------------------------------
@pytest.mark.parametrize("dataset,kind,shapes", [
    ("tokens:seq=16,vocab=100", "lm", [((2, 16), torch.long), ((2, 16), torch.long)]),
    ("tokens:seq=16,vocab=100", "seq2seq", [((2, 16), torch.long)] * 3),
    ("mnist_seq", "classifier", [((2, 28, 28), torch.float32), ((2,), torch.long)]),
    ("tabular:features=7,classes=0", "auto", [((2, 7), torch.float32)]),
    ("pong", "classifier", [((2, 4, 84, 84), torch.float32), ((2,), torch.long)]),
])
@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_sample_batch_per_kind(dataset: str, kind: str, shapes: list, device: str) -> None:
    job = JobSpec("m", dataset, "sgd", 2, 1, module="m.py:f")
    wl = Workload(job=job, kind=kind, modules=torch.nn.ModuleDict())
    batch = wl.sample_batch(device=device)
    assert [(tuple(t.shape), t.dtype) for t in batch] == shapes
    if device == "cpu" and batch[0].dtype == torch.long:
        assert int(batch[0].max()) < 100


def _classes(job: JobSpec) -> collections.Counter:
    return collections.Counter((n.op.split(".")[1], n.dtype_bytes) for n in export_graph(job).nodes
                               if n.op.startswith("aten."))


def test_amp_traces_half_precision_ops() -> None:
    fp32 = _classes(JobSpec("lenet", "cifar10", "sgd", 8, 1))
    bf16 = _classes(JobSpec("lenet", "cifar10", "sgd", 8, 1, precision="amp-bf16"))
    fp16 = _classes(JobSpec("lenet", "cifar10", "sgd", 8, 1, precision="amp-fp16"))
    # LeNet: 2 convs, 3 linears (addmm) in the forward pass
    assert fp32[("convolution", 2)] == 0 and bf16[("convolution", 2)] == 2
    assert bf16[("addmm", 2)] == 3 and fp32[("addmm", 4)] == 3
    assert fp16[("_amp_foreach_non_finite_check_and_unscale_", 4)] == 1
    assert bf16[("_amp_foreach_non_finite_check_and_unscale_", 4)] == 0
    tf32 = JobSpec("lenet", "cifar10", "sgd", 8, 1, precision="tf32")
    assert export_graph(tf32).meta["precision"] == "tf32"
    assert _classes(tf32) == fp32  # TF32 is a matmul mode: same ops, fp32 tensors


def test_grad_accum_repeats_forward_and_backward() -> None:
    one = export_graph(JobSpec("lenet", "cifar10", "sgd", 8, 1))
    three = export_graph(JobSpec("lenet", "cifar10", "sgd", 8, 1, grad_accum=3))
    conv = [sum(n.op == "aten.convolution.default" for n in g.nodes) for g in (one, three)]
    assert conv == [2, 6]
    opt = [sum(n.phase == "optimizer" for n in g.nodes) for g in (one, three)]
    assert opt[0] == opt[1]  # one update per step
    assert three.total_flops() == pytest.approx(3 * one.total_flops(), rel=0.02)


def test_every_optimizer_traces() -> None:
    counts = {}
    for opt in OPTIMIZERS:
        g = export_graph(JobSpec("lenet", "cifar10", opt, 8, 1))
        counts[opt] = sum(n.phase == "optimizer" for n in g.nodes)
    assert counts["none"] == 0 and all(counts[o] > 0 for o in OPTIMIZERS if o != "none")
    assert counts["adamw"] > counts["adam"] > counts["sgd"]
    assert counts["momentum"] > counts["sgd"]  # Nesterov adds an op


def test_real_cpu_step_with_amp_and_accum() -> None:
    job = JobSpec("m", "tabular:features=6,classes=3", "adamw", 4, 1, module="m.py:f",
                  precision="amp-bf16", grad_accum=2)
    torch.manual_seed(0)
    wl = make_workload(job, "auto", torch.nn.ModuleDict({"model": torch.nn.Linear(6, 3)}))
    w0 = wl.modules["model"].weight.detach().clone()
    loss = wl.train_step(wl.sample_batch(device="cpu"))
    assert torch.isfinite(loss) and not torch.equal(w0, wl.modules["model"].weight)
