"""Writing outputs: every file a command writes goes through :func:`atomic_write`.

:func:`check_output` refuses, before anything is created, an output that is one of the
command's inputs (or lies in an input folder), a symbolic link (a link to ``/dev/stdout``, a
loop), a FIFO, a device or a socket, a directory where a file goes or a file where a folder
goes, or a parent that is a file or not writable. :func:`atomic_write` writes into a
temporary file beside the output, flushes it to disk and renames it into place, so a failure
(a full disk, a killed process) leaves nothing half-written and never clobbers the old file;
the temporary file is removed on every exit the process survives. A full disk is one line
that says so.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuscope.core.errors import InputError
from gpuscope.core.io.readers import PathLike, file_kind, why
from gpuscope.core.io.tables import write_csv_file

if TYPE_CHECKING:
    import pandas as pd


def disk_full(e: BaseException, folder: PathLike | None = None) -> bool:
    """Whether ``e`` (an OSError, or a library's wrapper of one, e.g. torch's "file write
    failed") comes from a full disk: ENOSPC/EDQUOT, or no free block left in ``folder``."""
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    if "No space left" in str(e) or "Disk quota" in str(e):
        return True
    if folder is not None:
        try:
            st = os.statvfs(folder)
        except OSError:
            return False
        return st.f_bfree == 0 or (st.f_bavail == 0 and os.geteuid() != 0)
    return False


def write_error(e: BaseException, what: str, p: PathLike, folder: PathLike | None = None
                ) -> InputError:
    """One line for a failed write: a full disk says so; else the OS's reason."""
    if disk_full(e, folder):
        return InputError(f"cannot write {what} {p}: the disk is full (No space left on device)")
    reason = why(e) if isinstance(e, OSError) else (str(e).strip().splitlines() or [""])[0]
    return InputError(f"cannot write {what} {p}: {reason[:200] or type(e).__name__}")


def _same(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):  # a symlink loop among the inputs: judged elsewhere
        return False


def _inside(child: Path, parent: Path) -> bool:
    try:
        child.resolve().relative_to(parent.resolve())
        return True
    except (ValueError, OSError, RuntimeError):
        return False


def _refuse_special(p: Path, kind: str, what: str) -> None:
    """Refuse an existing output that is a link, a FIFO, a device or a socket."""
    try:
        st = os.lstat(p)
    except (FileNotFoundError, NotADirectoryError):  # judged by check_output's parent rules
        return
    except OSError as e:
        raise InputError(f"{what} {p}: {why(e)}") from None
    if stat.S_ISLNK(st.st_mode):
        raise InputError(f"{what} {p} is a symbolic link; gpuscope never writes through a "
                         "link (remove it or give another path)")
    if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
        return
    raise InputError(f"{what} {p} is {file_kind(st.st_mode)}; give a path to a regular "
                     f"{'file' if kind == 'file' else 'folder'}")


def check_output(path: PathLike, inputs: Iterable[PathLike | None] = (), *,
                 kind: str = "file", what: str = "output") -> Path:
    """Refuse an output path that would overwrite an input or cannot be written.

    ``kind`` is ``"file"`` or ``"dir"``. Refused: a link, FIFO, device or socket; the output
    resolves to one of ``inputs`` (or, for a folder output, holds an input file / sits inside
    an input folder); a directory where a file goes or a file where a folder goes; a parent
    that is a file, a link loop, or cannot be created or written. Nothing is created here.
    """
    p = Path(path)
    if str(path) == "":
        raise InputError(f"{what} path is empty")
    _refuse_special(p, kind, what)
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
        if anc.is_symlink():  # a dangling link or a loop among the parents
            raise InputError(f"{what} {p}: {anc} is a broken or looping symbolic link")
        if anc == anc.parent:
            break
        anc = anc.parent
    if anc.exists() and not anc.is_dir():
        raise InputError(f"{what} {p}: {anc} is a file, not a folder")
    if anc.exists() and not os.access(anc, os.W_OK | os.X_OK):
        raise InputError(f"{what} {p}: folder {anc} is not writable")
    real = anc.resolve()
    if real.parts[:2] in (("/", "proc"), ("/", "sys"), ("/", "dev")):
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
        raise write_error(e, what, p, p.parent if p.parent.exists() else None) from None
    return p


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_write(path: PathLike, inputs: Iterable[PathLike | None] = (),
                 what: str = "output", *, check: bool = True) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; flush it and rename it onto ``path`` when the
    block ends without error, delete it otherwise (also on Ctrl-C). A failed write (a full
    disk, a read-only folder, or a library's error wrapping one) -> ``InputError``.
    ``check=False`` skips :func:`check_output` (a folder gpuscope made itself)."""
    p = check_output(path, inputs, what=what) if check else Path(path)
    top = p.parent
    while not top.parent.exists() and top.parent != top:
        top = top.parent
    made = None if top.exists() else top  # folders made here go again if the write fails
    make_dirs(p.parent)
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    except OSError as e:
        _remove_empty(p.parent, made)
        raise write_error(e, what, p, p.parent) from None
    os.close(fd)
    tmp = Path(tmp_name)
    done = False
    try:
        try:
            yield tmp
            _fsync(tmp)
        except (OSError, RuntimeError) as e:  # torch wraps ENOSPC in a RuntimeError
            if isinstance(e, RuntimeError) and not disk_full(e, p.parent):
                raise
            raise write_error(e, what, p, p.parent) from None
        try:
            mode = p.stat().st_mode & 0o777 if p.exists() else 0o666 & ~_umask()
            os.chmod(tmp, mode)
        except OSError:
            pass
        _refuse_special(p, "file", what)  # a link or FIFO put there while we wrote
        try:
            os.replace(tmp, p)
        except OSError as e:
            raise write_error(e, what, p, p.parent) from None
        done = True
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if not done:
            _remove_empty(p.parent, made)


def _remove_empty(folder: Path, top: Path | None) -> None:
    """Remove ``folder`` and its parents up to ``top`` while they are empty (``top`` None:
    nothing was made)."""
    if top is None:
        return
    d = folder
    while True:
        try:
            d.rmdir()
        except OSError:
            return
        if d == top or d.parent == d:
            return
        d = d.parent


def replace_atomically(path: PathLike, write: Callable[[Path], object],
                       inputs: Iterable[PathLike | None] = (), what: str = "output", *,
                       check: bool = True) -> Path:
    """Call ``write(tmp)`` on a temporary path beside ``path`` and rename it into place
    (see :func:`atomic_write`); returns ``path``."""
    with atomic_write(path, inputs, what, check=check) as tmp:
        write(tmp)
    return Path(path)


def write_bytes(path: PathLike, data: bytes, inputs: Iterable[PathLike | None] = (),
                what: str = "output", *, check: bool = True) -> Path:
    """Write ``data`` atomically (see :func:`atomic_write`)."""
    return replace_atomically(path, lambda t: t.write_bytes(data), inputs, what, check=check)


def write_text(path: PathLike, text: str, inputs: Iterable[PathLike | None] = (),
               what: str = "output", *, check: bool = True) -> Path:
    """Write UTF-8 ``text`` atomically."""
    return write_bytes(path, text.encode("utf-8"), inputs, what, check=check)


def write_json(path: PathLike, obj: Any, inputs: Iterable[PathLike | None] = (),
               what: str = "output", indent: int | None = 1, *, check: bool = True,
               sort_keys: bool = False) -> Path:
    """Write ``obj`` as JSON atomically."""
    return write_text(path, json.dumps(obj, indent=indent, sort_keys=sort_keys) + "\n", inputs,
                      what, check=check)


def write_table(df: pd.DataFrame, path: PathLike, inputs: Iterable[PathLike | None] = (),
                what: str = "output", index: bool = False, *, check: bool = True,
                **kw: Any) -> Path:
    """Write a DataFrame atomically: ``.parquet`` by extension, else CSV with spreadsheet-safe
    cells (:func:`~gpuscope.core.io.tables.csv_text`)."""
    if Path(path).suffix.lower() == ".parquet":
        return replace_atomically(path, lambda t: df.to_parquet(t, index=index, **kw), inputs,
                                  what, check=check)
    return replace_atomically(path, lambda t: write_csv_file(df, t, index=index, **kw), inputs,
                              what, check=check)


def write_figure(fig: Any, path: PathLike, inputs: Iterable[PathLike | None] = (),
                 what: str = "figure", dpi: int = 110, *, check: bool = True) -> Path:
    """Save a matplotlib figure atomically (the format from ``path``'s extension)."""
    fmt = Path(path).suffix.lower().lstrip(".") or "png"
    return replace_atomically(path, lambda t: fig.savefig(t, format=fmt, dpi=dpi), inputs, what,
                              check=check)
