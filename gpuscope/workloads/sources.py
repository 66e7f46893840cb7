"""Model sources beyond the catalog: a user's ``nn.Module`` factory and Hugging Face configs.

* ``module``: ``path/to/file.py:factory`` or ``package.module:factory``. ``factory()`` (or
  ``factory(dataset_spec)`` when it takes an argument) returns an ``nn.Module``, or a pair
  ``(module, inputs)`` / a dict ``{"model": module, "inputs": inputs}`` where ``inputs`` is a
  dataset string (``tokens:seq=512,vocab=30522``) or a per-sample shape (``(3, 224, 224)``),
  used when the job names no dataset. The workload kind is ``auto``: the batch is the
  dataset's ``(inputs, labels)`` and the loss is chosen from the output (``Workload._auto_loss``).
* ``hf``: ``ARCH[:key=value,...]`` (a ``transformers`` model type and config overrides, e.g.
  ``gpt2:n_layer=36,n_embd=1280,n_head=20``) or a ``config.json`` path. The model is built from
  the config with random weights (``from_config``; no network, no weights) on the requested
  device (``meta`` for tracing: no memory, so GPT-2 large builds in a second). The head follows
  the dataset: token data -> masked LM for encoder-only types (BERT), causal LM for decoders
  (GPT-2, Llama), seq2seq LM for encoder-decoders (T5); image data -> image classification
  (ViT, Swin, ConvNeXt, ResNet) with ``num_labels`` = the dataset's classes and the image size
  and channels set from the dataset unless overridden.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import torch
from torch import nn
from torch._subclasses.fake_tensor import DataDependentOutputException, unset_fake_temporarily

from gpuscope.core.errors import InputError
from gpuscope.jobs.spec import DatasetSpec, JobSpec, module_file, parse_dataset, shape_dataset

# -- user modules --------------------------------------------------------------------------------


def load_factory(module: str) -> Callable[..., Any]:
    """The factory named by ``path/file.py:factory`` or ``package.module:factory``."""
    target, _, name = module.rpartition(":")
    if not target or not name:
        raise InputError(f"module {module!r}: expected path/to/file.py:factory or pkg.mod:factory")
    if module_file(module) is not None:
        path = Path(target)
        if not path.is_file():
            raise InputError(f"module file {target} does not exist")
        # a fresh module object per load: a file edited between two loads is re-read
        mod_name = f"gpuscope_user_{abs(hash((str(path.resolve()), path.stat().st_mtime_ns)))}"
        spec = importlib.util.spec_from_file_location(mod_name, path)
        if spec is None or spec.loader is None:
            raise InputError(f"module file {target} cannot be imported")
        mod = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(path.resolve().parent))  # sibling imports work as in a script
        try:
            spec.loader.exec_module(mod)
        except (Exception, SystemExit) as e:  # noqa: BLE001 - any error in user code is bad input
            raise InputError(f"module file {target} failed to import: {_why(e)}") from None
        finally:
            sys.path.remove(str(path.resolve().parent))
    else:
        try:
            mod = importlib.import_module(target)
        except (Exception, SystemExit) as e:  # noqa: BLE001
            raise InputError(f"cannot import module {target!r}: {_why(e)}") from None
    fn = getattr(mod, name, None)
    if fn is None or not callable(fn):
        raise InputError(f"{target} has no callable {name!r}")
    return fn


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def _why(e: BaseException) -> str:
    if isinstance(e, SystemExit):
        return f"SystemExit (it called sys.exit({e.code!r}))"
    return f"{type(e).__name__}: {_first_line(e)}"


def call_factory(module: str, dataset: DatasetSpec | None = None) -> tuple[nn.Module, str | None]:
    """Call ``module``'s factory; returns ``(model, dataset string of its input spec or None)``.

    The factory first runs once in a forked child (:func:`gpuscope.workloads.isolate.probe`,
    once per module source): user code that calls ``sys.exit()``, ``os._exit()`` or
    ``os.abort()``, crashes the interpreter or raises is one ``InputError`` line naming the
    module, and this process lives on."""
    from gpuscope.workloads.isolate import probe

    probe(module, lambda: _call(module, dataset))
    return _call(module, dataset)


def _call(module: str, dataset: DatasetSpec | None) -> tuple[nn.Module, str | None]:
    fn = load_factory(module)
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    try:
        out: Any = construct(lambda: fn(dataset) if params else fn())
    except InputError:
        raise
    except (Exception, SystemExit) as e:  # noqa: BLE001 - user code: one line
        raise InputError(f"factory {module} raised {_why(e)}") from None
    inputs: Any = None
    if isinstance(out, dict):
        out, inputs = out.get("model"), out.get("inputs")
    elif isinstance(out, tuple) and len(out) == 2:
        out, inputs = out
    if not isinstance(out, nn.Module):
        raise InputError(f"factory {module} returned {type(out).__name__}, not a torch.nn.Module")
    return out, _inputs_to_dataset(module, inputs)


def _inputs_to_dataset(module: str, inputs: Any) -> str | None:
    if inputs is None:
        return None
    if isinstance(inputs, str):
        return parse_dataset(inputs)[0]
    if isinstance(inputs, (tuple, list, torch.Size)) and all(isinstance(d, int) for d in inputs):
        return shape_dataset("x".join(str(d) for d in inputs))
    raise InputError(f"factory {module}: input spec must be a dataset string or a shape tuple, "
                     f"got {inputs!r}")


def module_dataset(module: str) -> str | None:
    """The dataset a module factory declares (built on the meta device), or None."""
    with torch.device("meta"):
        return call_factory(module)[1]


# -- Hugging Face --------------------------------------------------------------------------------


def _value(text: str) -> Any:
    """A config override's value: JSON (ints, floats, true/false, null, lists), else a string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets (``depths=[2,2],heads=4`` -> two items)."""
    items, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "[("
        depth -= ch in "])"
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    return [s.strip() for s in [*items, cur] if s.strip()]


def parse_hf(spec: str) -> tuple[str, dict[str, Any]]:
    """``gpt2:n_layer=2,n_head=4`` -> ``("gpt2", {"n_layer": 2, "n_head": 4})``; list values
    in brackets (``swin:depths=[2,2,6,2]``)."""
    arch, _, rest = spec.partition(":")
    over: dict[str, Any] = {}
    for item in _split_top(rest):
        k, eq, v = item.partition("=")
        if not eq or not k.strip():
            raise InputError(f"--hf {spec!r}: bad override {item!r}; expected key=value")
        over[k.strip()] = _value(v.strip())
    return arch.strip(), over


def hf_config(spec: str) -> Any:
    """The ``transformers`` config of an ``hf`` source (no network)."""
    try:
        from transformers import CONFIG_MAPPING
    except ImportError:
        raise InputError("--hf needs the transformers package (pip install gpuscope[hf])") from None
    if spec.endswith(".json"):
        from gpuscope.core.io import read_json

        d = read_json(spec, "HF config", kind=dict)
        arch = str(d.get("model_type")) if isinstance(d, dict) else ""
        if arch not in CONFIG_MAPPING:
            raise InputError(f"HF config {spec}: unknown or missing model_type {arch!r}")
        return CONFIG_MAPPING[arch].from_dict(d)
    arch, over = parse_hf(spec)
    if arch not in CONFIG_MAPPING:
        raise InputError(f"unknown Hugging Face architecture {arch!r} (a transformers model "
                         "type such as bert, gpt2, t5, llama, vit, swin, convnext, resnet)")
    cls = CONFIG_MAPPING[arch]
    base = cls()
    known = set(base.to_dict()) | set(getattr(cls, "attribute_map", {}))
    bad = sorted(k for k in over if k not in known and not hasattr(base, k))
    if bad:
        raise InputError(f"{arch} config has no key(s) {', '.join(bad)}")
    return cls(**over)


class HFAdapter(nn.Module):
    """A ``transformers`` model called with positional tensors, returning its logits."""

    def __init__(self, model: nn.Module, task: str) -> None:
        super().__init__()
        self.hf = model
        self.task = task

    def forward(self, x: torch.Tensor, y: torch.Tensor | None = None) -> torch.Tensor:
        if self.task == "image":
            return self.hf(pixel_values=x).logits
        if self.task == "seq2seq":
            return self.hf(input_ids=x, decoder_input_ids=y).logits
        return self.hf(input_ids=x).logits


def hf_task(config: Any, ds: DatasetSpec) -> str:
    """``image``, ``masked``, ``causal`` or ``seq2seq`` for a config and a dataset."""
    from transformers.models.auto import modeling_auto as ma

    arch = config.model_type
    if ds.kind in ("image", "frames"):
        if arch not in ma.MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES:
            raise InputError(f"{arch} is not an image classifier; use a tokens dataset")
        return "image"
    if ds.kind != "tokens":
        raise InputError(f"--hf models take a tokens or image dataset, not {ds.kind}")
    if getattr(config, "is_encoder_decoder", False) and \
            arch in ma.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES:
        return "seq2seq"
    if arch in ma.MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        return "masked"
    if arch in ma.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return "causal"
    raise InputError(f"{arch} has no language-model head in transformers; use an image dataset")


@contextmanager
def params_on_meta() -> Iterator[None]:
    """Modules built inside get their parameters and buffers on the meta device as they are
    registered, while the constructor's own tensor arithmetic runs on the default device;
    at most one parameter is ever materialised (what ``accelerate.init_empty_weights`` does)."""
    reg_param, reg_buffer = nn.Module.register_parameter, nn.Module.register_buffer

    def param(self: nn.Module, name: str, p: nn.Parameter | None) -> None:
        if p is not None:
            p = nn.Parameter(p.to("meta"), requires_grad=p.requires_grad)
        reg_param(self, name, p)

    def buffer(self: nn.Module, name: str, b: torch.Tensor | None, persistent: bool = True) -> None:
        reg_buffer(self, name, None if b is None else b.to("meta"), persistent)

    nn.Module.register_parameter = param  # type: ignore[method-assign,assignment]
    nn.Module.register_buffer = buffer  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        nn.Module.register_parameter = reg_param  # type: ignore[method-assign]
        nn.Module.register_buffer = reg_buffer  # type: ignore[method-assign]


def construct(build: Callable[[], Any]) -> Any:
    """``build()`` on the default device; where that is ``meta`` and the constructor reads a
    tensor's values (ConvNeXt's drop-path schedule: ``torch.linspace(...).tolist()``), which
    meta and fake tensors cannot answer, ``build()`` again on the CPU, outside any fake mode,
    with every parameter and buffer sent to meta as it is registered."""
    try:
        return build()
    except (NotImplementedError, DataDependentOutputException):
        if torch.get_default_device().type != "meta":
            raise
        with unset_fake_temporarily(), torch.device("cpu"), params_on_meta():
            return build()


def build_hf(spec: str, ds: DatasetSpec) -> tuple[nn.Module, str]:
    """Build an ``hf`` source for ``ds`` on the current default device: ``(module, kind)``."""
    import transformers
    from transformers.models.auto import modeling_auto as ma

    config = hf_config(spec)
    task = hf_task(config, ds)
    explicit = set(parse_hf(spec)[1]) if not spec.endswith(".json") else set()
    if task == "image":
        config.num_labels = max(1, ds.num_classes)
        for key, val in (("image_size", ds.height), ("num_channels", ds.channels)):
            if hasattr(config, key) and key not in explicit:
                setattr(config, key, val)
    auto = {"image": transformers.AutoModelForImageClassification,
            "masked": transformers.AutoModelForMaskedLM,
            "causal": transformers.AutoModelForCausalLM,
            "seq2seq": transformers.AutoModelForSeq2SeqLM}[task]
    names = cast(dict[str, Any], {"image": ma.MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES,
             "masked": ma.MODEL_FOR_MASKED_LM_MAPPING_NAMES,
             "causal": ma.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
             "seq2seq": ma.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES}[task]).get(
                 config.model_type)
    if isinstance(names, (tuple, list)) and not getattr(config, "architectures", None):
        # several heads for one model type (DeiT: with and without a distillation teacher):
        # transformers picks through config.architectures, which a fresh config lacks
        config.architectures = [names[0]]
    try:
        model = construct(lambda: auto.from_config(config))
    except (ValueError, TypeError, AttributeError, AssertionError, RuntimeError) as e:
        raise InputError(f"--hf {spec}: cannot build the model: {_first_line(e)}") from None
    kind = {"image": "classifier", "seq2seq": "seq2seq"}.get(task, "lm")
    return HFAdapter(model, task), kind


def build_source_model(job: JobSpec) -> tuple[nn.Module, str]:
    """``(model, workload kind)`` of a ``module`` or ``hf`` job, on the default device."""
    if job.module is not None:
        return call_factory(job.module, job.dataset_spec)[0], "auto"
    if job.hf is not None:
        return build_hf(job.hf, job.dataset_spec)
    raise InputError(f"job {job.key} has no module or hf source")


__all__ = ["HFAdapter", "build_hf", "build_source_model", "call_factory", "hf_config",
           "hf_task", "load_factory", "module_dataset", "parse_hf"]
