"""A user's own GPU types: catalog entries written by ``gpuscope devices add`` or by hand.

The user catalog (``devices.user_catalog_path``, or ``--catalog FILE``) holds
``[devices.<name>]`` tables in the bundled catalog's format, layered on it (a bundled name
cannot be reused). An entry may be short: with ``like = "<device>"`` every field it leaves out
comes from that device, the compute peaks (``fp32_tflops``, ``tensor_tflops``,
``tf32_tflops``) and the memory bandwidth scaled by the ratio of SM count x SM clock
(``boost_clock_mhz``; the SM count alone when either device gives no clock), everything else
(architecture, host, price, power) copied. ``sources`` says which figures were given, read
from NVML, scaled or copied:

    [devices.my-gpu]
    like = "a100"
    mem_gb = 48
    sm_count = 84
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

from gpuscope.cluster.devices import OPTIONAL_FIELDS, DeviceSpec
from gpuscope.core.errors import InputError

#: Fields scaled by SM count x clock when taken from ``like``.
SCALED: tuple[str, ...] = ("fp32_tflops", "tensor_tflops", "tf32_tflops", "mem_bw_gbs")
#: Every field an entry may give (``DeviceSpec`` without ``name`` and ``sources``).
FIELDS: dict[str, Any] = {f.name: f.type for f in fields(DeviceSpec)
                          if f.name not in ("name", "sources")}


def scale_factor(entry: dict[str, Any], like: DeviceSpec) -> tuple[float, str]:
    """(SM count x clock of ``entry`` over that of ``like``, how it was computed)."""
    sm = float(entry.get("sm_count", like.sm_count))
    ratio, how = sm / like.sm_count, f"{sm:g}/{like.sm_count} SMs"
    clock = float(entry.get("boost_clock_mhz", 0.0) or 0.0)
    if clock > 0 and like.boost_clock_mhz > 0:
        ratio *= clock / like.boost_clock_mhz
        how += f" x {clock:g}/{like.boost_clock_mhz:g} MHz"
    return ratio, how


def resolve_like(name: str, entry: dict[str, Any], known: dict[str, DeviceSpec],
                 path: Path | str = "user catalog") -> dict[str, Any]:
    """``entry`` with the fields it leaves out taken from its ``like`` device (module
    docstring), and a source for each."""
    like_name = str(entry.get("like", "")).strip().lower()
    if like_name not in known:
        raise InputError(f"{path}: device {name!r} is like {like_name!r}, which is not in the "
                         f"catalog; known: {', '.join(sorted(known))}")
    like = known[like_name]
    ratio, how = scale_factor(entry, like)
    out = {k: v for k, v in entry.items() if k not in ("like", "sources")}
    sources = {str(k): str(v) for k, v in dict(entry.get("sources", {})).items()}
    for k in FIELDS:
        if k in out:
            sources.setdefault(k, "given")
            continue
        if k in OPTIONAL_FIELDS:  # a clock of the like device is not this device's clock
            continue
        v = getattr(like, k)
        if k in SCALED:
            out[k] = round(float(v) * ratio, 3)
            sources[k] = f"like {like_name}: {v:g} scaled by {how}"
        else:
            out[k] = v
            sources[k] = f"like {like_name}: copied"
    out["sources"] = sources
    return out


def parse_spec(text: str | None) -> dict[str, Any]:
    """``key=value,...`` (``--spec``) as catalog fields of their types; an unknown key or a
    value of the wrong type is one ``InputError`` line."""
    out: dict[str, Any] = {}
    for item in (s.strip() for s in (text or "").split(",")):
        if not item:
            continue
        key, sep, val = item.partition("=")
        key = key.strip()
        if not sep or key not in FIELDS:
            raise InputError(f"--spec {item!r}: expected KEY=VALUE with KEY one of "
                             f"{', '.join(FIELDS)}")
        typ = FIELDS[key]
        try:
            out[key] = int(val) if typ in ("int", int) else \
                float(val) if typ in ("float", float) else val.strip()
        except ValueError:
            raise InputError(f"--spec {key}={val}: not a number") from None
    return out


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(str(v))  # a JSON string is a TOML basic string


def to_toml(entries: dict[str, dict[str, Any]], header: str = "") -> str:
    """The user catalog's text: one ``[devices.<name>]`` table (and its ``.sources``) each."""
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    for name, entry in entries.items():
        key = name if name.replace("-", "").replace("_", "").isalnum() else json.dumps(name)
        lines += ["", f"[devices.{key}]"]
        lines += [f"{k} = {_toml_value(v)}" for k, v in entry.items()
                  if k != "sources" and not isinstance(v, dict)]
        src = entry.get("sources") or {}
        if src:
            lines += ["", f"[devices.{key}.sources]"]
            lines += [f"{k} = {_toml_value(v)}" for k, v in src.items()]
    return "\n".join(lines) + "\n"


HEADER = ("gpuscope user device catalog (gpuscope devices add; docs/devices.md), layered on "
          "the bundled one.\nUnits as in the bundled catalog: TFLOP/s dense, mem_gb GiB, GB/s, "
          "MHz, W, $/h.")


def read_entries(path: Path) -> dict[str, dict[str, Any]]:
    """The raw ``[devices.*]`` tables of a user catalog ({} when the file does not exist)."""
    if not path.is_file():
        return {}
    from gpuscope.core.io import read_toml

    devs = read_toml(path, "device catalog").get("devices", {})
    if not isinstance(devs, dict):
        raise InputError(f"{path}: [devices] is not a table")
    return {str(k): dict(v) for k, v in devs.items()}


def new_entry(name: str, like: str | None, given: dict[str, Any],
              nvml_fields: tuple[dict[str, Any], dict[str, str]] | None,
              known: dict[str, DeviceSpec]) -> tuple[dict[str, Any], list[str]]:
    """The entry ``devices add`` writes (every field, with sources) and the fields it guessed
    from ``like`` (scaled or copied), in catalog order. ``given`` (``--spec``) wins over NVML."""
    entry: dict[str, Any] = {}
    sources: dict[str, str] = {}
    if nvml_fields is not None:
        entry.update(nvml_fields[0])
        sources.update(nvml_fields[1])
    entry.update(given)
    sources.update({k: "given (gpuscope devices add --spec)" for k in given})
    missing = [k for k in FIELDS if k not in entry and k not in OPTIONAL_FIELDS]
    if missing and not like:
        raise InputError(f"device {name!r} lacks {', '.join(missing)}: give --like DEVICE (a "
                         "catalog GPU to take them from) or --spec KEY=VALUE,...")
    if like:
        entry = resolve_like(name, {**entry, "like": like, "sources": sources}, known,
                             "devices add")
        entry = {"like": like.strip().lower(), **entry}
    else:
        entry["sources"] = sources
    guessed = [k for k in FIELDS if str(entry["sources"].get(k, "")).startswith("like ")]
    return entry, guessed
