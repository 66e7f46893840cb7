"""Output folders: new, or one the same command wrote before, replaced as a whole.

A command that writes a folder (``allocate -o OUT``, ``profile build-dataset -o OUT``, ...)
builds it in a hidden temporary folder beside ``OUT`` (``.OUT.building-<pid>``), records
the files it wrote in ``OUT/.gpuscope-output.json`` (the command's name and the file list),
then swaps it into place: the old folder is renamed aside, the new one renamed in, the old
one deleted. So no file of an earlier run survives beside the new ones, and a run that dies
leaves the old folder whole. An existing ``OUT`` is accepted only when it is empty or when
its record names the same command and lists every file in it: a folder holding anything
else (the user's notes, another command's output) is refused, never emptied. Temporary
folders left by a killed run (their process is gone) are swept at the next start.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gpuscope.core.errors import InputError
from gpuscope.core.io.readers import PathLike, read_json
from gpuscope.core.io.writers import check_output, disk_full, write_error

#: The record of what a command wrote into its output folder.
RECORD_NAME: str = ".gpuscope-output.json"
RECORD_FORMAT: str = "gpuscope.output/1"
_TEMP_TAGS: tuple[str, ...] = ("building", "old")


def _files(root: Path) -> list[str]:
    """Every file (and link) under ``root``, relative, POSIX-style, sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        for name in filenames + [d for d in dirnames if (base / d).is_symlink()]:
            out.append((base / name).relative_to(root).as_posix())
    return sorted(out)


def read_record(folder: Path) -> dict[str, Any] | None:
    """The output record of ``folder``, or None when absent or unreadable."""
    rec = folder / RECORD_NAME
    if not rec.is_file() or rec.is_symlink():
        return None
    try:
        m = read_json(rec, "output record", kind=dict, max_bytes=64 * 2**20)
    except InputError:
        return None
    if m.get("format") != RECORD_FORMAT or not isinstance(m.get("files"), list):
        return None
    return m


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale(path: PathLike) -> list[Path]:
    """Remove the temporary folders of ``path`` left by runs whose process is gone (a
    ``.OUT.old-<pid>`` is renamed back to ``OUT`` when ``OUT`` itself is missing: the run
    died between the two renames). Returns what was removed."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    removed: list[Path] = []
    if not parent.is_dir():
        return removed
    for tag in _TEMP_TAGS:
        for t in parent.glob(f".{_glob_escape(p.name)}.{tag}-*"):
            pid = t.name.rpartition("-")[2]
            if not pid.isdigit() or _pid_alive(int(pid)) or t.is_symlink():
                continue
            if tag == "old" and not p.exists() and t.is_dir():
                with contextlib.suppress(OSError):
                    os.replace(t, p)
                    continue
            shutil.rmtree(t, ignore_errors=True) if t.is_dir() else t.unlink(missing_ok=True)
            removed.append(t)
    return removed


@contextlib.contextmanager
def temp_dir(prefix: str) -> Iterator[Path]:
    """A private temporary folder ``gpuscope-<prefix>-<pid>-XXXX`` in the system's temporary
    folder, removed on every exit the process survives; folders of the same prefix whose
    process is gone (a SIGKILLed run) are swept first."""
    base = Path(tempfile.gettempdir())
    head = f"gpuscope-{prefix}-"
    for t in base.glob(f"{_glob_escape(head)}*-*"):
        pid = t.name[len(head):].split("-")[0]
        try:
            mine = t.is_dir() and not t.is_symlink() and t.stat().st_uid == os.getuid()
        except OSError:
            continue
        if mine and pid.isdigit() and not _pid_alive(int(pid)):
            shutil.rmtree(t, ignore_errors=True)
    try:
        d = Path(tempfile.mkdtemp(prefix=f"{head}{os.getpid()}-"))
    except OSError as e:
        raise write_error(e, "temporary folder", base, base) from None
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def check_output_folder(path: PathLike, command: str, inputs: Iterable[PathLike | None] = (),
                        *, what: str = "output folder",
                        legacy: Callable[[Path], bool] | None = None) -> Path:
    """Refuse (``InputError``) a folder output that cannot be replaced as a whole: see the
    module docstring. ``legacy(folder)`` may accept an unrecorded folder the same command
    wrote before records existed. Nothing is created here; stale temporaries are swept."""
    p = check_output(path, inputs, kind="dir", what=what)
    sweep_stale(p)
    if not p.is_dir():
        return p
    files = _files(p)
    if not files:
        return p
    rec = read_record(p)
    if rec is None:
        if legacy is not None and legacy(p):
            return p
        raise InputError(f"{what} {p} already holds files gpuscope did not write there "
                         f"({_few(files)}); give a new or empty folder (nothing was changed)")
    if rec.get("command") != command:
        raise InputError(f"{what} {p} holds the output of `gpuscope {rec.get('command')}`, "
                         f"not of `gpuscope {command}`; give another folder")
    extra = sorted(set(files) - set(map(str, rec["files"])) - {RECORD_NAME})
    if extra:
        raise InputError(f"{what} {p} holds files `gpuscope {command}` did not write "
                         f"({_few(extra)}); remove them or give another folder "
                         "(nothing was changed)")
    return p


def _few(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def _write_record(tmp: Path, command: str) -> None:
    files = [f for f in _files(tmp) if f != RECORD_NAME]
    rec = {"format": RECORD_FORMAT, "command": command, "files": files,
           "written_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    (tmp / RECORD_NAME).write_text(json.dumps(rec, indent=1) + "\n")


def _swap(tmp: Path, out: Path) -> None:
    """Rename ``tmp`` to ``out``; an old ``out`` is renamed aside first and deleted once the
    new folder is in place (a crash between the two renames is repaired by the sweep)."""
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    if out.is_dir():
        os.replace(out, old)
    try:
        os.replace(tmp, out)
    except BaseException:
        if old.is_dir() and not out.exists():
            os.replace(old, out)
        raise
    shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def output_folder(path: PathLike, command: str, inputs: Iterable[PathLike | None] = (), *,
                  what: str = "output folder", legacy: Callable[[Path], bool] | None = None
                  ) -> Iterator[Path]:
    """Yield a temporary folder to write ``path``'s files into; when the block ends without
    error, record them and swap the folder into place (see the module docstring). On any
    error, Ctrl-C included, the temporary folder is removed and ``path`` is left as it was;
    a failed write (a full disk) is one ``InputError`` line."""
    out = check_output_folder(path, command, inputs, what=what, legacy=legacy)
    parent = out.parent if str(out.parent) else Path(".")
    tmp = parent / f".{out.name}.building-{os.getpid()}"
    try:
        parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
    except OSError as e:
        raise write_error(e, what, out, parent if parent.exists() else None) from None
    try:
        try:
            yield tmp
            _write_record(tmp, command)
            check_output_folder(out, command, inputs, what=what, legacy=legacy)  # still ours
            _swap(tmp, out)
        except InputError as e:  # name the output, not its temporary folder
            raise InputError(str(e).replace(str(tmp), str(out))) from None
        except (OSError, RuntimeError) as e:
            if isinstance(e, RuntimeError) and not disk_full(e, parent):
                raise
            raise write_error(e, what, out, parent) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
