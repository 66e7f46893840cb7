"""The model catalog: name -> builder and kind (seed 001 Tables 3–4)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from torch import nn

from gpuscope.errors import InputError
from gpuscope.jobs import DATASETS, MODEL_DATASETS
from gpuscope.workloads import models_basic as mb
from gpuscope.workloads import models_resnet as mr
from gpuscope.workloads.models_generative import generative
from gpuscope.workloads.models_inception import googlenet, inception3
from gpuscope.workloads.models_inception4 import inception4

#: How a model is trained: a classifier (cross-entropy), a GAN (conditional or not), a VAE.
KINDS: tuple[str, ...] = ("classifier", "gan", "conditional_gan", "vae")

Builder = Callable[[int, int, int], nn.Module]  # (channels, size, num_classes) -> module


@dataclass(frozen=True)
class CatalogEntry:
    """A catalog model: its training kind and a builder taking (channels, size, classes)."""

    name: str
    kind: str
    builder: Builder
    reference: str


CATALOG: dict[str, CatalogEntry] = {
    e.name: e for e in (
        CatalogEntry("vgg11", "classifier", partial(mb.vgg, "vgg11"), "Simonyan & Zisserman 2015, A"),
        CatalogEntry("vgg16", "classifier", partial(mb.vgg, "vgg16"), "Simonyan & Zisserman 2015, D"),
        CatalogEntry("vgg19", "classifier", partial(mb.vgg, "vgg19"), "Simonyan & Zisserman 2015, E"),
        CatalogEntry("lenet", "classifier", mb.lenet, "LeCun et al. 1998, LeNet-5"),
        CatalogEntry("googlenet", "classifier", googlenet, "Szegedy et al. 2015"),
        CatalogEntry("densenet40_k12", "classifier", partial(mr.densenet, 40, 12),
                     "Huang et al. 2017, L=40 k=12"),
        CatalogEntry("densenet100_k12", "classifier", partial(mr.densenet, 100, 12),
                     "Huang et al. 2017, L=100 k=12"),
        CatalogEntry("inception3", "classifier", inception3, "Szegedy et al. 2016"),
        CatalogEntry("inception4", "classifier", inception4, "Szegedy et al. 2017"),
        CatalogEntry("resnet20", "classifier", partial(mr.resnet_cifar, 20), "He et al. 2016 §4.2"),
        CatalogEntry("resnet32", "classifier", partial(mr.resnet_cifar, 32), "He et al. 2016 §4.2"),
        CatalogEntry("resnet50", "classifier", partial(mr.resnet_imagenet, 50), "He et al. 2016"),
        CatalogEntry("resnet101", "classifier", partial(mr.resnet_imagenet, 101), "He et al. 2016"),
        CatalogEntry("trivial", "classifier", mb.trivial, "tf_cnn_benchmarks TrivialModel"),
        CatalogEntry("alexnet", "classifier", mb.alexnet, "Krizhevsky 2014 / cuda-convnet CIFAR"),
        CatalogEntry("dcgan", "gan", partial(generative, "dcgan"), "Radford et al. 2016"),
        CatalogEntry("conditional_gan", "conditional_gan", partial(generative, "conditional_gan"),
                     "Mirza & Osindero 2014"),
        CatalogEntry("gan", "gan", partial(generative, "gan"), "Goodfellow et al. 2014"),
        CatalogEntry("cvae", "vae", partial(generative, "cvae"), "Kingma & Welling 2014"),
    )
}


def check_model_dataset(model: str, dataset: str) -> None:
    """Raise ``InputError`` unless ``model`` is a catalog model defined for ``dataset``."""
    if model not in CATALOG:
        raise InputError(f"unknown model {model!r}; expected one of {', '.join(CATALOG)}")
    if dataset not in MODEL_DATASETS[model]:
        raise InputError(
            f"model {model!r} is defined for {'/'.join(MODEL_DATASETS[model])}, not {dataset!r}"
        )


def build_model(model: str, dataset: str) -> nn.Module:
    """Build catalog ``model`` for ``dataset``'s input shape and class count.

    Classifiers return the network; generative models an ``nn.ModuleDict`` of their networks
    (``generator``/``discriminator`` or ``encoder``/``decoder``). Parameters are created on the
    current default device (use ``with torch.device("meta"):`` for a weightless model).
    """
    check_model_dataset(model, dataset)
    ds = DATASETS[dataset]
    assert ds.height == ds.width, "the catalog's datasets are square"
    return CATALOG[model].builder(ds.channels, ds.height, ds.num_classes)
