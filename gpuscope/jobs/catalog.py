"""The job catalog's names: optimizers, precisions, catalog models with their datasets and
families, seed 001's job tables (Tables 3–4) and the configurable ``llama``'s sizes.

Split out of ``gpuscope.jobs.spec`` (which re-exports every name, so ``from gpuscope.jobs.spec import
MODELS`` still works); ``JobSpec`` validates against these names.
"""

from __future__ import annotations

from gpuscope.core.errors import InputError
from gpuscope.core.limits import check_number

#: Optimizers: ``sgd`` is SGD with momentum 0.9 (unchanged: the seed jobs' optimizer),
#: ``momentum`` SGD with Nesterov momentum 0.9, ``none`` no update (forward + backward only).
OPTIMIZERS: tuple[str, ...] = ("sgd", "momentum", "adam", "adamw", "rmsprop", "adagrad", "none")
#: Numeric precision of the training step: ``tf32`` is fp32 tensors with TF32 matmuls;
#: ``amp-*`` is automatic mixed precision (autocast) in fp16 (with loss scaling) or bf16.
PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "amp-fp16", "amp-bf16")
#: Frameworks a job may be written in.
FRAMEWORKS: tuple[str, ...] = ("pytorch", "tensorflow")

#: Seed 001 Table 3: the predictor's training workloads.
TABLE3_CNNS: tuple[str, ...] = (
    "vgg11", "vgg16", "vgg19", "lenet", "googlenet", "densenet40_k12", "densenet100_k12",
    "inception3", "inception4", "resnet20", "resnet50", "resnet101",
)
TABLE3_GENERATIVE: tuple[str, ...] = ("dcgan", "conditional_gan", "cvae")
#: Seed 001 Table 4: the scheduler's workload, models the predictor never sees in training.
TABLE4_CNNS: tuple[str, ...] = ("trivial", "alexnet", "resnet32")
TABLE4_GENERATIVE: tuple[str, ...] = ("gan",)
TABLE_BATCH_SIZES: tuple[int, ...] = (8, 16, 32, 64)
TABLE_OPTIMIZERS: tuple[str, ...] = ("sgd", "adam")
TABLE_EPOCHS: tuple[int, ...] = (10, 20)

#: model -> datasets it is defined for.
#: Today's transformer jobs: BERT MLM, GPT-2 causal LM, ViT, T5, a Llama decoder.
TRANSFORMERS: tuple[str, ...] = ("bert_base", "bert_large", "gpt2", "gpt2_medium", "gpt2_large",
                                 "vit_b16", "vit_l16", "t5_small", "llama")
MODEL_DATASETS: dict[str, tuple[str, ...]] = {
    **{m: ("imagenet", "cifar10") for m in TABLE3_CNNS + TABLE4_CNNS},
    **{m: ("mnist",) for m in TABLE3_GENERATIVE + TABLE4_GENERATIVE},
    **{m: ("wikitext103",) for m in ("bert_base", "bert_large", "gpt2", "gpt2_medium",
                                     "gpt2_large", "llama")},
    "vit_b16": ("imagenet",), "vit_l16": ("imagenet",), "t5_small": ("wmt16_en_de",),
    # Gavel's job types (for the emulator's fidelity check; rec_autoencoder, cyclegan, a3c need kinds not in the catalog)
    "resnet18": ("cifar10",), "lstm_lm": ("wikitext2",), "transformer_base": ("multi30k",),
    # seed 004 (SpeCon) workloads: MNIST as 28 steps x 28 features, and the MLP VAE
    **{m: ("mnist_seq",) for m in ("rnn", "birnn", "gru", "dynamic_rnn")},
    "vae_mlp": ("mnist",),
}
MODELS: tuple[str, ...] = tuple(MODEL_DATASETS)

#: Model families, for the split that holds out whole families (seed 001 Table 4's idea).
MODEL_FAMILY: dict[str, str] = {
    "vgg11": "vgg", "vgg16": "vgg", "vgg19": "vgg", "lenet": "lenet", "googlenet": "inception",
    "inception3": "inception", "inception4": "inception", "densenet40_k12": "densenet",
    "densenet100_k12": "densenet", "resnet20": "resnet", "resnet32": "resnet",
    "resnet50": "resnet", "resnet101": "resnet", "dcgan": "gan", "conditional_gan": "gan",
    "gan": "gan", "cvae": "vae", "trivial": "trivial", "alexnet": "alexnet",
    "bert_base": "bert", "bert_large": "bert", "gpt2": "gpt2", "gpt2_medium": "gpt2",
    "gpt2_large": "gpt2", "vit_b16": "vit", "vit_l16": "vit", "t5_small": "t5", "llama": "llama",
    "resnet18": "resnet", "lstm_lm": "lstm", "transformer_base": "transformer",
    "rnn": "rnn", "birnn": "rnn", "gru": "rnn", "dynamic_rnn": "rnn", "vae_mlp": "vae",
}
#: Sizes of the configurable ``llama`` model (``llama:dim=4096,layers=32,...``); defaults are
#: TinyLlama-1.1B's (Zhang et al. 2024): the keys of ``LlamaConfig``.
LLAMA_PARAMS: dict[str, int] = {"dim": 2048, "layers": 22, "heads": 32, "kv_heads": 4,
                                "ffn": 5632, "vocab": 32000, "max_len": 2048}


def model_params(model: str) -> tuple[str, dict[str, int]]:
    """``llama:dim=4096,layers=32`` -> ``("llama", {... all LLAMA_PARAMS ...})``; other names
    -> ``(name, {})``. Unknown keys or non-positive values raise ``InputError``."""
    base, sep, rest = model.partition(":")
    if not sep:
        return model, {}
    if base != "llama":
        raise InputError(f"model {base!r} takes no parameters (only llama:key=value,...)")
    vals = dict(LLAMA_PARAMS)
    for item in filter(None, (x.strip() for x in rest.split(","))):
        k, eq, v = item.partition("=")
        if not eq or k.strip() not in vals:
            raise InputError(f"llama: bad parameter {item!r}; takes "
                             f"{', '.join(k + '=N' for k in LLAMA_PARAMS)}")
        vals[k.strip()] = int(check_number(k.strip(), v, integer=True, low=1, origin="llama"))
    return base, vals


#: Catalog models that take any dataset of a kind (e.g. a token LM on ``tokens:seq=1024``),
#: besides the named datasets of ``MODEL_DATASETS``.
MODEL_ANY_KIND: dict[str, tuple[str, ...]] = {
    **{m: ("tokens",) for m in ("bert_base", "bert_large", "gpt2", "gpt2_medium", "gpt2_large",
                                "t5_small", "llama")},
    "vit_b16": ("image",), "vit_l16": ("image",),
}
