"""``slurm.conf`` and ``gres.conf`` for a throwaway one-machine Slurm built from a cluster file.

Every server of the cluster file becomes a Slurm node (``NodeName`` = server name) served by its
own ``slurmd -N NAME`` on its own port of 127.0.0.1; every partition a Slurm partition; every
server's GPUs typed GRES (``Gres=gpu:<gpu_type>:<gpus>``). There are no GPUs on the machine, so
``AutoDetect=off`` and each GPU's ``File=`` is a character device made with ``mknod`` as a copy
of ``/dev/null`` (slurmd only counts the files; a non-device draws an error line). Known working
with Slurm 22.05 (Debian 12): ``ProctrackType=proctrack/linuxproc``, ``TaskPlugin=task/none``,
``SelectType=select/cons_tres``; ``SlurmdParameters=config_overrides`` lets the nodes claim the
cluster file's CPUs and memory rather than the host's.

Accounting (slurmdbd) needs a MySQL server, so it is off and finished jobs are read from the job
completion log (``JobCompType=jobcomp/filetxt``). The scheduler runs every second
(``sched_interval=1``, ``bf_interval=1``) so that seconds-long dry-run jobs start on time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpuscope.cluster.config import ClusterConfig


@dataclass(frozen=True)
class Layout:
    """Where a throwaway cluster keeps its files: everything under ``root`` except munge's
    socket folder, which must be reachable by the ``munge`` user (``munge_dir``)."""

    root: Path
    munge_dir: Path

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    @property
    def gres_conf(self) -> Path:
        return self.root / "gres.conf"

    @property
    def state_json(self) -> Path:
        return self.root / "state.json"

    @property
    def jobcomp(self) -> Path:
        return self.root / "jobcomp.txt"

    @property
    def logs(self) -> Path:
        return self.root / "log"

    @property
    def ctld_state(self) -> Path:
        return self.root / "ctld"

    @property
    def spool(self) -> Path:
        return self.root / "spool"

    @property
    def devices(self) -> Path:
        return self.root / "dev"

    @property
    def munge_socket(self) -> Path:
        return self.munge_dir / "munge.socket"

    @property
    def munge_key(self) -> Path:
        return self.munge_dir / "munge.key"

    def gpu_file(self, node: str, i: int) -> Path:
        return self.devices / f"{node}-gpu{i}"


def slurm_conf(cfg: ClusterConfig, lay: Layout, ctld_port: int, node_ports: dict[str, int],
               cluster_name: str = "gpuscope") -> str:
    """The ``slurm.conf`` text (deterministic: same cluster, layout and ports, same text)."""
    r = lay.root
    lines = [
        f"# gpuscope throwaway Slurm for cluster {cfg.name!r} ({len(cfg.servers)} nodes); "
        "written by `gpuscope slurm up`",
        f"ClusterName={cluster_name}",
        "SlurmctldHost=localhost(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={lay.munge_socket}",
        f"StateSaveLocation={lay.ctld_state}",
        f"SlurmdSpoolDir={lay.spool}/%n",
        f"SlurmctldPidFile={r}/slurmctld.pid",
        f"SlurmdPidFile={r}/slurmd-%n.pid",
        f"SlurmctldLogFile={lay.logs}/slurmctld.log",
        f"SlurmdLogFile={lay.logs}/slurmd-%n.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "GresTypes=gpu",
        "MpiDefault=none",
        "SwitchType=switch/none",
        "MailProg=/bin/true",
        "AccountingStorageType=accounting_storage/none",
        "JobAcctGatherType=jobacct_gather/none",
        "JobCompType=jobcomp/filetxt",
        f"JobCompLoc={lay.jobcomp}",
        "SlurmdParameters=config_overrides",
        "SchedulerType=sched/backfill",
        "SchedulerParameters=sched_interval=1,bf_interval=1,default_queue_depth=1000",
        "MinJobAge=3600",
        "ReturnToService=2",
        "KillWait=2",
        "InactiveLimit=0",
        "SlurmctldTimeout=30",
        "SlurmdTimeout=60",
    ]
    for s in cfg.servers:
        mem_mb = int(s.mem_gb * 1024)
        lines.append(f"NodeName={s.name} NodeHostname=localhost NodeAddr=127.0.0.1 "
                     f"Port={node_ports[s.name]} CPUs={s.cpus} RealMemory={mem_mb} "
                     f"Gres=gpu:{s.gpu_type}:{s.gpus} State=UNKNOWN")
    for i, p in enumerate(cfg.partitions):
        nodes = ",".join(s.name for s in cfg.servers if s.partition == p.name)
        default = " Default=YES" if i == 0 else ""
        lines.append(f"PartitionName={p.name} Nodes={nodes}{default} MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def gres_conf(cfg: ClusterConfig, lay: Layout) -> str:
    """The ``gres.conf`` text: one typed GPU line per node, files ``<node>-gpu[0-(n-1)]``."""
    lines = ["AutoDetect=off"]
    for s in cfg.servers:
        files = lay.devices / f"{s.name}-gpu[0-{s.gpus - 1}]" if s.gpus > 1 \
            else lay.gpu_file(s.name, 0)
        lines.append(f"NodeName={s.name} Name=gpu Type={s.gpu_type} File={files}")
    return "\n".join(lines) + "\n"
