"""Training datasets as jobs see them: ``DatasetSpec`` (shape and size of one sample and of an
epoch), the named ``DATASETS`` and parametric ``KIND:key=value,...`` datasets.

Synthetic data with the real shapes: gpuscope never downloads a dataset; a job's step time
depends on the sample's shape, the epoch on the training-set size.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from gpuscope.core.errors import InputError
from gpuscope.core.limits import MAX_INT

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


@functools.lru_cache(maxsize=4096)
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
        if v > MAX_INT:
            raise InputError(f"dataset {text!r}: {key} is out of range (at most {MAX_INT})")
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
