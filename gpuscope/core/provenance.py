"""Provenance and device of label rows, checked wherever labels enter.

Every row of a labels file names its ``device`` and its ``provenance`` (``measured`` or
``emulated``, design.md "Labels"). Readers never take either from one row: a file whose rows
disagree is refused with one :class:`~gpuscope.core.errors.InputError` line, except that a
multi-device reader (``train`` of a physics model on several datasets or a corpus) accepts
several devices, never several provenances. Where a file lacks the ``provenance`` column
(datasets written before it existed), the dataset's manifest or its folder
(``datasets/<provenance>/<device>/``) says it; when neither does, the file is refused.
Training and evaluation also refuse labels without the target columns or without one ``ok``
run (:func:`check_label_rows`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuscope.core.errors import InputError
from gpuscope.core.io import Column
from gpuscope.core.limits import MAX_INT, MAX_SECONDS
from gpuscope.core.targets import PROVENANCES, STATUSES, TARGETS

#: Largest value a label target may hold (seconds, MB, percent: all far below it).
MAX_LABEL: float = 1e12
#: The columns of a labels file (design.md "Labels"), checked wherever labels are read:
#: targets are numbers >= 0, never infinite (NaN: absent), counts positive integers, names
#: text; which columns a reader needs is its own check (:func:`check_label_rows`).
LABEL_COLUMNS: tuple[Column, ...] = (
    *(Column(c, "string", required=False) for c in (
        "run_id", "device", "provenance", "model", "dataset", "optimizer", "precision",
        "graph_key", "split", "status")),
    *(Column(c, "integer", low=1, high=MAX_INT, required=False) for c in (
        "batch_size", "epochs", "steps_per_epoch")),
    *(Column(t, low=0, high=MAX_SECONDS if t == "exec_time_s" else MAX_LABEL,
             required=False) for t in TARGETS),
)

if TYPE_CHECKING:
    import pandas as pd


def _values(labels: pd.DataFrame, col: str, where: str) -> list[str]:
    s = labels[col]
    if s.isna().any():
        raise InputError(f"{where}: {int(s.isna().sum())} row(s) have no {col}")
    vals = s.astype(str).str.strip()
    if (vals == "").any():
        raise InputError(f"{where}: {int((vals == '').sum())} row(s) have an empty {col}")
    return sorted(set(vals))


def _counts(labels: pd.DataFrame, col: str) -> str:
    c = labels[col].astype(str).value_counts()
    return ", ".join(f"{n} {k}" for k, n in sorted(c.items()))


def labels_file(path: str | Path) -> Path:
    """The label table of a dataset: ``path`` when it is a ``.parquet`` file (a corpus), else
    the folder's ``corpus.parquet`` or ``labels.parquet``; one ``InputError`` line when there
    is none (commands check this before they import torch). A name that exists but is no
    regular file (a FIFO, a folder) is returned for the reader to refuse in one line."""
    p = Path(path)
    if p.suffix == ".parquet":
        if not p.exists() and not p.is_symlink():
            raise InputError(f"dataset {p} does not exist")
        return p
    for name in ("corpus.parquet", "labels.parquet"):
        if (p / name).exists() or (p / name).is_symlink():
            return p / name
    raise InputError(f"dataset {p}: labels.parquet is missing")


def manifest_of(folder: str | Path) -> dict[str, Any]:
    """A dataset folder's ``manifest.json`` ({} when absent); one line when unreadable."""
    from gpuscope.core.io import read_json

    p = Path(folder) / "manifest.json"
    if not p.exists():
        return {}
    return dict(read_json(p, "dataset manifest", kind=dict))


def check_labels(
    labels: pd.DataFrame,
    where: str,
    *,
    multi_device: bool = False,
    device: str | None = None,
    provenance: str | None = None,
    unknown_ok: bool = False,
) -> tuple[str, str]:
    """Check that ``labels`` hold one provenance and (unless ``multi_device``) one device.

    Args:
        labels: label rows (design.md Labels); ``device`` is required, ``provenance`` may be
            absent (then ``provenance`` must say it).
        where: what the rows are (a path), for the error line.
        multi_device: several devices are legitimate (multi-device training).
        device: the device the rows must be of (a ``--truth`` folder of that device, a
            manifest), or None.
        provenance: the provenance the rows must be of (the manifest's, the folder's); it is
            the rows' provenance when the file has no ``provenance`` column.

    Returns:
        ``(device, provenance)``; device is ``multi`` for several devices.
    """
    if "device" not in labels.columns:
        raise InputError(f"{where}: labels lack the device column")
    if labels.empty:
        raise InputError(f"{where}: no label rows")
    devs = _values(labels, "device", where)
    if len(devs) > 1 and not multi_device:
        raise InputError(f"{where}: rows of {len(devs)} devices ({_counts(labels, 'device')}); "
                         "a dataset holds one device (train on several datasets for a "
                         "multi-device model)")
    if device is not None and devs != [device]:
        other = [d for d in devs if d != device]
        raise InputError(f"{where}: rows of device {other[0]!r} where {device!r} is expected")
    if "provenance" in labels.columns:
        provs = _values(labels, "provenance", where)
    elif provenance is not None:
        provs = [provenance]
    elif unknown_ok:
        return (devs[0] if len(devs) == 1 else "multi"), "unknown"
    else:
        raise InputError(f"{where}: labels lack the provenance column and no manifest or "
                         "datasets/<provenance>/ folder names it")
    bad = [p for p in provs if p not in PROVENANCES]
    if bad:
        raise InputError(f"{where}: provenance {bad[0]!r} is not one of {', '.join(PROVENANCES)}")
    if len(provs) > 1:
        raise InputError(f"{where}: rows mix provenances ({_counts(labels, 'provenance')}); "
                         "measured and emulated data are never mixed: use one provenance")
    if provenance is not None and provs != [provenance]:
        raise InputError(f"{where}: rows are {provs[0]} but the dataset says {provenance}")
    return (devs[0] if len(devs) == 1 else "multi"), provs[0]


def folder_provenance(folder: str | Path) -> tuple[str | None, str | None]:
    """(device, provenance) a dataset folder declares: its manifest's, else its place
    ``datasets/<provenance>/<device>/`` (None where neither says)."""
    d = Path(folder)
    m = manifest_of(d)
    prov = m.get("provenance") if isinstance(m.get("provenance"), str) else None
    if prov is None and d.parent.name in PROVENANCES:
        prov = d.parent.name
    dev = m.get("device") if isinstance(m.get("device"), str) else None
    return dev, prov


def check_folder_labels(labels: pd.DataFrame, folder: str | Path, *,
                        multi_device: bool = False, unknown_ok: bool = False
                        ) -> tuple[str, str]:
    """:func:`check_labels` of a dataset folder's labels against what the folder declares:
    its manifest's device and provenance (``multi`` manifests excepted), else the
    ``datasets/<provenance>/`` it sits in."""
    dev, prov = folder_provenance(folder)
    m = manifest_of(folder)
    if "provenance" in labels.columns and not isinstance(m.get("provenance"), str):
        prov = None  # the folder's place is only a fallback for files without the column
    return check_labels(labels, f"dataset {folder}", multi_device=multi_device,
                        device=None if multi_device or dev in (None, "multi") else dev,
                        provenance=prov, unknown_ok=unknown_ok)


def one_provenance(provenances: Iterable[str], where: str) -> str:
    """The one provenance of several datasets (multi-device training), or one line."""
    ps = sorted(set(provenances))
    if len(ps) != 1:
        raise InputError(f"{where}: datasets of several provenances ({', '.join(ps)}); "
                         "measured and emulated data are never mixed in one model")
    return ps[0]


def check_label_rows(labels: pd.DataFrame, where: str,
                     targets: tuple[str, ...] = TARGETS) -> None:
    """Refuse labels a model cannot learn from, with one line: ``targets``
    columns missing (renamed?) or no ``ok`` run at all (every row an error). A corpus holds
    only ``exec_time_s`` of the targets (the emulator's estimate)."""
    missing = [t for t in targets if t not in labels.columns]
    if missing:
        raise InputError(f"{where}: labels lack target column(s) {', '.join(missing[:3])}"
                         + (f" (+{len(missing) - 3} more)" if len(missing) > 3 else "")
                         + "; expected the design.md Labels columns")
    if "status" in labels.columns:
        import numpy as np

        bad = ~labels["status"].astype(str).isin(STATUSES)
        if bad.any():
            raise InputError(f"{where}: status {str(labels['status'][bad].iloc[0])[:40]!r} is "
                             f"not one of {', '.join(STATUSES)}")
        ok = labels["status"].astype(str).eq("ok")
        missing_time = (ok & labels["exec_time_s"].isna()).to_numpy(dtype=bool) \
            if "exec_time_s" in labels.columns else np.zeros(0, dtype=bool)
        if missing_time.any():
            i = int(missing_time.argmax())
            raise InputError(f"{where}: row {i + 1} is an ok run without an execution time "
                             "(exec_time_s is NaN)")
    if "status" in labels.columns and not labels["status"].astype(str).eq("ok").any():
        counts = labels["status"].astype(str).value_counts()
        raise InputError(f"{where}: no ok run among {len(labels)} rows ("
                         + ", ".join(f"{n} {k}" for k, n in counts.items())
                         + "); nothing to learn from")


#: What a measured dataset's runs ran on (manifest ``device_kind``): every run on a GPU NVML
#: identified, none (a CPU-only campaign, whatever its device is called), or some of each.
DEVICE_KINDS: tuple[str, ...] = ("gpu", "cpu-only", "mixed", "emulated")


def device_kind(infos: Iterable[dict[str, Any]], provenance: str = "measured") -> str:
    """The :data:`DEVICE_KINDS` entry of runs with these ``device_info`` identities."""
    if provenance != "measured":
        return "emulated"
    kinds = {str(i.get("kind", "")) == "gpu" for i in infos}
    return "mixed" if len(kinds) > 1 else "gpu" if kinds == {True} else "cpu-only"


def folder_device_kind(folder: str | Path) -> str | None:
    """A dataset folder's device kind: its manifest's ``device_kind``, else derived from its
    ``hardware`` (manifests written before the field); None when the folder does not say."""
    m = manifest_of(folder)
    kind = m.get("device_kind")
    if isinstance(kind, str) and kind in DEVICE_KINDS:
        return kind
    hw, prov = m.get("hardware"), m.get("provenance")
    if isinstance(hw, dict) and isinstance(prov, str):
        return device_kind([hw], prov)
    return None


def cpu_only_note(devices: Iterable[str], what: str) -> str:
    """The line that says a model or dataset rests on a CPU-only campaign."""
    names = ", ".join(sorted(set(devices)))
    return (f"note: {what} rests on a CPU-only campaign (NVML saw no GPU) named {names}: "
            "its times are CPU times and its GPU targets were never observed")
