"""Start and stop a throwaway local Slurm: munged, slurmctld and one slurmd per server.

Every daemon runs in the foreground of its own session (``-D``/``-F``, ``start_new_session``)
so its pid is the daemon's own, recorded in ``<state>/state.json`` as soon as it starts; a
failed ``up`` and every ``down`` stop them by those pids (SIGTERM, then SIGKILL after a grace
period). Job steps (``slurmstepd``) outlive a killed slurmd, so ``down`` first cancels every job
and then ends every session that still carries this cluster's marker variable
(``GPUSCOPE_SLURM_STATE=<state dir>``, inherited from the daemons). Ports are chosen free by the
OS at ``up`` so two clusters (a user's and a test's) never collide; munged gets a private socket
and key, never the system's.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

from gpuscope.core.errors import SlurmError
from gpuscope.slurm._cluster import load
from gpuscope.slurm.config import Layout, gres_conf, slurm_conf
from gpuscope.slurm.procs import (  # noqa: F401  (re-exported: alive, free_ports, MARKER)
    MARKER,
    alive,
    free_ports,
    gone,
    log_tail,
    marked_sessions,
    port_open,
    send_signal,
    wait_until,
)

#: Binaries needed and the Debian package that ships each.
PACKAGES: dict[str, str] = {"slurmctld": "slurmctld", "slurmd": "slurmd",
                            "sbatch": "slurm-client", "squeue": "slurm-client",
                            "scontrol": "slurm-client", "scancel": "slurm-client",
                            "sinfo": "slurm-client", "munged": "munge"}
APT_HINT = "apt-get install -y slurmctld slurmd slurm-client munge"


@dataclass
class ClusterState:
    """What ``up`` started, as written to ``state.json``."""

    root: str
    munge_dir: str
    cluster_file: str
    cluster_name: str
    ctld_port: int
    node_ports: dict[str, int]
    pids: dict[str, int] = field(default_factory=dict)
    started_at: float = 0.0

    @property
    def layout(self) -> Layout:
        return Layout(Path(self.root), Path(self.munge_dir))

    @property
    def conf(self) -> Path:
        return self.layout.conf

    def env(self) -> dict[str, str]:
        """Environment for Slurm's client commands (and the daemons) of this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf), MARKER: self.root}

    def save(self) -> None:
        from gpuscope.core.io import write_json

        write_json(self.layout.state_json, asdict(self), what="Slurm state file", check=False)


def default_state_dir() -> Path:
    """``$GPUSCOPE_SLURM_STATE_DIR``, else ``~/.gpuscope/slurm``."""
    env = os.environ.get("GPUSCOPE_SLURM_STATE_DIR")
    return Path(env) if env else Path.home() / ".gpuscope" / "slurm"


def missing_packages() -> list[str]:
    """Debian packages whose binaries are not on PATH (nor in /usr/sbin)."""
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin:/sbin"
    return sorted({pkg for b, pkg in PACKAGES.items() if shutil.which(b, path=path) is None})


def prereq_problem() -> str | None:
    """Why a local cluster cannot start here (one line), or None."""
    if os.geteuid() != 0:
        return ("a local Slurm must run as root (it starts munged, slurmctld and slurmd as "
                "root); run as root or use sudo")
    miss = missing_packages()
    if miss:
        return f"missing Debian package(s) {', '.join(miss)}: {APT_HINT}"
    try:
        pwd.getpwnam("munge")
    except KeyError:
        return f"no 'munge' user (the munge package creates it): {APT_HINT}"
    return None


def load_state(state_dir: str | Path | None) -> ClusterState | None:
    """The state of the cluster last started in ``state_dir``, or None."""
    root = Path(state_dir) if state_dir else default_state_dir()
    p = root / "state.json"
    if not p.is_file():
        return None
    from gpuscope.core.io import read_json

    try:
        return ClusterState(**read_json(p, "Slurm state file", kind=dict))
    except (ValueError, TypeError) as e:
        raise SlurmError(f"{p} is not a gpuscope Slurm state file: {str(e)[:200]}") from None


def _munge_dir(root: Path) -> Path:
    """munged needs every folder above its socket searchable by all; ``~root`` is not."""
    if all(os.stat(p).st_mode & stat.S_IXOTH for p in [root, *root.parents]):
        return root / "munge"
    return Path("/run") / f"gpuscope-slurm-{hashlib.sha1(str(root).encode()).hexdigest()[:10]}"


def _mkdev(path: Path) -> None:
    """A stand-in GPU device file: a character device like /dev/null, or a plain file."""
    if path.exists():
        return
    st = os.stat("/dev/null")
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, st.st_rdev)
    except OSError:  # no CAP_MKNOD (some containers): slurmd still counts a plain file
        path.touch()


def _start(st: ClusterState, name: str, argv: list[str], log: Path,
           user: str | None = None) -> subprocess.Popen[bytes]:
    with open(log, "ab") as fh:
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=st.env(), cwd=st.root,
                                start_new_session=True, user=user)
    st.pids[name] = proc.pid
    st.save()
    return proc


def _wait(what: str, check: Callable[[], bool], procs: dict[str, subprocess.Popen[bytes]], logs: dict[str, Path],
          timeout_s: float) -> None:
    """Poll ``check()`` until true; fail early (with the log's last lines) if a daemon died."""
    end = time.monotonic() + timeout_s
    while True:
        for name, p in procs.items():
            if p.poll() is not None:
                raise SlurmError(f"{name} exited with code {p.returncode} while waiting for "
                                 f"{what}: {log_tail(logs[name])} (log: {logs[name]})")
        if check():
            return
        if time.monotonic() > end:
            log = next(iter(logs.values()))
            raise SlurmError(f"timed out after {timeout_s:.0f} s waiting for {what} "
                             f"(logs under {log.parent})")
        time.sleep(0.2)


def up(cluster_file: str | Path, state_dir: str | Path | None = None,
       timeout_s: float = 60.0) -> ClusterState:
    """Start munged, slurmctld and one slurmd per server; return when every node is idle.

    Raises ``SlurmError`` (one line) when not root, when a package is missing, when a cluster
    is already up in ``state_dir``, or when a daemon fails; every daemon started is stopped.
    """
    problem = prereq_problem()
    if problem:
        raise SlurmError(problem)
    cfg = load(cluster_file)
    root = (Path(state_dir) if state_dir else default_state_dir()).resolve()
    old = load_state(root)
    if old is not None:
        if any(alive(p, old.root) for p in old.pids.values()):
            raise SlurmError(f"a Slurm cluster is already up in {root} (slurmctld pid "
                             f"{old.pids.get('slurmctld')}); run `gpuscope slurm down "
                             f"--state-dir {root}` first")
        _cleanup(old)
    root.mkdir(parents=True, exist_ok=True)
    ports = free_ports(len(cfg.servers) + 1)
    st = ClusterState(root=str(root), munge_dir=str(_munge_dir(root)),
                      cluster_file=str(Path(cluster_file).resolve()), cluster_name=cfg.name,
                      ctld_port=ports[0],
                      node_ports={s.name: p for s, p in zip(cfg.servers, ports[1:])},
                      started_at=time.time())
    lay = st.layout
    for d in (lay.logs, lay.ctld_state, lay.devices, *[lay.spool / s.name for s in cfg.servers]):
        d.mkdir(parents=True, exist_ok=True)
    for s in cfg.servers:
        for i in range(s.gpus):
            _mkdev(lay.gpu_file(s.name, i))
    lay.conf.write_text(slurm_conf(cfg, lay, st.ctld_port, st.node_ports))
    lay.gres_conf.write_text(gres_conf(cfg, lay))
    st.save()
    try:
        _start_all(st, [s.name for s in cfg.servers], timeout_s)
    except BaseException:
        stop(st)
        _cleanup(st)
        raise
    return st


def _start_all(st: ClusterState, nodes: list[str], timeout_s: float) -> None:
    lay = st.layout
    mw = pwd.getpwnam("munge")
    lay.munge_dir.mkdir(parents=True, exist_ok=True)
    os.chown(lay.munge_dir, mw.pw_uid, mw.pw_gid)
    os.chmod(lay.munge_dir, 0o755)
    if not lay.munge_key.exists():
        fd = os.open(lay.munge_key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(os.urandom(1024))
        os.chown(lay.munge_key, mw.pw_uid, mw.pw_gid)
    md = lay.munge_dir
    procs: dict[str, subprocess.Popen[bytes]] = {}
    logs: dict[str, Path] = {"munged": md / "munged.log"}
    procs["munged"] = _start(st, "munged", [
        _bin("munged"), "-F", f"--socket={lay.munge_socket}", f"--key-file={lay.munge_key}",
        f"--pid-file={md / 'munged.pid'}", f"--log-file={md / 'munged.log'}",
        f"--seed-file={md / 'munged.seed'}"], lay.logs / "munged.out", user="munge")
    _wait("munged's socket", lay.munge_socket.exists, procs, logs, timeout_s)
    logs["slurmctld"] = lay.logs / "slurmctld.log"
    procs["slurmctld"] = _start(st, "slurmctld", [_bin("slurmctld"), "-D", "-f", str(lay.conf)],
                                lay.logs / "slurmctld.out")
    _wait("slurmctld", lambda: port_open(st.ctld_port), procs, logs, timeout_s)
    for n in nodes:
        logs[f"slurmd {n}"] = lay.logs / f"slurmd-{n}.log"
        procs[f"slurmd {n}"] = _start(st, f"slurmd:{n}", [
            _bin("slurmd"), "-D", "-N", n, "-f", str(lay.conf)], lay.logs / f"slurmd-{n}.out")
    _wait(f"{len(nodes)} node(s) to be idle", lambda: _all_idle(st, nodes), procs, logs,
          timeout_s)


def _bin(name: str) -> str:
    found = shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
    if found is None:
        raise SlurmError(f"{name} not found (Debian package {PACKAGES[name]}): {APT_HINT}")
    return found


def _all_idle(st: ClusterState, nodes: list[str]) -> bool:
    r = subprocess.run([_bin("sinfo"), "-h", "-N", "-o", "%N %t"], env=st.env(),
                       capture_output=True, text=True, timeout=20)
    states = dict(line.split()[:2] for line in r.stdout.splitlines() if len(line.split()) >= 2)
    return all(states.get(n, "").rstrip("*") == "idle" for n in nodes)


def stop(st: ClusterState, grace_s: float = 10.0) -> list[str]:
    """Stop every daemon of ``st`` by its pid and end leftover job steps; return what stopped."""
    stopped: list[str] = []
    if "slurmctld" in st.pids and alive(st.pids["slurmctld"], st.root):
        try:  # cancel jobs first, so that slurmd ends their steps cleanly
            subprocess.run([_bin("scancel"), "--full", "-u", "root"], env=st.env(),
                           capture_output=True, timeout=10)
            wait_until(lambda: _queue_empty(st), 5.0)
        except (subprocess.SubprocessError, OSError, SlurmError):
            pass
    order = sorted(st.pids, key=lambda n: (0 if n.startswith("slurmd") else
                                           1 if n == "slurmctld" else 2))
    for name in order:
        pid = st.pids[name]
        if alive(pid, st.root):
            send_signal(pid, signal.SIGTERM)
            dead = partial(gone, pid, st.root)
            if not wait_until(dead, grace_s):
                send_signal(pid, signal.SIGKILL)
                wait_until(dead, 5.0)
            stopped.append(f"{name} (pid {pid})")
    for pid in marked_sessions(st.root):
        send_signal(pid, signal.SIGKILL)
        stopped.append(f"job process (pid {pid})")
    return stopped


def _queue_empty(st: ClusterState) -> bool:
    r = subprocess.run([_bin("squeue"), "-h", "-o", "%i %T"], env=st.env(), capture_output=True,
                       text=True, timeout=10)
    return r.returncode != 0 or not r.stdout.strip()


def _cleanup(st: ClusterState) -> None:
    """Remove what a stopped cluster leaves outside its state dir (a munge folder in /run)."""
    md = Path(st.munge_dir)
    if md.parent == Path("/run") and md.name.startswith("gpuscope-slurm-"):
        shutil.rmtree(md, ignore_errors=True)
    for f in ("slurmctld.pid",):
        (Path(st.root) / f).unlink(missing_ok=True)


def down(state_dir: str | Path | None = None) -> list[str]:
    """Stop the cluster started in ``state_dir``; return the daemons stopped (may be empty)."""
    root = Path(state_dir) if state_dir else default_state_dir()
    st = load_state(root.resolve())
    if st is None:
        raise SlurmError(f"no gpuscope Slurm cluster in {root} (no state.json)")
    stopped = stop(st)
    _cleanup(st)
    st.pids = {}
    st.save()
    return stopped


def running_state(state_dir: str | Path | None = None) -> ClusterState | None:
    """The cluster in ``state_dir`` if its slurmctld is alive, else None."""
    root = Path(state_dir) if state_dir else default_state_dir()
    st = load_state(root.resolve()) if root.exists() else None
    if st is None or not alive(st.pids.get("slurmctld", -1), st.root):
        return None
    return st

