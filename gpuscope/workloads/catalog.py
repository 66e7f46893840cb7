"""The model catalog: name -> builder and kind (seed 001 Tables 3–4)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from torch import nn

from gpuscope.core.errors import InputError
from gpuscope.jobs.spec import (
    MODEL_ANY_KIND,
    MODEL_DATASETS,
    DatasetSpec,
    model_params,
    parse_dataset,
)
from gpuscope.workloads.models import basic as mb
from gpuscope.workloads.models import gavel as mg
from gpuscope.workloads.models import llm as ml
from gpuscope.workloads.models import resnet as mr
from gpuscope.workloads.models import rnn as mrnn
from gpuscope.workloads.models import transformer as mt
from gpuscope.workloads.models.generative import generative
from gpuscope.workloads.models.inception import googlenet, inception3
from gpuscope.workloads.models.inception4 import inception4

#: How a model is trained: a classifier (cross-entropy), a GAN (conditional or not), a VAE, a
#: language model (per-token cross-entropy) or a seq2seq model (source + target tokens).
KINDS: tuple[str, ...] = ("classifier", "gan", "conditional_gan", "vae", "lm", "seq2seq")

Builder = Callable[..., nn.Module]  # (channels, size, classes) or (DatasetSpec, params) -> module


@dataclass(frozen=True)
class CatalogEntry:
    """A catalog model: its training kind and a builder taking (channels, size, classes)."""

    name: str
    kind: str
    builder: Builder
    reference: str
    #: True: ``builder(dataset_spec, params)`` (transformers: sequence length, image size,
    #: vocabulary, configurable sizes) instead of ``builder(channels, size, classes)``.
    takes_spec: bool = False


def _bert(layers: int, dim: int, heads: int, ds: DatasetSpec, p: dict) -> nn.Module:
    return mt.BertMLM(layers, dim, heads)


def _gpt2(layers: int, dim: int, heads: int, ds: DatasetSpec, p: dict) -> nn.Module:
    return mt.GPT2(layers, dim, heads)


def _t5(ds: DatasetSpec, p: dict) -> nn.Module:
    return ml.T5()


def _llama(ds: DatasetSpec, p: dict) -> nn.Module:
    return ml.Llama(ml.LlamaConfig(**p))


def _gavel_lm(ds: DatasetSpec, p: dict) -> nn.Module:
    return mg.BatchFirstLM(ds.vocab or mg.WIKITEXT2_VOCAB)


def _gavel_transformer(ds: DatasetSpec, p: dict) -> nn.Module:
    v = ds.vocab or mg.MULTI30K_VOCAB[0]
    return mg.Seq2SeqTransformer(v, v)


def _vit(layers: int, dim: int, heads: int, ffn: int, ds: DatasetSpec, p: dict) -> nn.Module:
    if ds.height != ds.width or ds.height % 16:
        raise InputError(f"ViT/16 needs square images with a side divisible by 16, "
                         f"got {ds.height}x{ds.width}")
    return mt.ViT(layers, dim, heads, ffn, 16, ds.channels, ds.height, max(1, ds.num_classes))


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
        CatalogEntry("bert_base", "lm", partial(_bert, 12, 768, 12),
                     "Devlin et al. 2019, BERT-base MLM", True),
        CatalogEntry("bert_large", "lm", partial(_bert, 24, 1024, 16),
                     "Devlin et al. 2019, BERT-large MLM", True),
        CatalogEntry("gpt2", "lm", partial(_gpt2, 12, 768, 12), "Radford et al. 2019, 124M", True),
        CatalogEntry("gpt2_medium", "lm", partial(_gpt2, 24, 1024, 16),
                     "Radford et al. 2019, 355M", True),
        CatalogEntry("gpt2_large", "lm", partial(_gpt2, 36, 1280, 20),
                     "Radford et al. 2019, 774M", True),
        CatalogEntry("vit_b16", "classifier", partial(_vit, 12, 768, 12, 3072),
                     "Dosovitskiy et al. 2021, ViT-B/16", True),
        CatalogEntry("vit_l16", "classifier", partial(_vit, 24, 1024, 16, 4096),
                     "Dosovitskiy et al. 2021, ViT-L/16", True),
        CatalogEntry("t5_small", "seq2seq", _t5,
                     "Raffel et al. 2020, T5-small", True),
        CatalogEntry("resnet18", "classifier", lambda c, s, k: mg.resnet18_cifar(k),
                     "Gavel's ResNet-18 (kuangliu/pytorch-cifar)"),
        CatalogEntry("lstm_lm", "lm", _gavel_lm,
                     "Gavel's LM: pytorch/examples word LM, 2-layer LSTM 200", True),
        CatalogEntry("transformer_base", "seq2seq", _gavel_transformer,
                     "Vaswani et al. 2017 base, as Gavel runs it (jadore801120)", True),
        CatalogEntry("llama", "lm", _llama,
                     "Touvron et al. 2023; default TinyLlama-1.1B", True),
        # seed 004 (SpeCon) Table II, after TensorFlow-Examples; see models/rnn.py
        CatalogEntry("rnn", "classifier", mrnn.rnn, "TensorFlow-Examples recurrent_network (LSTM)"),
        CatalogEntry("birnn", "classifier", mrnn.birnn, "TensorFlow-Examples bidirectional_rnn"),
        CatalogEntry("gru", "classifier", mrnn.gru, "TensorFlow-Examples RNN with a GRU cell"),
        CatalogEntry("dynamic_rnn", "classifier", mrnn.dynamic_rnn, "TensorFlow-Examples dynamic_rnn"),
        CatalogEntry("vae_mlp", "vae", mrnn.vae_mlp, "TensorFlow-Examples variational_autoencoder"),
    )
}


def check_model_dataset(model: str, dataset: str) -> None:
    """Raise ``InputError`` unless ``model`` is a catalog model defined for ``dataset``."""
    base = model_params(model)[0]
    if base not in CATALOG:
        raise InputError(f"unknown model {model!r}; expected one of {', '.join(CATALOG)}")
    spec = parse_dataset(dataset)[1]
    if dataset not in MODEL_DATASETS[base] and spec.kind not in MODEL_ANY_KIND.get(base, ()):
        raise InputError(
            f"model {model!r} is defined for {'/'.join(MODEL_DATASETS[base])}, not {dataset!r}"
        )


def build_model(model: str, dataset: str) -> nn.Module:
    """Build catalog ``model`` for ``dataset``'s input shape and class count.

    Classifiers and language models return the network; generative models an
    ``nn.ModuleDict`` of their networks (``generator``/``discriminator`` or
    ``encoder``/``decoder``). Parameters are created on the current default device (use
    ``with torch.device("meta"):`` for a weightless model). ``llama:dim=...,layers=...``
    configures the Llama decoder's size.
    """
    check_model_dataset(model, dataset)
    base, params = model_params(model)
    ds = parse_dataset(dataset)[1]
    entry = CATALOG[base]
    if entry.takes_spec:
        return entry.builder(ds, params)
    if ds.kind == "sequence":  # sequence models take (features, steps, classes)
        return entry.builder(ds.features, ds.seq_len, ds.num_classes)
    assert ds.height == ds.width, "the catalog's datasets are square"
    return entry.builder(ds.channels, ds.height, ds.num_classes)
