"""Workload catalog: every model builds and trains, parameter counts, loss, the data pipeline."""

from __future__ import annotations

import math

import pytest
import torch

from gpuscope.core.errors import InputError
from gpuscope.jobs.spec import MODEL_DATASETS, JobSpec
from gpuscope.workloads import CATALOG, build_model, build_workload, param_count

CASES = [(m, ds) for m, dss in MODEL_DATASETS.items() for ds in dss]
#: ImageNet models whose real CPU step on 224×224 inputs fits the test budget. The other
#: ImageNet models (tens of M parameters, GFLOPs per image) step on the "meta" device —
#: the same code path with shapes and no data; every CIFAR-10/MNIST case is a real CPU step.
REAL_IMAGENET = {"lenet", "trivial", "resnet20"}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    # One intra-op thread: on a shared, loaded CPU, OpenMP threads spinning against other
    # processes make small steps ~10x slower.
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _params_on_meta(model: str, dataset: str) -> int:
    with torch.device("meta"):
        return param_count(build_model(model, dataset))


def test_catalog_is_the_job_catalog() -> None:
    assert set(CATALOG) == set(MODEL_DATASETS)


def _snapshot(wl) -> dict[str, list[torch.Tensor]]:
    return {name: [p.detach().clone() for p in m.parameters()] for name, m in wl.modules.items()}


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("model,dataset", CASES)
def test_one_training_step(model: str, dataset: str, optimizer: str) -> None:
    job = JobSpec(model, dataset, optimizer, batch_size=2, epochs=1)
    # transformers (60 M - 1.1 B parameters, 512-token sequences) step on meta, like ImageNet
    real = (dataset != "imagenet" or model in REAL_IMAGENET) and \
        _params_on_meta(model, dataset) < 50_000_000
    device = "cpu" if real else "meta"
    wl = build_workload(job, device)
    batch = wl.sample_batch(2, device)
    assert batch[0].shape == (2, *job.dataset_spec.sample_shape)
    assert len(wl.optimizers) == (2 if wl.kind in ("gan", "conditional_gan") else 1)
    before = _snapshot(wl) if real else None
    loss = wl.train_step(batch)
    assert loss.shape == () and loss.device.type == device and not loss.requires_grad
    if real:
        assert math.isfinite(float(loss))
        after = _snapshot(wl)
        for name in before:  # every network was updated (a GAN steps G and D)
            assert any(not torch.equal(a, b) for a, b in zip(before[name], after[name])), name


# Known parameter counts (ImageNet, 1000 classes unless said), from the papers/reference code:
# torchvision's resnet50/101, vgg11/16/19, alexnet and inception_v3 (without its auxiliary head);
# He et al.'s CIFAR ResNets with option-A shortcuts (0.27 M / 0.46 M).
KNOWN = {
    ("resnet50", "imagenet"): 25_557_032,
    ("resnet101", "imagenet"): 44_549_160,
    ("vgg11", "imagenet"): 132_863_336,
    ("vgg16", "imagenet"): 138_357_544,
    ("vgg19", "imagenet"): 143_667_240,
    ("alexnet", "imagenet"): 61_100_840,
    ("inception3", "imagenet"): 23_834_568,
    ("resnet20", "cifar10"): 269_722,
    ("resnet32", "cifar10"): 464_154,
}


@pytest.mark.parametrize("key", list(KNOWN))
def test_known_parameter_counts(key: tuple[str, str]) -> None:
    assert _params_on_meta(*key) == KNOWN[key]


def _conv(k: int, cin: int, cout: int, bias: bool = True) -> int:
    return k * k * cin * cout + (cout if bias else 0)


def test_parameter_counts_worked_out_by_hand() -> None:
    # LeNet-5 on CIFAR-10: conv 5x5 3->6, 6->16, fc 400-120-84-10.
    lenet = _conv(5, 3, 6) + _conv(5, 6, 16) + 400 * 120 + 120 + 120 * 84 + 84 + 84 * 10 + 10
    assert _params_on_meta("lenet", "cifar10") == lenet == 62_006
    # tf_cnn_benchmarks trivial on ImageNet: 224*224*3 -> 1 -> 4096 -> 1000.
    assert _params_on_meta("trivial", "imagenet") == 150_528 + 1 + 2 * 4096 + 4096 * 1000 + 1000
    # CIFAR AlexNet: conv5x5 3->64, 64->64, fc 8*8*64 -> 384 -> 192 -> 10.
    alex = _conv(5, 3, 64) + _conv(5, 64, 64) + 4096 * 384 + 384 + 384 * 192 + 192 + 1930
    assert _params_on_meta("alexnet", "cifar10") == alex
    # GoogLeNet, Table 1 of Szegedy et al. 2015 (biased convs, 5x5 branches, fc 1024->1000).
    table = [(192, 64, 96, 128, 16, 32, 32), (256, 128, 128, 192, 32, 96, 64),
             (480, 192, 96, 208, 16, 48, 64), (512, 160, 112, 224, 24, 64, 64),
             (512, 128, 128, 256, 24, 64, 64), (512, 112, 144, 288, 32, 64, 64),
             (528, 256, 160, 320, 32, 128, 128), (832, 256, 160, 320, 32, 128, 128),
             (832, 384, 192, 384, 48, 128, 128)]
    g = _conv(7, 3, 64) + _conv(1, 64, 64) + _conv(3, 64, 192) + 1024 * 1000 + 1000
    for cin, c1, r3, c3, r5, c5, pp in table:
        g += _conv(1, cin, c1) + _conv(1, cin, r3) + _conv(3, r3, c3) + _conv(1, cin, r5)
        g += _conv(5, r5, c5) + _conv(1, cin, pp)
    assert _params_on_meta("googlenet", "imagenet") == g


@pytest.mark.parametrize("depth,paper_m", [(40, 1.0), (100, 7.0)])
def test_densenet_parameter_counts(depth: int, paper_m: float) -> None:
    # Closed form for DenseNet (no bottleneck/compression), k=12, CIFAR-10.
    k, c, total = 12, 16, _conv(3, 3, 16, bias=False)
    for block in range(3):
        for _ in range((depth - 4) // 3):
            total += 2 * c + _conv(3, c, k, bias=False)
            c += k
        if block < 2:
            total += 2 * c + _conv(1, c, c, bias=False)
    total += 2 * c + c * 10 + 10
    got = _params_on_meta(f"densenet{depth}_k12", "cifar10")
    assert got == total
    assert round(got / 1e6, 1) == paper_m  # Huang et al. 2017, Table 2


def test_inception4_and_dcgan_parameter_counts() -> None:
    assert round(_params_on_meta("inception4", "imagenet") / 1e6, 1) == 42.7  # Szegedy 2017
    # DCGAN of TensorFlow's tutorial: trainable G = 100*12544 + 2*12544 (BN) + 5*5*(256*128
    # + 128*64 + 64) + 2*(128+64); D = conv 1->64, 64->128 (biased) + dense 6272->1.
    gen = 100 * 12544 + 2 * 12544 + 25 * (256 * 128 + 128 * 64 + 64) + 2 * (128 + 64)
    disc = _conv(5, 1, 64) + _conv(5, 64, 128) + 6272 + 1
    assert _params_on_meta("dcgan", "mnist") == gen + disc


def test_loss_decreases_on_a_fixed_batch() -> None:
    wl = build_workload(JobSpec("resnet20", "cifar10", "adam", batch_size=8, epochs=1))
    batch = wl.sample_batch(8, seed=3)
    losses = [float(wl.train_step(batch)) for _ in range(12)]
    assert losses[-1] < 0.5 * losses[0]


def test_vae_loss_decreases() -> None:
    wl = build_workload(JobSpec("cvae", "mnist", "adam", batch_size=8, epochs=1))
    batch = wl.sample_batch(8, seed=1)
    losses = [float(wl.train_step(batch)) for _ in range(15)]
    assert losses[-1] < losses[0]


def test_sample_batch_shapes_and_determinism() -> None:
    cls = build_workload(JobSpec("lenet", "cifar10", "sgd", 4, 1), "meta")
    x, y = cls.sample_batch(4, "cpu", seed=7)
    x2, y2 = cls.sample_batch(4, "cpu", seed=7)
    assert x.shape == (4, 3, 32, 32) and y.dtype == torch.long and y.shape == (4,)
    assert torch.equal(x, x2) and torch.equal(y, y2)
    assert int(y.min()) >= 0 and int(y.max()) < 10
    (g,) = build_workload(JobSpec("gan", "mnist", "sgd", 4, 1), "meta").sample_batch(3)
    assert g.shape == (3, 1, 28, 28) and float(g.min()) >= -1 and float(g.max()) <= 1
    cg = build_workload(JobSpec("conditional_gan", "mnist", "sgd", 4, 1), "meta")
    assert [t.shape[0] for t in cg.sample_batch(5, "meta")] == [5, 5]
    assert cls.sample_batch()[0].shape[0] == 4  # default: the job's batch size


def test_build_is_deterministic_under_seed() -> None:
    job = JobSpec("resnet20", "cifar10", "sgd", 2, 1)
    a = build_workload(job, seed=5).modules.state_dict()
    b = build_workload(job, seed=5).modules.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_optimizers_are_the_named_ones() -> None:
    sgd = build_workload(JobSpec("gan", "mnist", "sgd", 2, 1), "meta").optimizers
    assert all(isinstance(o, torch.optim.SGD) and o.defaults["momentum"] == 0.9 for o in sgd)
    adam = build_workload(JobSpec("resnet20", "cifar10", "adam", 2, 1), "meta").optimizers
    assert isinstance(adam[0], torch.optim.Adam)


def test_bad_inputs() -> None:
    with pytest.raises(InputError, match="graph file"):
        build_workload(JobSpec("mine", "cifar10", "sgd", 2, 1, graph="g.json"))
    with pytest.raises(InputError, match="unknown model"):
        build_model("resnet999", "cifar10")  # resnet18 is a catalog model now
    with pytest.raises(InputError, match="defined for"):
        build_model("cvae", "imagenet")
