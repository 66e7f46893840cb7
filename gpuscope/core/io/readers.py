"""Reading user files: every input a command takes goes through :func:`check_input_file`.

Before a file is opened it must be a regular file (a FIFO would block forever, ``/dev/zero``
never ends, a socket or device is no input) no larger than a bound (:func:`input_limit`), and
it is opened non-blocking so that a FIFO swapped in after the check cannot hang the reader
either. Text must be UTF-8 without NUL bytes (a leading byte-order mark is dropped); JSON and
TOML documents are refused when nested deeper than :data:`MAX_DEPTH`. Every refusal is one
:class:`~gpuscope.core.errors.InputError` line naming the file and the problem.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import zlib
from pathlib import Path
from typing import Any

from gpuscope.core.errors import InputError
from gpuscope.core.limits import env_bytes

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PathLike = str | os.PathLike[str]

#: Environment variable overriding the size bound of every input file, in MB.
MAX_INPUT_ENV: str = "GPUSCOPE_MAX_INPUT_MB"
#: Default bound on one input file (a 10**6-job queue is about 80 MB of CSV).
DEFAULT_MAX_INPUT_MB: float = 256.0
#: Default bound on a TOML document (campaigns, clusters, catalogs are a few kB).
MAX_TOML_MB: float = 16.0
#: Deepest nesting a JSON or TOML document may have (gpuscope's own files nest 5 levels).
MAX_DEPTH: int = 64
_CHUNK = 1 << 20


def input_limit(default_mb: float = DEFAULT_MAX_INPUT_MB) -> int:
    """Bytes one input file may hold: ``$GPUSCOPE_MAX_INPUT_MB`` when set, else ``default_mb``."""
    limit = env_bytes(MAX_INPUT_ENV)
    return int(default_mb * 2**20) if limit is None else limit


def why(e: OSError) -> str:
    """The human part of an OSError (``No space left on device``, ``Permission denied``)."""
    return e.strerror or type(e).__name__


def fmt_bytes(n: float) -> str:
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("kB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def file_kind(mode: int) -> str:
    """``a FIFO``, ``a character device``, ... for a non-regular ``st_mode``."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _limit_line(what: str, p: Path, size: float, limit: int) -> str:
    return (f"{what} {p} is {fmt_bytes(size)}, over the limit of {fmt_bytes(limit)} for one "
            f"input file (set ${MAX_INPUT_ENV} to change)")


def check_input_file(path: PathLike, what: str = "file", max_bytes: int | None = None) -> Path:
    """``path`` as a Path, refused unless it is an existing regular file of at most
    ``max_bytes`` (default :func:`input_limit`). Nothing is opened."""
    p = Path(path)
    if str(path) == "":
        raise InputError(f"{what} path is empty")
    try:
        st = os.stat(p)
    except (FileNotFoundError, NotADirectoryError):
        broken = " (a broken symbolic link)" if p.is_symlink() else ""
        raise InputError(f"cannot read {what} {p}: no such file{broken}") from None
    except OSError as e:  # a symlink loop (ELOOP), a name too long, permission on a parent
        raise InputError(f"cannot read {what} {p}: {why(e)}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"cannot read {what} {p}: it is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"cannot read {what} {p}: it is {file_kind(st.st_mode)}, "
                         "not a regular file")
    limit = input_limit() if max_bytes is None else max_bytes
    if st.st_size > limit:
        raise InputError(_limit_line(what, p, st.st_size, limit))
    return p


def read_bytes(path: PathLike, what: str = "file", max_bytes: int | None = None, *,
               text: bool = False) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (see :func:`check_input_file`).

    The file is opened non-blocking and checked again on its descriptor; it is read in
    chunks up to the bound, so a file that grows (or lies about its size) still stops there.
    ``text=True`` refuses a NUL byte as soon as a chunk holds one (a sparse file of zeros
    fails after the first MB, not after its whole size)."""
    p = check_input_file(path, what, max_bytes)
    limit = input_limit() if max_bytes is None else max_bytes
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise InputError(f"cannot read {what} {p}: {why(e)}") from None
    chunks: list[bytes] = []
    size = 0
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped for a FIFO or device after the check
            raise InputError(f"cannot read {what} {p}: it is {file_kind(st.st_mode)}, "
                             "not a regular file")
        while True:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                raise InputError(_limit_line(what, p, size, limit))
            if text and b"\x00" in chunk:
                at = size - len(chunk) + chunk.index(b"\x00")
                raise InputError(f"{what} {p} is binary, not text (a NUL byte at offset {at})")
            chunks.append(chunk)
    except OSError as e:
        raise InputError(f"cannot read {what} {p}: {why(e)}") from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def decode_text(data: bytes, what: str, path: PathLike) -> str:
    """UTF-8 ``data`` as text (a leading byte-order mark dropped); binary -> ``InputError``."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"{what} {path} is not UTF-8 text (byte {e.start})") from None


def read_text(path: PathLike, what: str = "file", max_bytes: int | None = None, *,
              lenient: bool = False) -> str:
    """The UTF-8 text of a file; missing, special, too large, binary -> ``InputError``.
    ``.gz`` files are decompressed (at most ``max_bytes`` of text either way). ``lenient``
    (logs written by other programs): undecodable bytes become U+FFFD, NUL bytes pass."""
    if lenient:
        return read_bytes(path, what, max_bytes).decode("utf-8", errors="replace")
    if str(path).endswith(".gz"):
        return decode_text(read_gzip(path, what, max_bytes), what, path)
    return decode_text(read_bytes(path, what, max_bytes, text=True), what, path)


def read_gzip(path: PathLike, what: str = "file", max_bytes: int | None = None) -> bytes:
    """The decompressed bytes of a gzip file, refused once they pass ``max_bytes`` (a small
    file that inflates to gigabytes stops at the bound)."""
    limit = input_limit() if max_bytes is None else max_bytes
    raw = read_bytes(path, what, limit)
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(raw, limit + 1)
    except zlib.error as e:
        raise InputError(f"{what} {path} is not a valid gzip file: {e}") from None
    if len(out) > limit or d.unconsumed_tail:
        raise InputError(f"{what} {path} decompresses to over {fmt_bytes(limit)}, the limit "
                         f"for one input file (set ${MAX_INPUT_ENV} to change)")
    if not d.eof:
        raise InputError(f"{what} {path} is a truncated gzip file")
    if b"\x00" in out:
        raise InputError(f"{what} {path} is binary, not text")
    return out


def depth_of(obj: Any, limit: int = MAX_DEPTH) -> int:
    """Nesting depth of lists and dicts in ``obj``, counted without recursion and stopped
    once it passes ``limit``."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        o, d = stack.pop()
        if isinstance(o, dict):
            children: Any = o.values()
        elif isinstance(o, list):
            children = o
        else:
            continue
        deepest = max(deepest, d)
        if deepest > limit:
            return deepest
        stack.extend((c, d + 1) for c in children if isinstance(c, (dict, list)))
    return deepest


_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def json_depth(text: str | bytes) -> int:
    """Deepest nesting of JSON text's arrays and objects, read off the text at C speed
    (strings removed, brackets kept, a running sum), before anything parses it."""
    import numpy as np

    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    brackets = _JSON_STRING.sub(b"", raw).translate(None, _NOT_BRACKET)
    if not brackets:
        return 0
    b = np.frombuffer(brackets, dtype=np.uint8)
    step = np.where((b == ord("[")) | (b == ord("{")), 1, -1)
    return int(np.cumsum(step).max())


def check_depth(obj: Any, what: str, path: PathLike) -> Any:
    """``obj``, refused when nested deeper than :data:`MAX_DEPTH`."""
    if depth_of(obj) > MAX_DEPTH:
        raise InputError(f"{what} {path} is nested deeper than {MAX_DEPTH} levels")
    return obj


def _json_kind(t: type) -> str:
    return {dict: "object", list: "array", str: "string", int: "number", float: "number",
            bool: "boolean", type(None): "null"}.get(t, t.__name__)


def parse_json(text: str | bytes, what: str, path: PathLike, kind: type | None = None) -> Any:
    """Parsed JSON text (already read): malformed, too deep, or a top level not of type
    ``kind`` -> ``InputError``."""
    if json_depth(text) > MAX_DEPTH:
        raise InputError(f"{what} {path} is nested deeper than {MAX_DEPTH} levels")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{what} {path} is not valid JSON: {e.msg} (line {e.lineno})") from None
    except RecursionError:
        raise InputError(f"{what} {path} is nested deeper than {MAX_DEPTH} levels") from None
    if kind is not None and not isinstance(data, kind):
        raise InputError(f"{what} {path} must hold a JSON {_json_kind(kind)}, "
                         f"not {_json_kind(type(data))}")
    return data


def read_json(path: PathLike, what: str = "JSON file", kind: type | None = None,
              max_bytes: int | None = None) -> Any:
    """Parsed JSON (``.gz`` decompressed); see :func:`parse_json`."""
    return parse_json(read_text(path, what, max_bytes), what, path, kind)


def parse_toml(text: str, what: str, path: PathLike) -> dict[str, Any]:
    """Parsed TOML text: malformed or too deep -> ``InputError`` naming the line."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{what} {path} is not valid TOML: {e}") from None
    except RecursionError:
        raise InputError(f"{what} {path} is nested deeper than {MAX_DEPTH} levels") from None
    return dict(check_depth(data, what, path))


def read_toml(path: PathLike, what: str = "TOML file", max_bytes: int | None = None
              ) -> dict[str, Any]:
    """Parsed TOML of at most ``max_bytes`` (default :data:`MAX_TOML_MB`)."""
    limit = input_limit(MAX_TOML_MB) if max_bytes is None else max_bytes
    return parse_toml(read_text(path, what, limit), what, path)
