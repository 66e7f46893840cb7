"""One error path for every reader and writer.

Readers (:func:`read_text`, :func:`read_json`, :func:`read_toml`, :func:`read_csv`,
:func:`read_parquet`, :func:`read_table`) turn a missing file, a directory, unreadable or
malformed content into one :class:`~gpuscope.core.errors.InputError` naming the file and the
problem. Writers check the output path first (:func:`check_output`: not one of the command's
inputs, not a directory where a file goes, parent not a file, parent creatable) and write via a
temporary file in the same folder renamed into place (:func:`atomic_write`), so a failure (full
disk, a killed process) leaves nothing half-written and never clobbers the old file.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuscope.core.errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

if TYPE_CHECKING:
    import pandas as pd

PathLike = str | os.PathLike[str]


def _why(e: OSError) -> str:
    return e.strerror or type(e).__name__


def check_input_file(path: PathLike, what: str = "file") -> Path:
    """``path`` as a Path, refused unless it is an existing regular file."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"cannot read {what} {p}: it is a directory, not a file")
    if not p.exists():
        raise InputError(f"cannot read {what} {p}: no such file")
    return p


def read_bytes(path: PathLike, what: str = "file") -> bytes:
    """The bytes of a file; missing, directory or unreadable -> ``InputError``."""
    p = check_input_file(path, what)
    try:
        return p.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read {what} {p}: {_why(e)}") from None


def read_text(path: PathLike, what: str = "file") -> str:
    """The UTF-8 text of a file; missing, directory, unreadable or binary -> ``InputError``."""
    data = read_bytes(path, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{what} {path} is not UTF-8 text (byte {e.start})") from None


def read_json(path: PathLike, what: str = "JSON file", kind: type | None = None) -> Any:
    """Parsed JSON; malformed content, or a top level not of type ``kind`` -> ``InputError``."""
    text = read_text(path, what)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{what} {path} is not valid JSON: {e.msg} (line {e.lineno})") from None
    except RecursionError:
        raise InputError(f"{what} {path} is nested too deeply") from None
    if kind is not None and not isinstance(data, kind):
        raise InputError(f"{what} {path} must hold a JSON {_json_kind(kind)}, "
                         f"not {_json_kind(type(data))}")
    return data


def _json_kind(t: type) -> str:
    return {dict: "object", list: "array", str: "string", int: "number", float: "number",
            bool: "boolean", type(None): "null"}.get(t, t.__name__)


def read_toml(path: PathLike, what: str = "TOML file") -> dict[str, Any]:
    """Parsed TOML; malformed content -> ``InputError`` naming the line."""
    text = read_text(path, what)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{what} {path} is not valid TOML: {e}") from None


def read_csv(path: PathLike, what: str = "CSV file", **kw: Any) -> pd.DataFrame:
    """A CSV file as a DataFrame; empty, binary or malformed -> ``InputError``."""
    import pandas as pd

    text = read_text(path, what)
    if not text.strip():
        raise InputError(f"{what} {path} is empty")
    import io as _io

    try:
        return pd.read_csv(_io.StringIO(text), **kw)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as e:
        msg = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
        raise InputError(f"{what} {path} is not a valid CSV table: {msg}") from None


def read_parquet(path: PathLike, what: str = "parquet file",
                 columns: list[str] | None = None) -> pd.DataFrame:
    """A parquet file as a DataFrame; corrupt or not parquet -> ``InputError``."""
    import pandas as pd

    p = check_input_file(path, what)
    try:
        return pd.read_parquet(p, columns=columns)
    except OSError as e:
        if e.strerror:
            raise InputError(f"cannot read {what} {p}: {_why(e)}") from None
        raise InputError(f"{what} {p} is not a valid parquet file: {_first_line(e)}") from None
    except Exception as e:  # pyarrow raises ArrowInvalid (a ValueError) and friends
        raise InputError(f"{what} {p} is not a valid parquet file: {_first_line(e)}") from None


def _first_line(e: BaseException) -> str:
    s = str(e).strip()
    return s.splitlines()[0][:200] if s else type(e).__name__


def read_table(path: PathLike, what: str = "table", **kw: Any) -> pd.DataFrame:
    """A ``.csv`` or ``.parquet`` table (by extension)."""
    suffix = Path(path).suffix.lower()
    if suffix == ".parquet":
        return read_parquet(path, what, **kw)
    if suffix == ".csv":
        return read_csv(path, what, **kw)
    raise InputError(f"{what} {path}: unsupported extension {suffix!r} (use .csv or .parquet)")


def require_columns(df: pd.DataFrame, columns: Iterable[str], path: PathLike,
                    what: str = "table") -> None:
    """Refuse a table missing any of ``columns``, naming the missing ones."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(f"{what} {path} lacks column(s) {', '.join(missing)} "
                         f"(has {', '.join(map(str, df.columns[:12]))})")


# -- writers -------------------------------------------------------------------------------
def _same(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def _inside(child: Path, parent: Path) -> bool:
    try:
        child.resolve().relative_to(parent.resolve())
        return True
    except ValueError:
        return False


def check_output(path: PathLike, inputs: Iterable[PathLike | None] = (), *,
                 kind: str = "file", what: str = "output") -> Path:
    """Refuse an output path that would overwrite an input or cannot be written.

    ``kind`` is ``"file"`` or ``"dir"``. Refused: the output resolves to one of ``inputs``
    (or, for a folder output, holds an input file / sits inside an input folder), a directory
    where a file goes or a file where a folder goes, a parent that is a file, a parent that
    cannot be created or written. Nothing is created here.
    """
    p = Path(path)
    if str(path) == "":
        raise InputError(f"{what} path is empty")
    for raw in inputs:
        if raw is None or str(raw) == "":
            continue
        q = Path(raw)
        if _same(p, q):
            raise InputError(f"{what} {p} is also an input of this command; "
                             "choose another path (inputs are never overwritten)")
        if kind == "dir" and q.exists() and _inside(q, p) and p.exists():
            raise InputError(f"{what} folder {p} holds the input {q}; choose another folder")
        if q.is_dir() and p.exists() and _inside(p, q):
            raise InputError(f"{what} {p} lies in the input folder {q} and would overwrite it; "
                             "choose another path")
    if kind == "file" and p.is_dir():
        raise InputError(f"{what} {p} is a directory; give a file path")
    if kind == "dir" and p.exists() and not p.is_dir():
        raise InputError(f"{what} {p} is a file; give a folder path")
    anc = p.parent if kind == "file" or not p.exists() else p
    while not anc.exists():
        if anc.is_symlink() or anc == anc.parent:
            break
        anc = anc.parent
    if anc.exists() and not anc.is_dir():
        raise InputError(f"{what} {p}: {anc} is a file, not a folder")
    if anc.exists() and not os.access(anc, os.W_OK | os.X_OK):
        raise InputError(f"{what} {p}: folder {anc} is not writable")
    real = anc.resolve()
    if real.parts[:2] in (("/", "proc"), ("/", "sys")):
        raise InputError(f"{what} {p}: cannot write under {real.parts[0]}{real.parts[1]}")
    return p


def make_dirs(path: PathLike, what: str = "output folder") -> Path:
    """``mkdir -p`` with OSError -> ``InputError``."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InputError(f"{what} {p}: a file is in the way of the folder") from None
    except OSError as e:
        raise InputError(f"cannot create {what} {p}: {_why(e)}") from None
    return p


@contextlib.contextmanager
def atomic_write(path: PathLike, inputs: Iterable[PathLike | None] = (),
                 what: str = "output") -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` when the block ends
    without error, delete it otherwise. OSError (full disk, read-only) -> ``InputError``."""
    p = check_output(path, inputs, what=what)
    make_dirs(p.parent)
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    except OSError as e:
        raise InputError(f"cannot write {what} {p}: {_why(e)}") from None
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        try:
            mode = p.stat().st_mode & 0o777 if p.exists() else 0o666 & ~_umask()
            os.chmod(tmp, mode)
        except OSError:
            pass
        os.replace(tmp, p)
    except OSError as e:
        raise InputError(f"cannot write {what} {p}: {_why(e)}") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def write_bytes(path: PathLike, data: bytes, inputs: Iterable[PathLike | None] = (),
                what: str = "output") -> Path:
    """Write ``data`` atomically (see :func:`atomic_write`)."""
    with atomic_write(path, inputs, what) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_text(path: PathLike, text: str, inputs: Iterable[PathLike | None] = (),
               what: str = "output") -> Path:
    """Write UTF-8 ``text`` atomically."""
    return write_bytes(path, text.encode("utf-8"), inputs, what)


def write_json(path: PathLike, obj: Any, inputs: Iterable[PathLike | None] = (),
               what: str = "output", indent: int | None = 1) -> Path:
    """Write ``obj`` as JSON atomically."""
    return write_text(path, json.dumps(obj, indent=indent) + "\n", inputs, what)


def write_table(df: pd.DataFrame, path: PathLike, inputs: Iterable[PathLike | None] = (),
                what: str = "output", index: bool = False) -> Path:
    """Write a DataFrame as ``.parquet`` or CSV (any other extension) atomically."""
    with atomic_write(path, inputs, what) as tmp:
        if Path(path).suffix.lower() == ".parquet":
            df.to_parquet(tmp, index=index)
        else:
            df.to_csv(tmp, index=index)
    return Path(path)
