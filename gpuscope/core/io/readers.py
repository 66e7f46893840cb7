"""Reading user files: every input a command takes goes through :func:`check_input_file`.

Before a file is opened it must be a regular file (a FIFO would block forever, ``/dev/zero``
never ends, a socket or device is no input) no larger than a bound (:func:`input_limit`), and
it is opened non-blocking so that a FIFO swapped in after the check cannot hang the reader
either. Text must be UTF-8 without NUL bytes (a leading byte-order mark is dropped); JSON and
TOML documents are refused when nested deeper than :data:`MAX_DEPTH`.

The bounds are proportionate to what parsing a format costs, so that no input makes a
command grow past about 1 GB: binary files (parquet, graphs) up to
:data:`DEFAULT_MAX_INPUT_MB`; text parsed into Python objects (CSV, JSON, logs) up to
:data:`MAX_TEXT_MB`; TOML (parsed in pure Python) up to :data:`MAX_TOML_MB`; and, counted on
the bytes before anything is parsed, at most :func:`value_limit` values (CSV cells, JSON
values, parquet cells), each of which costs tens of bytes once parsed. Every refusal is one
:class:`~gpuscope.core.errors.InputError` line naming the file, the bound and the environment
variable that changes it.
"""

from __future__ import annotations

import codecs
import json
import os
import stat
import sys
import zlib
from pathlib import Path
from typing import Any

from gpuscope.core.errors import InputError
from gpuscope.core.limits import env_bytes, env_count

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PathLike = str | os.PathLike[str]

#: Environment variable overriding the size bound of every input file, in MB.
MAX_INPUT_ENV: str = "GPUSCOPE_MAX_INPUT_MB"
#: Default bound on one binary input file (parquet, graphs).
DEFAULT_MAX_INPUT_MB: float = 256.0
#: Default bound on text parsed into Python objects: CSV, JSON, logs (a 10**6-job queue is
#: about 50 MB of CSV; parsed, a 7-byte cell costs 72 bytes).
MAX_TEXT_MB: float = 64.0
#: Default bound on a TOML document (campaigns, clusters, catalogs are a few kB; the parser is
#: pure Python, 3 to 8 s a MB on a loaded core, and a table costs 1 kB).
MAX_TOML_MB: float = 1.0
#: Environment variable overriding the bound on the values one input holds.
MAX_VALUES_ENV: str = "GPUSCOPE_MAX_VALUES"
#: Default bound on the values (CSV or parquet cells, JSON values) of one input: each costs
#: up to about 72 bytes as a Python object, so 10 million stay under 1 GB; a 10**6-job queue
#: of 8 columns holds 8 million.
DEFAULT_MAX_VALUES: int = 10_000_000
#: Deepest nesting a JSON or TOML document may have (gpuscope's own files nest 5 levels).
MAX_DEPTH: int = 64
_CHUNK = 1 << 20


def input_limit(default_mb: float = DEFAULT_MAX_INPUT_MB) -> int:
    """Bytes one input file may hold: ``$GPUSCOPE_MAX_INPUT_MB`` when set, else ``default_mb``."""
    limit = env_bytes(MAX_INPUT_ENV)
    return int(default_mb * 2**20) if limit is None else limit


def value_limit() -> int:
    """Values one input may hold: ``$GPUSCOPE_MAX_VALUES`` when set, else
    :data:`DEFAULT_MAX_VALUES`."""
    limit = env_count(MAX_VALUES_ENV)
    return DEFAULT_MAX_VALUES if limit is None else limit


def text_cell_limit() -> int:
    """Distinct text cells a parsed table may hold as Python objects: half of
    :func:`value_limit` (a 10**6-job queue holds 2 million: its ids and arrival times)."""
    return value_limit() // 2


def check_values(n: int, what: str, path: PathLike, unit: str = "values") -> None:
    """Refuse an input holding more than :func:`value_limit` values (counted before it is
    parsed: parsing would cost tens of bytes a value)."""
    limit = value_limit()
    if n > limit:
        raise InputError(f"{what} {path} holds about {n:,} {unit}, over the limit of "
                         f"{limit:,} for one input file (set ${MAX_VALUES_ENV} to change)")


def csv_cells(data: bytes, sep: str = ",") -> int:
    """Cells of CSV bytes at most: lines x the header's fields (counted at C speed, no copy;
    a quoted separator or line break only counts more)."""
    head = data[:data.find(b"\n") if b"\n" in data[:1 << 20] else 1 << 20]
    return (data.count(b"\n") + 1) * (head.count(sep.encode() or b",") + 1)


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


def decode_text(data: bytes, what: str, path: PathLike, lenient: bool = False) -> str:
    """UTF-8 ``data`` as text (a leading byte-order mark dropped); binary -> ``InputError``
    (``lenient``: undecodable bytes become U+FFFD)."""
    if lenient:
        return data.decode("utf-8", errors="replace")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"{what} {path} is not UTF-8 text (byte {e.start})") from None


def check_utf8(data: bytes, what: str, path: PathLike) -> None:
    """Refuse ``data`` that is not UTF-8, checked 4 MB at a time (no copy of the whole)."""
    dec = codecs.getincrementaldecoder("utf-8")()
    view, step, at = memoryview(data), 1 << 22, 0
    try:
        for at in range(0, len(data), step):
            dec.decode(view[at:at + step])
        dec.decode(b"", final=True)
    except UnicodeDecodeError as e:
        raise InputError(f"{what} {path} is not UTF-8 text (byte {at + e.start})") from None


def read_text(path: PathLike, what: str = "file", max_bytes: int | None = None, *,
              lenient: bool = False) -> str:
    """The UTF-8 text of a file of at most ``max_bytes`` (default: the text bound,
    :data:`MAX_TEXT_MB`); missing, special, too large, binary -> ``InputError``. ``.gz``
    files are decompressed (to at most the bound). ``lenient`` (logs written by other
    programs): undecodable bytes become U+FFFD, NUL bytes pass."""
    return decode_text(text_bytes(path, what, max_bytes, lenient=lenient), what, path,
                       lenient=lenient)


def text_bytes(path: PathLike, what: str = "file", max_bytes: int | None = None, *,
               lenient: bool = False) -> bytes:
    """The bytes of a text file (``.gz`` decompressed) of at most ``max_bytes`` (default: the
    text bound, :data:`MAX_TEXT_MB`), NUL bytes refused unless ``lenient``; not decoded, so
    that a parser taking bytes needs no second copy."""
    limit = input_limit(MAX_TEXT_MB) if max_bytes is None else max_bytes
    if lenient:
        return read_bytes(path, what, limit)
    if str(path).endswith(".gz"):
        return read_gzip(path, what, limit)
    return read_bytes(path, what, limit, text=True)


def read_gzip(path: PathLike, what: str = "file", max_bytes: int | None = None) -> bytes:
    """The decompressed bytes of a gzip file, refused once they pass ``max_bytes`` (default:
    the text bound; a small file that inflates to gigabytes stops at the bound)."""
    limit = input_limit(MAX_TEXT_MB) if max_bytes is None else max_bytes
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


def json_shape(text: str | bytes, max_values: int | None = None) -> tuple[int, int]:
    """(values, deepest nesting) of JSON text, read off its bytes with numpy before anything
    parses it, 4 MB at a time (a few tens of MB of scratch whatever the size): outside
    strings (quotes not escaped by an odd run of backslashes), every value or key but the
    first follows a comma, a colon or an opening bracket (an empty container counts two).
    The depth is not computed (0) once the values pass ``max_values``."""
    import numpy as np

    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    values, depth, deepest, inside, at, n = 1, 0, 0, 0, 0, len(raw)
    while at < n:
        end = min(at + _CHUNK * 4, n)
        while end < n and raw[end - 1] == 0x5C:  # a run of backslashes stays in one chunk
            end += 1
        b = np.frombuffer(raw, dtype=np.uint8, count=end - at, offset=at)
        quote = b == 0x22
        slashes = np.flatnonzero(b == 0x5C)
        if len(slashes):  # the character after an odd run of backslashes is escaped
            cut = np.flatnonzero(np.diff(slashes) != 1)
            first = slashes[np.r_[0, cut + 1]]
            after = slashes[np.r_[cut, len(slashes) - 1]] + 1
            escaped = after[((after - first) % 2 == 1) & (after < len(b))]
            quote[escaped] = False
        parity = np.cumsum(quote, dtype=np.int32)
        outside = (parity + inside) % 2 == 0
        inside = int(parity[-1] + inside) % 2
        del parity
        opening = outside & ((b == 0x5B) | (b == 0x7B))
        closing = outside & ((b == 0x5D) | (b == 0x7D))
        values += int(np.count_nonzero(outside & ((b == 0x2C) | (b == 0x3A))))
        values += int(np.count_nonzero(opening))
        if max_values is not None and values > max_values:
            return values, 0
        at = end
        brackets = np.flatnonzero(opening | closing)
        if len(brackets):
            level = np.cumsum(np.where(opening[brackets], 1, -1), dtype=np.int64) + depth
            deepest, depth = max(deepest, int(level.max())), int(level[-1])
    return values, deepest


def json_depth(text: str | bytes) -> int:
    """Deepest nesting of JSON text's arrays and objects (see :func:`json_shape`)."""
    return json_shape(text)[1]


def check_depth(obj: Any, what: str, path: PathLike) -> Any:
    """``obj``, refused when nested deeper than :data:`MAX_DEPTH`."""
    if depth_of(obj) > MAX_DEPTH:
        raise InputError(f"{what} {path} is nested deeper than {MAX_DEPTH} levels")
    return obj


def _json_kind(t: type) -> str:
    return {dict: "object", list: "array", str: "string", int: "number", float: "number",
            bool: "boolean", type(None): "null"}.get(t, t.__name__)


def check_json(text: str | bytes, what: str, path: PathLike) -> None:
    """Refuse JSON text holding more than :func:`value_limit` values or nested deeper than
    :data:`MAX_DEPTH`, before it is parsed."""
    values, depth = json_shape(text, value_limit())
    check_values(values, what, path, "JSON values")
    if depth > MAX_DEPTH:
        raise InputError(f"{what} {path} is nested deeper than {MAX_DEPTH} levels")


def parse_json(text: str | bytes, what: str, path: PathLike, kind: type | None = None,
               *, checked: bool = False) -> Any:
    """Parsed JSON text (already read): too many values, too deep (see :func:`check_json`;
    ``checked``: already done), malformed, or a top level not of type ``kind`` ->
    ``InputError``."""
    if not checked:
        check_json(text, what, path)
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
    """Parsed JSON (``.gz`` decompressed) of at most ``max_bytes`` (default: the text bound,
    :data:`MAX_TEXT_MB`); see :func:`parse_json`. The bytes are checked, decoded and
    dropped before parsing, so the text is held once."""
    data = text_bytes(path, what, max_bytes)
    check_json(data, what, path)
    text = decode_text(data, what, path)
    del data
    return parse_json(text, what, path, kind, checked=True)


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
