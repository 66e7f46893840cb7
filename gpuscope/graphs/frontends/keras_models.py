"""Keras versions of the catalog's plain classifiers, so ``framework="tensorflow"`` jobs export
TensorFlow training-step graphs (the graphs Driple and seed 001 §3.1 use).

Same layers and parameter counts as ``gpuscope.workloads`` (PyTorch), channels-last:
``trivial``, ``lenet``, ``alexnet`` (ImageNet), ``vgg11/16/19``, ``resnet20/32`` (option-A
shortcuts), ``resnet50/101`` (bottleneck v1.5). PyTorch's explicit paddings become Keras
``same`` padding (equal output sizes) or ``ZeroPadding2D``; LeNet's adaptive 5×5 max-pool on
ImageNet-size maps is a fixed max-pool with the same output size. Other catalog models have no
Keras version here (``KERAS_MODELS`` lists those that do).
"""

from __future__ import annotations

from typing import Any

from gpuscope.core.errors import InputError
from gpuscope.jobs.spec import DATASETS
from gpuscope.workloads.models.basic import VGG_CFG

#: VGG configurations: output channels of each 3x3 conv, "M" a 2x2 max-pool (the PyTorch
#: catalog's table, so both frameworks build the same networks).
_VGG: dict[str, list[int | str]] = VGG_CFG
KERAS_MODELS: dict[str, tuple[str, ...]] = {
    "trivial": ("imagenet", "cifar10"), "lenet": ("imagenet", "cifar10"),
    "alexnet": ("imagenet",), "vgg11": ("imagenet", "cifar10"),
    "vgg16": ("imagenet", "cifar10"), "vgg19": ("imagenet", "cifar10"),
    "resnet20": ("imagenet", "cifar10"), "resnet32": ("imagenet", "cifar10"),
    "resnet50": ("imagenet", "cifar10"), "resnet101": ("imagenet", "cifar10"),
}


def _conv_bn(L: Any, x: Any, c: int, k: int, s: int = 1, relu: bool = True) -> Any:
    x = L.Conv2D(c, k, strides=s, padding="same", use_bias=False)(x)
    x = L.BatchNormalization(epsilon=1e-5, momentum=0.9)(x)
    return L.ReLU()(x) if relu else x


def _stem(L: Any, x: Any, c: int, size: int) -> Any:
    if size < 64:
        return _conv_bn(L, x, c, 3)
    x = _conv_bn(L, x, c, 7, 2)  # He et al. 2016 Table 1 stem
    return L.MaxPooling2D(3, 2, padding="same")(x)


def _basic_a(tf: Any, L: Any, x: Any, cin: int, cout: int, stride: int) -> Any:
    y = _conv_bn(L, x, cout, 3, stride)
    y = _conv_bn(L, y, cout, 3, 1, relu=False)
    sc = x
    if stride != 1 or cin != cout:
        pad = cout - cin
        sc = L.Lambda(lambda t: tf.pad(t[:, ::stride, ::stride, :],
                                       [[0, 0], [0, 0], [0, 0], [pad // 2, pad - pad // 2]]))(x)
    return L.ReLU()(L.Add()([y, sc]))


def _bottleneck(L: Any, x: Any, cin: int, width: int, stride: int) -> Any:
    cout = 4 * width
    y = _conv_bn(L, x, width, 1)
    y = _conv_bn(L, y, width, 3, stride)
    y = _conv_bn(L, y, cout, 1, relu=False)
    sc = _conv_bn(L, x, cout, 1, stride, relu=False) if (stride != 1 or cin != cout) else x
    return L.ReLU()(L.Add()([y, sc]))


def keras_model(model: str, dataset: str) -> Any:
    """The Keras version of catalog ``model`` for ``dataset`` (see the module docstring)."""
    if model not in KERAS_MODELS or dataset not in KERAS_MODELS[model]:
        have = ", ".join(f"{m} ({'/'.join(d)})" for m, d in KERAS_MODELS.items())
        raise InputError(f"no TensorFlow (Keras) version of {model} on {dataset}; "
                         f"available: {have}")
    from gpuscope.graphs.frontends.tensorflow import _tf

    tf = _tf()
    if tf is None:
        raise InputError("framework tensorflow needs tensorflow (pip install 'gpuscope[tf]')")
    L = tf.keras.layers
    ds = DATASETS[dataset]
    size, ncls = ds.height, ds.num_classes
    inp = tf.keras.Input((size, size, ds.channels))
    x = inp
    if model == "trivial":
        x = L.Flatten()(x)
        x = L.Dense(1, activation="relu")(x)
        x = L.Dense(4096, activation="relu")(x)
    elif model == "lenet":
        for c in (6, 16):
            x = L.MaxPooling2D(2)(L.Conv2D(c, 5, activation="relu")(x))
        side = int(x.shape[1])
        if side > 5:  # torch's AdaptiveMaxPool2d(5): same 5x5 output size
            x = L.MaxPooling2D(side // 5, side // 5)(x)
        x = L.Flatten()(x)
        x = L.Dense(120, activation="relu")(x)
        x = L.Dense(84, activation="relu")(x)
    elif model == "alexnet":
        x = L.Conv2D(64, 11, 4, activation="relu")(L.ZeroPadding2D(2)(x))
        x = L.MaxPooling2D(3, 2)(x)
        x = L.MaxPooling2D(3, 2)(L.Conv2D(192, 5, padding="same", activation="relu")(x))
        for c in (384, 256, 256):
            x = L.Conv2D(c, 3, padding="same", activation="relu")(x)
        x = L.Flatten()(L.MaxPooling2D(3, 2)(x))
        for _ in range(2):
            x = L.Dense(4096, activation="relu")(L.Dropout(0.5)(x))
    elif model in _VGG:
        for v in _VGG[model]:
            x = L.MaxPooling2D(2)(x) if v == "M" else L.Conv2D(int(v), 3, padding="same", activation="relu")(x)
        x = L.Flatten()(x)
        for _ in range(2):
            x = L.Dropout(0.5)(L.Dense(4096, activation="relu")(x))
    elif model in ("resnet20", "resnet32"):
        n = (int(model[6:]) - 2) // 6
        x, cin = _stem(L, x, 16, size), 16
        for stage, width in enumerate((16, 32, 64)):
            for i in range(n):
                x = _basic_a(tf, L, x, cin, width, 2 if (i == 0 and stage > 0) else 1)
                cin = width
        x = L.GlobalAveragePooling2D()(x)
    else:  # resnet50 / resnet101
        blocks = {"resnet50": (3, 4, 6, 3), "resnet101": (3, 4, 23, 3)}[model]
        x, cin = _stem(L, x, 64, 224), 64  # the ImageNet stem at every input size
        for stage, (n, width) in enumerate(zip(blocks, (64, 128, 256, 512))):
            for i in range(n):
                x = _bottleneck(L, x, cin, width, 2 if (i == 0 and stage > 0) else 1)
                cin = 4 * width
        x = L.GlobalAveragePooling2D()(x)
    out = L.Dense(ncls)(x)
    return tf.keras.Model(inp, out, name=model)
