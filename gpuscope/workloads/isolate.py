"""User code run apart: a ``--module`` factory is first called in a forked child process.

A factory is the user's code; it may ``sys.exit()``, ``os._exit()``, ``os.abort()``, crash
the interpreter, print, or hang. :func:`probe` forks, calls it there (on PyTorch's ``meta``
device: no memory, no compute) with its output silenced, and reads the outcome: a clean
return lets the caller run the factory in-process; anything else is one
:class:`~gpuscope.core.errors.InputError` line naming the module, and the command (or, for a
queue, the other jobs) goes on. The outcome is remembered per module source (its spelling and
the bytes of its file), so a queue of many jobs of one module forks once.
"""

from __future__ import annotations

import os
import select
import signal
import time
from collections.abc import Callable
from typing import Any

from gpuscope.core.errors import InputError

#: Seconds a factory may take in the child before it is killed (a hung factory is refused).
PROBE_TIMEOUT_S: float = 600.0
_OK, _REFUSED = 0, 3
_DONE = b"\x00returned"
_seen: dict[str, str | None] = {}


def probe(module: str, call: Callable[[], Any], timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Run ``call`` (which calls ``module``'s factory) in a forked child on the meta device;
    ``InputError`` naming the module when the child does not return cleanly."""
    from gpuscope.jobs.spec import source_digest

    key = source_digest(module)
    if key not in _seen:
        _seen[key] = _run_child(module, call, timeout_s) if hasattr(os, "fork") else None
    if _seen[key] is not None:
        raise InputError(str(_seen[key]))


def _run_child(module: str, call: Callable[[], Any], timeout_s: float) -> str | None:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns, never runs the parent's exit handlers
        code = _OK
        try:
            import faulthandler

            faulthandler.disable()  # an abort is reported by the parent, not dumped here
            os.close(r)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            import torch

            with torch.device("meta"):
                call()
            os.write(w, _DONE)
        except BaseException as e:  # noqa: BLE001 - every outcome is reported to the parent
            code = _REFUSED
            if isinstance(e, InputError):
                msg = str(e)
            elif isinstance(e, SystemExit):
                msg = f"module {module}: the factory called sys.exit({e.code!r})"
            else:
                msg = f"module {module} failed: {type(e).__name__}: {e}"
            try:
                os.write(w, " ".join(msg.split())[:2000].encode())
            except OSError:
                pass
        os._exit(code)
    os.close(w)
    try:
        return _outcome(module, pid, r, timeout_s)
    finally:
        os.close(r)


def _outcome(module: str, pid: int, r: int, timeout_s: float) -> str | None:
    """Wait for the child (killing it after ``timeout_s``, or when this process is
    interrupted) and say what happened."""
    data, deadline = b"", time.monotonic() + timeout_s
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                _kill(pid)
                return f"module {module}: the factory did not return within {timeout_s:g} s"
            ready, _, _ = select.select([r], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(r, 4096)
                if not chunk:
                    break
                data += chunk
    except BaseException:
        _kill(pid)
        raise
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else sig
        return f"module {module}: the factory killed its process ({name})"
    code = os.WEXITSTATUS(status)
    if code == _OK and data == _DONE:
        return None
    if code == _REFUSED and data:
        return data.decode(errors="replace")
    return f"module {module}: the factory ended its process (exit code {code})"


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
