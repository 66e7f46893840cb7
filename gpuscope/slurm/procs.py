"""Process and port helpers of the local Slurm (``gpuscope.slurm.daemons``): liveness by pid
and by this cluster's marker variable, signals that reap their child, polling, free ports.

A process belongs to a cluster when its environment holds ``GPUSCOPE_SLURM_STATE=<state dir>``
(``MARKER``), inherited from the daemons by every job step, so ``down`` finds them all.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from pathlib import Path

from gpuscope.core.errors import SlurmError

MARKER = "GPUSCOPE_SLURM_STATE"


def alive(pid: int, marker: str | None = None) -> bool:
    """True if ``pid`` runs (not a zombie) and, given ``marker``, carries it in its env."""
    try:
        st = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if st.rsplit(")", 1)[1].split()[0] in ("Z", "X"):
        reap(pid)
        return False
    if marker is None:
        return True
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
    return f"{MARKER}={marker}".encode() in env


def reap(pid: int) -> None:
    """Collect ``pid``'s exit status if it is our child (a no-op otherwise)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports free on 127.0.0.1 now (held together so none repeats)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def log_tail(path: Path, n: int = 3) -> str:
    """The last ``n`` non-blank lines of a log, joined by `` | `` (empty if unreadable)."""
    try:
        lines = [x for x in path.read_text(errors="replace").splitlines() if x.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-n:])


def port_open(port: int) -> bool:
    """True if something accepts TCP connections on 127.0.0.1:``port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def gone(pid: int, marker: str | None) -> bool:
    """``not alive(pid, marker)``, for ``wait_until``."""
    return not alive(pid, marker)


def wait_until(pred: Callable[[], bool], timeout_s: float) -> bool:
    """Poll ``pred()`` every 0.1 s; True once it holds, False after ``timeout_s``."""
    end = time.monotonic() + timeout_s
    while not pred():
        if time.monotonic() > end:
            return False
        time.sleep(0.1)
    return True


def send_signal(pid: int, sig: int) -> None:
    """Send ``sig`` to ``pid`` (gone already: nothing) and reap it; one line if not allowed."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        raise SlurmError(f"not allowed to stop pid {pid}: the local Slurm was started as root; "
                         "run `gpuscope slurm down` as root") from None
    reap(pid)


def marked_sessions(root: str) -> list[int]:
    """Live processes in any session holding a process marked with this cluster (job steps,
    their job scripts), never this process's own session."""
    own = {os.getpid(), os.getppid()}
    own_sid = os.getsid(0)
    sids: set[int] = set()
    procs: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        pid = int(d.name)
        try:
            sid = os.getsid(pid)
        except OSError:
            continue
        procs[pid] = sid
        if pid not in own and sid != own_sid and alive(pid, root):
            sids.add(sid)
    return sorted(p for p, s in procs.items() if s in sids and p not in own and alive(p))
