"""A corpus of real architectures for the predictor.

Architectures: every catalog model (seed 001's CNNs and generative models, Gavel's job types,
today's transformers and RNNs, whatever ``gpuscope.jobs.spec.MODEL_DATASETS`` holds) plus Hugging
Face ``transformers`` configurations across vision and text families with size variants
(``HF_FAMILIES``; built from configs with random weights through the job's ``hf`` source —
no network, no weights). Each architecture gets 1–3 seeded configurations (batch size,
precision, optimizer), and each configuration is estimated on every catalog device.

Labels come from the emulator's estimate directly (``exec_time_s``, ``status``), not from
synthesised traces: a corpus row teaches the predictor where the analytic model's inputs can
lie (its domain) and gives the non-physics ablation models many architectures to learn from;
burst/idle/peak labels stay NaN (masked). Provenance: ``emulated``.

The build is resumable: each architecture's rows are written atomically to
``<out>/parts/<arch>.parquet`` and skipped when present (keyed by the architecture's
configurations and ``build_key``: emulator version and source digest); graphs are cached by
``GraphCache``. ``--max-minutes`` stops cleanly between architectures; ``corpus.parquet`` is
assembled from the parts.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gpuscope.core.errors import InputError
from gpuscope.jobs.spec import MODEL_DATASETS, MODEL_FAMILY, JobSpec
from gpuscope.predictor.physics.features import ANALYTIC_COLUMNS, FEATURES, FeatureBuilder

#: Hugging Face families: (model_type, task dataset, size grid {config key: values}, extra
#: fixed keys). Sizes are combined and thinned to ``per_family`` variants.
HF_FAMILIES: dict[str, tuple[str, dict[str, tuple[int, ...]], dict[str, int]]] = {
    "bert": ("tokens:seq=128", {"num_hidden_layers": (2, 4, 6, 8, 12, 24),
                                "hidden_size": (128, 256, 384, 512, 768, 1024)}, {}),
    "roberta": ("tokens:seq=128", {"num_hidden_layers": (2, 4, 6, 8, 12),
                                   "hidden_size": (256, 512, 768, 1024)}, {}),
    "distilbert": ("tokens:seq=128", {"n_layers": (2, 3, 4, 6), "dim": (256, 512, 768)}, {}),
    "albert": ("tokens:seq=128", {"num_hidden_layers": (2, 6, 12),
                                  "hidden_size": (256, 512, 768, 1024)}, {}),
    "electra": ("tokens:seq=128", {"num_hidden_layers": (2, 4, 8, 12),
                                   "hidden_size": (256, 512, 768, 1024)}, {}),
    "gpt2": ("tokens:seq=256", {"n_layer": (2, 4, 6, 8, 12, 24),
                                "n_embd": (256, 384, 512, 768, 1024)}, {}),
    "opt": ("tokens:seq=256", {"num_hidden_layers": (2, 4, 6, 8, 12),
                               "hidden_size": (256, 512, 768, 1024)}, {}),
    "llama": ("tokens:seq=256", {"num_hidden_layers": (2, 3, 4, 6, 8, 12, 16),
                                 "hidden_size": (256, 384, 512, 768, 1024, 2048)}, {}),
    "mistral": ("tokens:seq=256", {"num_hidden_layers": (2, 4, 6, 8, 12),
                                   "hidden_size": (256, 512, 768, 1024)}, {}),
    "qwen2": ("tokens:seq=256", {"num_hidden_layers": (2, 4, 6, 8, 12),
                                 "hidden_size": (256, 512, 768, 1024)}, {}),
    "t5": ("tokens:seq=128", {"num_layers": (2, 4, 6, 8), "d_model": (256, 512, 768, 1024)},
           {}),
    "vit": ("imagenet", {"num_hidden_layers": (2, 4, 6, 8, 12),
                         "hidden_size": (192, 384, 576, 768)}, {}),
    "deit": ("imagenet", {"num_hidden_layers": (4, 6, 8, 12), "hidden_size": (192, 384, 576)},
             {}),
    "swin": ("imagenet", {"embed_dim": (48, 96, 192)}, {}),
    "convnext": ("imagenet", {"patch_size": (4,)}, {}),
    "resnet": ("imagenet", {"embedding_size": (32, 64)}, {}),
    "mobilenet_v2": ("imagenet", {"depth_multiplier": (1,)}, {}),
}


@dataclass(frozen=True)
class Arch:
    """One architecture: an id, its family, its source and its configurations (jobs)."""

    arch: str
    family: str
    source: str
    jobs: tuple[JobSpec, ...]


def _hf_specs(family: str, grid: dict[str, tuple[int, ...]]) -> list[str]:
    keys = sorted(grid)
    out = []
    for vals in itertools.product(*(grid[k] for k in keys)):
        kv = dict(zip(keys, vals, strict=True))
        if "hidden_size" in kv and family not in ("swin", "convnext", "resnet"):
            heads = max(1, kv["hidden_size"] // 64)
            kv["num_attention_heads"] = heads
            if family in ("llama", "mistral", "qwen2"):
                kv["num_key_value_heads"] = heads
                kv["intermediate_size"] = int(kv["hidden_size"] * 8 // 3 // 64 * 64)
            elif family in ("bert", "roberta", "albert", "electra", "vit", "deit"):
                kv["intermediate_size"] = 4 * kv["hidden_size"]
            elif family == "opt":
                kv["ffn_dim"] = 4 * kv["hidden_size"]
        if family == "gpt2":
            kv["n_head"] = max(1, kv["n_embd"] // 64)
        if family == "distilbert":
            kv["n_heads"] = max(1, kv["dim"] // 64)
            kv["hidden_dim"] = 4 * kv["dim"]
        if family == "t5":
            kv["num_heads"] = max(1, kv["d_model"] // 64)
            kv["d_ff"] = 4 * kv["d_model"]
            kv["d_kv"] = 64
        out.append(family + ":" + ",".join(f"{k}={v}" for k, v in sorted(kv.items())))
    return out


def _job_fields() -> set[str]:
    return {f.name for f in fields(JobSpec)}


def _configs(rng: np.random.Generator, n: int, text: bool) -> list[dict[str, Any]]:
    """``n`` seeded (batch size, precision, optimizer) settings."""
    have = _job_fields()
    bss = (4, 8, 16) if text else (16, 32, 64)
    precs = ("fp32", "amp-fp16", "amp-bf16", "tf32") if "precision" in have else ("fp32",)
    from gpuscope.jobs.spec import OPTIMIZERS

    want = ("adamw", "adam", "sgd", "momentum") if text else ("sgd", "momentum", "adam")
    opts: tuple[str, ...] = tuple(o for o in want if o in OPTIMIZERS) or ("sgd",)
    out = []
    for _ in range(n):
        c: dict[str, Any] = {"batch_size": int(rng.choice(bss)), "optimizer": str(rng.choice(opts))}
        if "precision" in have:
            c["precision"] = str(rng.choice(precs))
        out.append(c)
    return out


def architectures(per_arch: int = 1, per_family: int = 32, seed: int = 0,
                  hf: bool = True) -> list[Arch]:
    """The corpus's architectures (module docstring), deterministic under ``seed``."""
    rng = np.random.default_rng(seed)
    out: list[Arch] = []
    for model, dsets in MODEL_DATASETS.items():
        jobs = []
        for c in _configs(rng, per_arch, text=False):
            try:
                jobs.append(JobSpec(model=model, dataset=dsets[0], epochs=1,
                                    steps_per_epoch=100, **c))
            except InputError:  # e.g. an optimizer or precision the model does not take
                jobs.append(JobSpec(model=model, dataset=dsets[0], optimizer="sgd",
                                    batch_size=c["batch_size"], epochs=1, steps_per_epoch=100))
        out.append(Arch(model, MODEL_FAMILY.get(model, model), "catalog", tuple(jobs)))
    if hf and "hf" in _job_fields():
        for fam, (dataset, grid, _fixed) in HF_FAMILIES.items():
            specs = _hf_specs(fam, grid)
            if len(specs) > per_family:
                specs = [specs[i] for i in sorted(rng.choice(len(specs), per_family,
                                                             replace=False))]
            text = not dataset.startswith("image")
            for spec in specs:
                hf_jobs = tuple(JobSpec(model=f"hf-{fam}", dataset=dataset, epochs=1,
                                     steps_per_epoch=100, hf=spec, **c)
                             for c in _configs(rng, per_arch, text))
                out.append(Arch(spec, f"hf-{fam}", "hf", hf_jobs))
    return out


def key_sources() -> list[Path]:
    """The files a corpus row depends on besides its job and the graph (whose code digest is
    hashed separately): the emulator's sources and calibration (``emulator/*.py``,
    ``calibration.json``), the device catalog, and the predictor code that turns an estimate
    into the row's features and analytic labels (with the labeler constants they mirror)."""
    from gpuscope.cluster.devices import DEFAULT_CATALOG

    pkg = Path(__file__).resolve().parents[2]
    emu = pkg / "emulator"
    return (sorted(emu.rglob("*.py")) + sorted(emu.rglob("*.json")) + [DEFAULT_CATALOG]
            + [pkg / "predictor" / "physics" / f for f in ("corpus.py", "features.py",
                                                           "analytic.py", "run_stats.py",
                                                           "targets.py")]
            + [pkg / "profiling" / "labeling.py", pkg / "core" / "targets.py"])


def build_key(sources: Sequence[Path] | None = None) -> str:
    """What a corpus row depends on besides its jobs: the emulator version, the graph cache's
    code digest (tracer, workloads, library versions) and the bytes of ``key_sources()`` —
    so a changed cost model, calibration, catalog, feature or tracer never resumes from stale
    parts even when ``EMULATOR_VERSION`` was not bumped."""
    from gpuscope.graphs.storage import code_digest
    from gpuscope.predictor.physics.model import emulator_version

    h = hashlib.sha1(f"{emulator_version()} {code_digest()}".encode())
    root = Path(__file__).resolve().parents[3]
    for f in (key_sources() if sources is None else sources):
        name = f.resolve().relative_to(root).as_posix() if f.resolve().is_relative_to(root) else f.name
        h.update(name.encode() + f.read_bytes())
    return f"{emulator_version()}+{h.hexdigest()[:10]}"


def _part_name(a: Arch, version: str) -> str:
    h = hashlib.sha256(json.dumps([j.to_dict() for j in a.jobs], sort_keys=True, default=str)
                       .encode() + version.encode()).hexdigest()[:12]
    safe = "".join(ch if ch.isalnum() else "_" for ch in a.arch)[:60]
    return f"{safe}-{h}.parquet"


def arch_rows(a: Arch, devices: Sequence[str], builder: FeatureBuilder) -> pd.DataFrame:
    """Rows of one architecture: every configuration on every device (labels from the
    emulator's estimate)."""
    rows = []
    for job in a.jobs:
        for dev in devices:
            f = builder.row(job, dev)
            ok = f["an_fits"] > 0.5
            rows.append({**{k: v for k, v in job.to_dict().items()
                            if k in ("model", "dataset", "optimizer", "batch_size", "epochs",
                                     "steps_per_epoch", "precision", "hf", "module")},
                         "arch": a.arch, "family": a.family, "source": a.source,
                         "device": dev, "status": "ok" if ok else "oom",
                         "exec_time_s": f["an_exec_s"] if ok else np.nan,
                         "provenance": "emulated", "split": "train", **f})
    return pd.DataFrame(rows)


def build_corpus(out: str | Path, devices: Sequence[str], archs: Sequence[Arch],
                 max_minutes: float | None = None, progress: bool = True,
                 builder: FeatureBuilder | None = None) -> dict[str, Any]:
    """Build (or resume) the corpus under ``out``; returns a summary."""
    from tqdm.auto import tqdm

    from gpuscope.core.io import make_dirs, read_parquet, write_json, write_table
    from gpuscope.predictor.physics.model import emulator_version

    out = Path(out)
    parts = make_dirs(out / "parts")
    builder = builder or FeatureBuilder()
    ver, key = emulator_version(), build_key()
    t0 = time.perf_counter()
    done, failed, skipped = 0, [], 0
    bar = tqdm(archs, desc="corpus", unit="arch", disable=not progress)
    for a in bar:
        p = parts / _part_name(a, key)
        if p.is_file():
            skipped += 1
            continue
        if max_minutes is not None and time.perf_counter() - t0 > 60 * max_minutes:
            break
        try:
            df = arch_rows(a, devices, builder)
        except Exception as e:  # noqa: BLE001 - one architecture that fails to trace
            failed.append(f"{a.arch}: {type(e).__name__}: {str(e)[:100]}")
            continue
        df["emulator_version"] = ver
        write_table(df, p, what="corpus part", check=False)
        done += 1
        bar.set_postfix(done=done, failed=len(failed))
    # rows in the architectures' order: the same corpus whatever the part names' hashes
    files = [f for f in dict.fromkeys(parts / _part_name(a, key) for a in archs) if f.is_file()]
    if not files:
        raise InputError(f"corpus {out}: no architecture could be built")
    corpus = pd.concat([read_parquet(f, "corpus part") for f in files], ignore_index=True)
    write_table(corpus, out / "corpus.parquet", what="corpus", check=False)
    summary = {"architectures": int(corpus["arch"].nunique()),
               "families": int(corpus["family"].nunique()), "rows": len(corpus),
               "devices": sorted(set(corpus["device"])), "built_now": done,
               "resumed": skipped, "failed": failed, "emulator_version": ver,
               "build_key": key,
               "seconds": round(time.perf_counter() - t0, 1), "provenance": "emulated",
               "labels": "exec_time_s and status from gpuscope.emulator.estimate (no traces)",
               "feature_columns": len(FEATURES) + len(ANALYTIC_COLUMNS)}
    write_json(out / "corpus.json", summary, what="corpus summary", check=False)
    return summary
