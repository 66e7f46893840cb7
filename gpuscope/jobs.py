"""JobSpec, the workload catalog's names, and job-queue I/O (CSV and JSON).

A job is a model, a dataset, an optimizer, a batch size and a number of epochs (seed 001
Tables 3–4). ``steps_per_epoch`` shortens a run for profiling; left unset it is the dataset's
size divided by the batch size. A job may carry a user-supplied graph file instead of a
catalog model, and scheduling fields (arrival, due date, tardiness weight).
"""

from __future__ import annotations

import csv
import functools
import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from gpuscope.errors import InputError


class FieldError(InputError):
    """An ``InputError`` about one job field (``field``), so queue readers can name it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


#: Dataset kinds: what one sample is (``DatasetSpec.sample_shape``).
DATASET_KINDS: tuple[str, ...] = ("image", "tokens", "sequence", "tabular", "frames")


@dataclass(frozen=True)
class DatasetSpec:
    """Shape and size of a training dataset (synthetic data with the real shapes).

    One sample by ``kind``: ``image``/``frames`` a ``channels x height x width`` float tensor;
    ``tokens`` ``seq_len`` int64 token ids below ``vocab``; ``sequence`` ``seq_len`` steps of
    ``features`` floats; ``tabular`` ``features`` floats. ``num_classes`` is the label count
    (0: no labels); ``train_size`` samples make one epoch (for ``tokens``: sequences of
    ``seq_len`` tokens).
    """

    name: str
    channels: int
    height: int
    width: int
    num_classes: int
    train_size: int
    kind: str = "image"
    seq_len: int = 0
    vocab: int = 0
    features: int = 0

    @property
    def sample_shape(self) -> tuple[int, ...]:
        """Shape of one sample (no batch dimension)."""
        if self.kind == "tokens":
            return (self.seq_len,)
        if self.kind == "sequence":
            return (self.seq_len, self.features)
        if self.kind == "tabular":
            return (self.features,)
        return (self.channels, self.height, self.width)

    @property
    def integer_input(self) -> bool:
        """True when samples are int64 token ids (``tokens``), else float32."""
        return self.kind == "tokens"

    @property
    def sample_bytes(self) -> int:
        """Bytes of one input sample as the host sends it (int64 ids or float32 values)."""
        return math.prod(self.sample_shape) * (8 if self.integer_input else 4)


def _tokens(name: str, seq: int, vocab: int, train_tokens: int) -> DatasetSpec:
    """A token dataset of ``train_tokens`` tokens cut into sequences of ``seq``."""
    return DatasetSpec(name, 0, 0, 0, 0, train_tokens // seq, "tokens", seq_len=seq, vocab=vocab)


DATASETS: dict[str, DatasetSpec] = {
    "imagenet": DatasetSpec("imagenet", 3, 224, 224, 1000, 1_281_167),
    "cifar10": DatasetSpec("cifar10", 3, 32, 32, 10, 50_000),
    "mnist": DatasetSpec("mnist", 1, 28, 28, 10, 60_000),
    # Merity et al. 2016, Table 1: 2,088,628 training tokens, vocabulary 33,278; sequences of
    # 35 tokens (bptt 35 of pytorch/examples word_language_model, Gavel's LM job).
    "wikitext2": _tokens("wikitext2", 35, 33_278, 2_088_628),
    # Merity et al. 2016, Table 1: 103,227,021 training tokens, vocabulary 267,735; 512-token
    # sequences (a convention of this tool, BERT's maximum length).
    "wikitext103": _tokens("wikitext103", 512, 267_735, 103_227_021),
    # Elliott et al. 2016: 29,000 training sentence pairs; vocabulary 7,853 (German side,
    # tokens seen >= 2 times, the pytorch-seq2seq tutorials' figure); sentences padded to 32
    # tokens (a convention: mean length is ~12 tokens).
    "multi30k": DatasetSpec("multi30k", 0, 0, 0, 0, 29_000, "tokens", seq_len=32, vocab=7_853),
    # WMT16 en-de: ~4.5 M training sentence pairs, shared BPE vocabulary of ~37,000 tokens
    # (Vaswani et al. 2017 §5.1, same training corpora as WMT14); 128-token sequences.
    "wmt16_en_de": DatasetSpec("wmt16_en_de", 0, 0, 0, 0, 4_500_000, "tokens", seq_len=128,
                               vocab=37_000),
    # Harper & Konstan 2015: 20,000,263 ratings by 138,493 users of 26,744 movies; one sample
    # is one user's rating vector over all movies (the autoencoder recommenders' input).
    "ml20m": DatasetSpec("ml20m", 0, 0, 0, 0, 138_493, "tabular", features=26_744),
    # Zhu et al. 2017 (CycleGAN): monet2photo, 1,193 Monet paintings and 7,038 photos at
    # 256x256; an epoch is max(|A|, |B|) = 7,038 pairs, as CycleGAN's unaligned loader counts.
    "monet2photo": DatasetSpec("monet2photo", 3, 256, 256, 0, 7_038),
    # Mnih et al. 2015: 4 stacked 84x84 grey frames; Pong has 6 actions. RL has no dataset:
    # one "epoch" is 1,000,000 environment frames (a convention of this tool).
    "pong": DatasetSpec("pong", 4, 84, 84, 6, 1_000_000, "frames"),
    # MNIST read as 28 steps of 28 features (TensorFlow-Examples' RNN classifiers).
    "mnist_seq": DatasetSpec("mnist_seq", 0, 0, 0, 10, 60_000, "sequence", seq_len=28,
                             features=28),
}

#: Parametric datasets ``KIND:key=value,...``: the keys each kind takes and their defaults.
#: ``samples`` is the training-set size; the ``tokens`` default is WikiText-103's training
#: tokens cut into ``seq``-token sequences (so it follows ``seq``).
DATASET_PARAMS: dict[str, dict[str, int]] = {
    "image": {"c": 3, "h": 224, "w": 224, "classes": 1000, "samples": 1_281_167},
    "frames": {"c": 4, "h": 84, "w": 84, "classes": 6, "samples": 1_000_000},
    "tokens": {"seq": 512, "vocab": 30_522, "samples": 0},
    "sequence": {"steps": 28, "features": 28, "classes": 10, "samples": 60_000},
    "tabular": {"features": 0, "classes": 2, "samples": 100_000},
}
_WIKITEXT103_TOKENS = 103_227_021


def parse_dataset(text: str) -> tuple[str, DatasetSpec]:
    """Resolve a dataset name or parametric string to ``(canonical name, DatasetSpec)``.

    ``imagenet`` (a name in ``DATASETS``) or ``KIND:key=value,...`` with ``KIND`` in
    ``DATASET_PARAMS`` (e.g. ``tokens:seq=512,vocab=30522``, ``sequence:steps=28,features=28``,
    ``tabular:features=100``, ``image:c=3,h=64,w=64``). The canonical name lists, in a fixed
    order, only the keys that differ from the kind's defaults, so equal datasets get equal keys.
    """
    text = text.strip().lower()
    if text in DATASETS:
        return text, DATASETS[text]
    kind, sep, rest = text.partition(":")
    kind = kind.strip().lower()
    if kind not in DATASET_PARAMS:
        raise InputError(
            f"unknown dataset {text!r}; expected one of {', '.join(DATASETS)} or "
            f"KIND:key=value,... with KIND in {', '.join(DATASET_PARAMS)}"
        )
    defaults = DATASET_PARAMS[kind]
    vals = dict(defaults)
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip().lower()
        if not eq or key not in defaults:
            raise InputError(
                f"dataset {text!r}: bad parameter {item!r}; {kind} takes "
                f"{', '.join(k + '=N' for k in defaults)}"
            )
        try:
            v = int(value.replace("_", ""))
        except ValueError:
            raise InputError(f"dataset {text!r}: {key} must be an integer, got {value!r}") from None
        if v < 0 or (v == 0 and key not in ("classes", "samples")):
            raise InputError(f"dataset {text!r}: {key} must be > 0, got {v}")
        vals[key] = v
    if kind == "tabular" and vals["features"] <= 0:
        raise InputError(f"dataset {text!r}: tabular needs features=N")
    changed = [f"{k}={vals[k]}" for k in defaults if vals[k] != defaults[k]]
    name = f"{kind}:{','.join(changed)}" if changed else kind
    n = vals["samples"]
    if kind in ("image", "frames"):
        spec = DatasetSpec(name, vals["c"], vals["h"], vals["w"], vals["classes"],
                           n or defaults["samples"], kind)
    elif kind == "tokens":
        seq = vals["seq"]
        spec = DatasetSpec(name, 0, 0, 0, 0, n or max(1, _WIKITEXT103_TOKENS // seq), kind,
                           seq_len=seq, vocab=vals["vocab"])
    elif kind == "sequence":
        spec = DatasetSpec(name, 0, 0, 0, vals["classes"], n or defaults["samples"], kind,
                           seq_len=vals["steps"], features=vals["features"])
    else:
        spec = DatasetSpec(name, 0, 0, 0, vals["classes"], n or defaults["samples"], kind,
                           features=vals["features"])
    return name, spec


def shape_dataset(shape: str, classes: int | None = None) -> str:
    """The parametric dataset of a user ``--input-shape`` (``3x224x224`` -> image,
    ``28x28`` -> sequence steps x features, ``100`` -> tabular)."""
    try:
        dims = [int(d) for d in shape.lower().replace(",", "x").split("x") if d.strip()]
    except ValueError:
        raise InputError(f"--input-shape {shape!r}: expected integers like 3x224x224") from None
    if not dims or any(d <= 0 for d in dims) or len(dims) > 3:
        raise InputError(f"--input-shape {shape!r}: expected 1 to 3 positive sizes, e.g. 3x224x224")
    cls = "" if classes is None else f",classes={classes}"
    if len(dims) == 3:
        return parse_dataset(f"image:c={dims[0]},h={dims[1]},w={dims[2]}{cls}")[0]
    if len(dims) == 2:
        return parse_dataset(f"sequence:steps={dims[0]},features={dims[1]}{cls}")[0]
    return parse_dataset(f"tabular:features={dims[0]}{cls}")[0]


#: Optimizers: ``sgd`` is SGD with momentum 0.9 (unchanged: the seed jobs' optimizer),
#: ``momentum`` SGD with Nesterov momentum 0.9, ``none`` no update (forward + backward only).
OPTIMIZERS: tuple[str, ...] = ("sgd", "momentum", "adam", "adamw", "rmsprop", "adagrad", "none")
#: Numeric precision of the training step: ``tf32`` is fp32 tensors with TF32 matmuls;
#: ``amp-*`` is automatic mixed precision (autocast) in fp16 (with loss scaling) or bf16.
PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "amp-fp16", "amp-bf16")

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
#: Today's transformer jobs (issue 12): BERT MLM, GPT-2 causal LM, ViT, T5, a Llama decoder.
TRANSFORMERS: tuple[str, ...] = ("bert_base", "bert_large", "gpt2", "gpt2_medium", "gpt2_large",
                                 "vit_b16", "vit_l16", "t5_small", "llama")
MODEL_DATASETS: dict[str, tuple[str, ...]] = {
    **{m: ("imagenet", "cifar10") for m in TABLE3_CNNS + TABLE4_CNNS},
    **{m: ("mnist",) for m in TABLE3_GENERATIVE + TABLE4_GENERATIVE},
    **{m: ("wikitext103",) for m in ("bert_base", "bert_large", "gpt2", "gpt2_medium",
                                     "gpt2_large", "llama")},
    "vit_b16": ("imagenet",), "vit_l16": ("imagenet",), "t5_small": ("wmt16_en_de",),
    # Gavel's job types (issue 11; rec_autoencoder, cyclegan, a3c need kinds not in the catalog)
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
        try:
            n = int(v)
        except ValueError:
            raise InputError(f"llama: {k.strip()} must be an integer, got {v!r}") from None
        if n <= 0:
            raise InputError(f"llama: {k.strip()} must be > 0, got {n}")
        vals[k.strip()] = n
    return base, vals


#: Catalog models that take any dataset of a kind (e.g. a token LM on ``tokens:seq=1024``),
#: besides the named datasets of ``MODEL_DATASETS``.
MODEL_ANY_KIND: dict[str, tuple[str, ...]] = {
    **{m: ("tokens",) for m in ("bert_base", "bert_large", "gpt2", "gpt2_medium", "gpt2_large",
                                "t5_small", "llama")},
    "vit_b16": ("image",), "vit_l16": ("image",),
}


def source_model_name(module: str | None = None, hf: str | None = None) -> str:
    """Default model name of a ``module`` or ``hf`` source: ``examples/my_model.py:build`` ->
    ``my_model.build``; ``gpt2:n_layer=36`` -> ``hf-gpt2``; ``cfg/config.json`` -> ``hf-cfg``."""
    if module:
        path, _, factory = module.rpartition(":")
        stem = Path(path).stem if path.endswith(".py") else path.rsplit(".", 1)[-1]
        return f"{stem}.{factory}"
    if hf:
        if hf.endswith(".json"):
            p = Path(hf)
            return f"hf-{p.parent.name or p.stem}" if p.stem == "config" else f"hf-{p.stem}"
        return f"hf-{hf.split(':', 1)[0].strip()}"
    raise InputError("a model source needs a module or an hf architecture")


def source_digest(module: str | None = None, hf: str | None = None) -> str:
    """sha1 of a model source: its spelling plus the bytes of the file it names (the module's
    ``.py`` file, found without importing it, or the HF ``config.json``), so an edited model
    saved under the same name gets a new graph key, hence a new cache entry and prediction."""
    src = str(module or hf or "")
    path: Path | None = None
    if module:
        target = module.rpartition(":")[0]
        if target.endswith(".py") or "/" in target:
            path = Path(target)
        else:
            import importlib.util

            try:
                spec = importlib.util.find_spec(target)
            except (ImportError, ValueError):
                spec = None
            path = Path(spec.origin) if spec is not None and spec.origin else None
    elif hf and hf.endswith(".json"):
        path = Path(hf)
    content = b""
    if path is not None and path.is_file():
        st = path.stat()
        content = _file_digest(str(path.resolve()), st.st_mtime_ns, st.st_size).encode()
    return hashlib.sha1(src.encode() + b"\0" + content).hexdigest()


@functools.lru_cache(maxsize=256)
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    """sha1 of a file's bytes (memoised per path, mtime and size)."""
    return hashlib.sha1(Path(path).read_bytes()).hexdigest()


def _slug(text: str) -> str:
    """File-name-safe form of a parametric dataset name (``tokens:seq=1024`` -> ``tokens_seq1024``)."""
    return re.sub(r"[^A-Za-z0-9_.]+", "_", text.replace("=", ""))


@dataclass(frozen=True)
class JobSpec:
    """One training job.

    Attributes:
        model: catalog model name (``MODELS``), or any name when ``graph``, ``module`` or
            ``hf`` gives the model.
        dataset: a ``DATASETS`` name or a parametric string (``tokens:seq=512,vocab=30522``,
            see ``parse_dataset``); stored in canonical form.
        optimizer: one of ``OPTIMIZERS``.
        batch_size: samples per forward/backward pass (micro-batch), > 0.
        epochs: passes over the data, > 0.
        steps_per_epoch: optional override (short profiling runs); default dataset size /
            (batch_size x grad_accum) optimizer steps.
        framework: framework the job is written in (``pytorch`` or ``tensorflow``).
        graph: optional path to a user-supplied graph file (JSON, .pb, .pbtxt).
        arrival_s: submission time in seconds from the start of a queue.
        due_s: optional due date in seconds (cost-aware schedulers).
        weight: tardiness weight.
        job_id: identifier within a queue; assigned by the queue readers when absent.
        precision: ``fp32``, ``tf32``, ``amp-fp16`` or ``amp-bf16`` (``PRECISIONS``).
        grad_accum: micro-batches per optimizer step (gradient accumulation), >= 1.
        module: ``path/to/file.py:factory`` or ``package.module:factory`` building the model.
        hf: Hugging Face architecture ``ARCH[:key=value,...]`` or a ``config.json`` path.
    """

    model: str
    dataset: str
    optimizer: str
    batch_size: int
    epochs: int
    steps_per_epoch: int | None = None
    framework: str = "pytorch"
    graph: str | None = None
    arrival_s: float = 0.0
    due_s: float | None = None
    weight: float = 1.0
    job_id: str | None = None
    precision: str = "fp32"
    grad_accum: int = 1
    module: str | None = None
    hf: str | None = None

    def __post_init__(self) -> None:
        try:
            name, spec = parse_dataset(self.dataset)
        except InputError as e:
            raise FieldError("dataset", str(e)) from None
        object.__setattr__(self, "dataset", name)  # canonical form: equal datasets, equal keys
        if self.optimizer not in OPTIMIZERS:
            raise FieldError("optimizer",
                f"unknown optimizer {self.optimizer!r}; expected one of {', '.join(OPTIMIZERS)}"
            )
        if self.precision not in PRECISIONS:
            raise FieldError("precision",
                f"unknown precision {self.precision!r}; expected one of {', '.join(PRECISIONS)}"
            )
        sources = [k for k in ("graph", "module", "hf") if getattr(self, k) is not None]
        if len(sources) > 1:
            raise FieldError("model", f"a job takes one model source, got {' and '.join(sources)}")
        if self.module is not None and (":" not in self.module or not self.module.rpartition(":")[2]):
            raise FieldError("module",
                f"module {self.module!r}: expected path/to/file.py:factory or package.module:factory"
            )
        if not sources:
            base, mparams = model_params(self.model)
            if mparams:  # canonical: only the keys that differ from the defaults, fixed order
                changed = [f"{k}={v}" for k, v in mparams.items() if v != LLAMA_PARAMS[k]]
                object.__setattr__(self, "model", f"{base}:{','.join(changed)}" if changed else base)
            if base not in MODEL_DATASETS:
                raise FieldError("model",
                    f"unknown model {self.model!r}; expected one of {', '.join(MODELS)} "
                    "(or give a graph file, a module or an hf architecture)"
                )
            if (self.dataset not in MODEL_DATASETS[base]
                    and spec.kind not in MODEL_ANY_KIND.get(base, ())):
                kinds = "".join(f" or any {k} dataset" for k in MODEL_ANY_KIND.get(base, ()))
                raise FieldError("dataset",
                    f"model {self.model!r} is defined for "
                    f"{'/'.join(MODEL_DATASETS[base])}{kinds}, not {self.dataset!r}"
                )
        elif not self.model:
            raise FieldError("model", "model name must not be empty")
        for name in ("batch_size", "epochs", "grad_accum"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise FieldError(name, f"{name} must be a positive integer, got {v!r}")
        spe = self.steps_per_epoch
        if spe is not None and (isinstance(spe, bool) or not isinstance(spe, int) or spe <= 0):
            raise FieldError("steps_per_epoch", f"steps_per_epoch must be a positive integer, got {spe!r}")
        if self.framework not in ("pytorch", "tensorflow"):
            raise FieldError("framework", f"unknown framework {self.framework!r}; expected pytorch or tensorflow")
        if not math.isfinite(self.arrival_s) or self.arrival_s < 0:
            raise FieldError("arrival_s", f"arrival_s must be a finite number >= 0, got {self.arrival_s!r}")
        if self.due_s is not None and not math.isfinite(self.due_s):
            raise FieldError("due_s", f"due_s must be finite, got {self.due_s!r}")
        if not math.isfinite(self.weight) or self.weight < 0:
            raise FieldError("weight", f"weight must be a finite number >= 0, got {self.weight!r}")

    # -- derived -----------------------------------------------------------------------------
    @property
    def dataset_spec(self) -> DatasetSpec:
        return parse_dataset(self.dataset)[1]

    @property
    def source(self) -> str:
        """Where the model comes from: ``catalog``, ``graph``, ``module`` or ``hf``."""
        for k in ("graph", "module", "hf"):
            if getattr(self, k) is not None:
                return k
        return "catalog"

    @property
    def samples_per_step(self) -> int:
        """Samples per optimizer step: batch_size x grad_accum."""
        return self.batch_size * self.grad_accum

    @property
    def steps(self) -> int:
        """Optimizer steps per epoch actually run: the override, else
        ceil(dataset size / (batch_size x grad_accum))."""
        if self.steps_per_epoch is not None:
            return self.steps_per_epoch
        return math.ceil(self.dataset_spec.train_size / self.samples_per_step)

    @property
    def total_steps(self) -> int:
        return self.steps * self.epochs

    @property
    def graph_key(self) -> str:
        """Key of the job's computational graph: it depends on model (and its source),
        dataset, optimizer, batch size, precision and gradient accumulation, not on epochs or
        the device (design.md, Encoded graph). Catalog fp32 jobs keep their historic keys."""
        if self.graph:
            base = Path(self.graph).stem
        elif self.module or self.hf:
            base = f"{self.model}.{source_digest(self.module, self.hf)[:8]}"
        else:
            base = _slug(self.model)
        key = f"{base}-{_slug(self.dataset)}-{self.optimizer}-b{self.batch_size}"
        if self.precision != "fp32":
            key += f"-{self.precision}"
        if self.grad_accum != 1:
            key += f"-ga{self.grad_accum}"
        return key

    @property
    def key(self) -> str:
        """Key of the run configuration: graph key plus epochs and steps per epoch."""
        spe = f"-s{self.steps_per_epoch}" if self.steps_per_epoch is not None else ""
        return f"{self.graph_key}-e{self.epochs}{spe}"

    def with_(self, **changes: Any) -> JobSpec:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> JobSpec:
        """Build from a mapping (JSON object, CSV row); converts numeric strings, rejects
        unknown keys with one clear message."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise FieldError(unknown[0], f"unknown job field(s): {', '.join(unknown)}")
        d = dict(d)
        src = {k: str(d[k]).strip() for k in ("module", "hf") if d.get(k) not in (None, "")}
        if src and d.get("model") in (None, ""):
            d["model"] = source_model_name(src.get("module"), src.get("hf"))
        missing = [k for k in ("model", "dataset", "optimizer", "batch_size", "epochs") if k not in d]
        if missing:
            raise FieldError(missing[0], f"job is missing field(s): {', '.join(missing)}")
        kw: dict[str, Any] = {}
        for k, v in d.items():
            if isinstance(v, str):
                v = v.strip()
                if v == "" and k not in ("model", "dataset", "optimizer"):
                    continue
            if k in ("batch_size", "epochs", "steps_per_epoch", "grad_accum"):
                kw[k] = _to_int(k, v)
            elif k in ("arrival_s", "due_s", "weight"):
                kw[k] = _to_float(k, v)
            elif k in ("model", "optimizer", "framework", "precision"):
                kw[k] = str(v).strip().lower()
            elif k == "dataset":
                kw[k] = str(v).strip()
            else:
                kw[k] = None if v is None else str(v)
        return cls(**kw)

    @classmethod
    def from_json_file(cls, path: str | Path) -> JobSpec:
        try:
            d = json.loads(Path(path).read_text())
        except OSError as e:
            raise InputError(f"cannot read job file {path}: {e.strerror}") from None
        except json.JSONDecodeError as e:
            raise InputError(f"job file {path} is not valid JSON: {e.msg} (line {e.lineno})") from None
        if not isinstance(d, dict):
            raise InputError(f"job file {path} must hold one JSON object")
        return cls.from_dict(d)


def _to_int(name: str, v: Any) -> int | None:
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise FieldError(name, f"{name} must be an integer, got {v!r}") from None
    if not f.is_integer():
        raise FieldError(name, f"{name} must be an integer, got {v!r}")
    return int(f)


def _to_float(name: str, v: Any) -> float | None:
    if v is None:
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        raise FieldError(name, f"{name} must be a number, got {v!r}") from None


# -- queues ----------------------------------------------------------------------------------
QUEUE_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(JobSpec))


def _assign_ids(jobs: Sequence[JobSpec]) -> list[JobSpec]:
    width = max(3, len(str(len(jobs))))
    out = [j if j.job_id else j.with_(job_id=f"j{i:0{width}d}") for i, j in enumerate(jobs)]
    counts = Counter(str(j.job_id) for j in out)  # O(n): a 100k-job queue in ms (issue 18)
    dup = sorted(i for i, c in counts.items() if c > 1)
    if dup:
        raise InputError(f"duplicate job_id(s) in queue: {', '.join(map(str, dup[:5]))}")
    return out


def read_queue(path: str | Path) -> list[JobSpec]:
    """Read a job queue from ``.csv`` (one job a row, header = JobSpec fields) or ``.json``
    (a list of job objects, or ``{"jobs": [...]}``). Jobs without ``job_id`` get ``j000``…"""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".json"):
        raise InputError(f"job queue {path}: unsupported extension {suffix!r} (use .csv or .json)")
    from gpuscope.io import read_text
    from gpuscope.limits import check_memory

    text = read_text(path, "job queue")
    # issue 18: parsed rows and JobSpecs take ~10x the file's bytes (a 100k-job CSV: ~100 MB)
    check_memory(f"job queue {path} ({len(text) // 2**20} MB)", 10 * len(text))
    rows: list[dict[str, Any]]
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"job queue {path} is not valid JSON: {e.msg} (line {e.lineno})") from None
        if isinstance(data, dict) and "jobs" in data:
            data = data["jobs"]
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise InputError(f"job queue {path} must be a JSON list of job objects")
        rows = data
    else:
        reader = csv.DictReader(text.splitlines())
        if not reader.fieldnames:
            raise InputError(f"job queue {path} is empty")
        rows = [dict(r) for r in reader]
    jobs = []
    for i, r in enumerate(rows):
        try:
            jobs.append(JobSpec.from_dict(_relative_to(r, path.parent)))
        except InputError as e:
            # name the row (1-based; for CSV also the line), its job_id and the field
            where = f"row {i + 1}" + (f" (line {i + 2})" if suffix == ".csv" else "")
            jid = str(r.get("job_id") or "").strip()
            field = f", field {e.field!r}" if isinstance(e, FieldError) else ""
            raise InputError(f"job queue {path}, {where}{f' job_id {jid}' if jid else ''}"
                             f"{field}: {e}") from None
    if not jobs:
        raise InputError(f"job queue {path} holds no jobs")
    return _assign_ids(jobs)


def _relative_to(row: dict[str, Any], base: Path) -> dict[str, Any]:
    """A row whose relative ``module``/``graph``/``hf`` (config.json) paths that exist next to
    the queue file point there; other spellings (relative to the working directory, package
    modules, architectures) are kept."""
    out = dict(row)
    for key in ("module", "graph", "hf"):
        v = out.get(key)
        if not isinstance(v, str) or not v.strip():
            continue
        v = v.strip()
        path, sep, rest = (v.rpartition(":") if key == "module" else (v, "", ""))
        if key == "hf" and not path.endswith(".json"):
            continue
        if key == "module" and not (path.endswith(".py") or "/" in path):
            continue
        if not Path(path).is_absolute() and (base / path).is_file() and not Path(path).is_file():
            out[key] = str(base / path) + sep + rest
    return out


def write_queue(jobs: Iterable[JobSpec], path: str | Path) -> Path:
    """Write a queue as ``.csv`` or ``.json`` (chosen by the extension)."""
    from gpuscope.io import atomic_write

    path = Path(path)
    jobs = _assign_ids(list(jobs))
    if path.suffix.lower() not in (".csv", ".json"):
        raise InputError(f"{path}: unsupported extension {path.suffix!r} (use .csv or .json)")
    with atomic_write(path, what="job queue") as tmp:
        if path.suffix.lower() == ".json":
            tmp.write_text(json.dumps([j.to_dict() for j in jobs], indent=1) + "\n")
        else:
            with tmp.open("w", newline="") as fh:
                w = csv.DictWriter(fh, fieldnames=list(QUEUE_COLUMNS))
                w.writeheader()
                for j in jobs:
                    w.writerow({k: ("" if v is None else v) for k, v in j.to_dict().items()})
    return path


def table_jobs(table: int = 3, steps_per_epoch: int | None = None) -> list[JobSpec]:
    """The job matrix of seed 001 Table 3 (432 jobs) or Table 4 (128 jobs), in a fixed order."""
    if table == 3:
        cnns, gens = TABLE3_CNNS, TABLE3_GENERATIVE
    elif table == 4:
        cnns, gens = TABLE4_CNNS, TABLE4_GENERATIVE
    else:
        raise InputError(f"seed 001 has job tables 3 and 4, not {table}")
    jobs = []
    for models in (cnns, gens):
        for m in models:
            for ds in MODEL_DATASETS[m]:
                for opt in TABLE_OPTIMIZERS:
                    for bs in TABLE_BATCH_SIZES:
                        for ep in TABLE_EPOCHS:
                            jobs.append(JobSpec(m, ds, opt, bs, ep, steps_per_epoch=steps_per_epoch))
    return _assign_ids(jobs)
