"""Checkpoints: read through the bounded reader, never run code, checked key by key.

:func:`load_torch` reads the file's bytes (a regular file of at most
:data:`MAX_CHECKPOINT_MB`: the bytes and the tensors loaded from them are both in memory),
refuses a zip archive whose members decompress past that bound (a small file that inflates
to gigabytes) and a pickle (the archive's ``data.pkl``, or a whole pre-zip file) over
:data:`MAX_PICKLE_MB` (a pickle of a few kB describes any checkpoint, while each one-byte
opcode can make a Python object of a hundred), then ``torch.load(weights_only=True)``
(tensors and plain containers only, no pickled code). :func:`check_keys` then checks the
loaded dict against the keys and types its format documents: a missing or wrongly typed key
is one line naming the key.
"""

from __future__ import annotations

import io
import math
import zipfile
from collections.abc import Mapping
from typing import Any, Union

from gpuscope.core.errors import CheckpointError, InputError
from gpuscope.core.io.readers import MAX_INPUT_ENV, PathLike, fmt_bytes, input_limit, read_bytes

#: Largest number of members a checkpoint archive may hold.
MAX_MEMBERS: int = 100_000
#: Default bound on a checkpoint file and on its tensors (gpuscope's are under 1 MB).
MAX_CHECKPOINT_MB: float = 64.0
#: Default bound on a checkpoint's pickle (gpuscope's are under 10 kB).
MAX_PICKLE_MB: float = 1.0


def pickle_limit() -> int:
    """Bytes a checkpoint's pickle may hold (``$GPUSCOPE_MAX_INPUT_MB`` when set)."""
    return input_limit(MAX_PICKLE_MB)


def _too_big(what: str, path: PathLike, part: str, size: int, limit: int) -> CheckpointError:
    return CheckpointError(f"{what} {path}: {part} is {fmt_bytes(size)}, over the limit of "
                           f"{fmt_bytes(limit)} (set ${MAX_INPUT_ENV} to change)")

#: A key's expected type: a type, a tuple of types, or a nested spec for a dict.
Spec = Mapping[str, Union[type, tuple[type, ...], "Spec"]]


def load_torch(path: PathLike, what: str = "checkpoint", max_bytes: int | None = None) -> Any:
    """The object in a torch checkpoint, loaded with ``weights_only=True`` from bytes read
    once (so the file checked is the file loaded); ``CheckpointError`` with one line for a
    special, oversized, bomb or corrupt file."""
    limit = input_limit(MAX_CHECKPOINT_MB) if max_bytes is None else max_bytes
    try:
        data = read_bytes(path, what, limit)
    except InputError as e:
        raise CheckpointError(str(e)) from None
    pickled = pickle_limit()
    if data[:4] == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                infos = z.infolist()
        except (zipfile.BadZipFile, OSError, ValueError) as e:
            raise CheckpointError(f"{what} {path} is corrupt ({e})") from None
        total = sum(i.file_size for i in infos)
        if total > limit or len(infos) > MAX_MEMBERS:
            raise CheckpointError(
                f"{what} {path} decompresses to {fmt_bytes(total)} in {len(infos)} members, "
                f"over the limit of {fmt_bytes(limit)} (set ${MAX_INPUT_ENV} to change)")
        pkl = max((i.file_size for i in infos if i.filename.endswith(".pkl")), default=0)
        if pkl > pickled:
            raise _too_big(what, path, "its pickle (data.pkl)", pkl, pickled)
    elif len(data) > pickled:  # a pre-zip checkpoint is one pickle stream
        raise _too_big(what, path, "a checkpoint that is not a zip archive", len(data), pickled)
    import torch

    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - unpickling/zip errors all mean "corrupt"
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CheckpointError(f"{what} {path} is corrupt or not a checkpoint ({msg[:120]})"
                              ) from None


def _type_name(t: type | tuple[type, ...]) -> str:
    names = {dict: "a table (dict)", list: "a list", str: "text", int: "an integer",
             float: "a number", bool: "true/false"}
    ts = t if isinstance(t, tuple) else (t,)
    return " or ".join(names.get(x, x.__name__) for x in ts)


def check_keys(obj: Any, spec: Spec, what: str, prefix: str = "",
               error: type[InputError] = CheckpointError) -> Any:
    """``obj``, refused (``error``, by default ``CheckpointError``) unless it is a dict
    holding every key of ``spec`` with a value of the key's type (a nested spec checks a
    nested dict). ``bool`` is never accepted for a number; an ``int`` is accepted for a
    ``float``, which must be finite."""
    if not isinstance(obj, dict):
        raise error(f"{what}: {prefix.rstrip('.') or 'the file'} must be a table "
                    f"(dict), not {type(obj).__name__}")
    for key, want in spec.items():
        name = f"{prefix}{key}"
        if key not in obj:
            raise error(f"{what}: key {name!r} is missing")
        v = obj[key]
        if isinstance(want, Mapping):
            check_keys(v, want, what, f"{name}.", error)
            continue
        types = want if isinstance(want, tuple) else (want,)
        if float in types and int not in types:
            types = (*types, int)
        ok = isinstance(v, types) and not (isinstance(v, bool) and bool not in types)
        if ok and isinstance(v, float) and not math.isfinite(v):
            raise error(f"{what}: key {name!r} must be a finite number, not {v}")
        if not ok:
            raise error(f"{what}: key {name!r} must be {_type_name(want)}, "
                        f"not {type(v).__name__}")
    return obj
