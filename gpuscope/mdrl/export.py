"""A placement plan and its real-engine files: Slurm sbatch scripts, Kubernetes Jobs, Kueue.

The plan (``plan.csv``) has one row per job in start order: ``job_id, partition, servers``
(``;``-separated node names), ``gpus, cpus, mem_gb, time_limit_s, start_order`` and, for
reading, ``flavor, gpu_type, start_h, policy``. ``gpuscope.slurm`` submits it (its
``--submit``); here the files are only written:

* sbatch: ``--partition``, ``--nodelist``, ``--gres=gpu:TYPE:N`` per node, ``--cpus-per-task``,
  ``--mem`` per node, ``--time`` = the flavor's limit; the multi-server flavor uses
  ``--nodes=2`` with one task per GPU and a Horovod/Singularity command template;
* Kubernetes ``batch/v1`` Job: ``nodeName`` for one server (``nodeAffinity`` over the servers
  plus pod anti-affinity for several, one Indexed pod per node), ``resources.limits``
  ``{nvidia.com/gpu, cpu, memory: NGi}``, ``activeDeadlineSeconds`` = the limit;
* optional Kueue ``ResourceFlavor`` + ``ClusterQueue`` per partition (quota = the partition's
  GPUs, CPUs and memory; jobs carry the ``kueue.x-k8s.io/queue-name`` label).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from gpuscope.cluster.config import ClusterConfig
from gpuscope.mdrl.env import EpisodeResult
from gpuscope.mdrl.simulate import Episode, Partition

PLAN_COLUMNS: tuple[str, ...] = ("job_id", "partition", "servers", "gpus", "cpus", "mem_gb",
                                 "time_limit_s", "start_order", "flavor", "gpu_type",
                                 "start_h", "policy")
DEFAULT_IMAGE = "train.sif"
DEFAULT_COMMAND = "python train.py"


def make_plan(part: Partition, episode: Episode, result: EpisodeResult,
              policy: str) -> pd.DataFrame:
    """Rows in start order of the episode's jobs as placed by ``policy``."""
    rows = []
    for job in episode.jobs:
        f = part.flavors[job.flavor]
        srv = result.placement.get(job.job_id, ())
        rows.append({
            "job_id": f"{part.name.lower()}-j{job.job_id}", "partition": part.name,
            "servers": ";".join(part.servers[j].name for j in srv), "gpus": f.gpus,
            "cpus": f.cpus, "mem_gb": f.mem_gb, "time_limit_s": int(round(f.limit_h * 3600)),
            "start_order": 0, "flavor": f.name, "gpu_type": part.gpu_type,
            "start_h": result.starts.get(job.job_id, float("nan")), "policy": policy})
    df = pd.DataFrame(rows, columns=list(PLAN_COLUMNS)).sort_values(["start_h", "job_id"])
    df["start_order"] = range(1, len(df) + 1)
    return df.reset_index(drop=True)


def _atomic_write(path: Path, text: str) -> Path:
    from gpuscope.core.io import write_text

    return write_text(path, text, what="plan file", check=False)


def slurm_time(seconds: int) -> str:
    """Slurm ``--time`` as ``HH:MM:SS`` with unbounded hours (72 h → ``72:00:00``)."""
    h, rest = divmod(int(seconds), 3600)
    m, s = divmod(rest, 60)
    return f"{h:02d}:{m:02d}:{s:02d}"


def _mem_per_node(mem_gb: float, nodes: int) -> int:
    return int(-(-mem_gb // nodes))


def sbatch_script(row: dict[str, Any], image: str = DEFAULT_IMAGE,
                  command: str = DEFAULT_COMMAND) -> str:
    """One sbatch script for one plan row."""
    servers = [s for s in str(row["servers"]).split(";") if s]
    nodes = max(1, len(servers))
    gpn = int(row["gpus"]) // nodes
    lines = ["#!/bin/bash", f"#SBATCH --job-name={row['job_id']}",
             f"#SBATCH --partition={row['partition']}"]
    if servers:
        lines.append(f"#SBATCH --nodelist={','.join(servers)}")
    lines.append(f"#SBATCH --nodes={nodes}")
    gres = f"gpu:{row['gpu_type']}:{gpn}" if row.get("gpu_type") else f"gpu:{gpn}"
    lines.append(f"#SBATCH --gres={gres}")
    if nodes == 1:
        lines += ["#SBATCH --ntasks=1", f"#SBATCH --cpus-per-task={int(row['cpus'])}"]
    else:  # one task per GPU, Horovod over MPI (seed 003 §2.1: OpenMPI + Horovod)
        lines += [f"#SBATCH --ntasks-per-node={gpn}",
                  f"#SBATCH --cpus-per-task={int(row['cpus']) // (nodes * gpn)}"]
    lines += [f"#SBATCH --mem={_mem_per_node(float(row['mem_gb']), nodes)}G",
              f"#SBATCH --time={slurm_time(int(row['time_limit_s']))}",
              f"# gpuscope mdrl plan: flavor {row.get('flavor', '')}, start order "
              f"{row['start_order']}, policy {row.get('policy', '')}", ""]
    if nodes == 1:
        lines.append(f"srun singularity exec --nv {image} {command}")
    else:
        lines.append(f"srun --mpi=pmix singularity exec --nv {image} {command}  # Horovod")
    return "\n".join(lines) + "\n"


def _k8s_name(s: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", s.lower()).strip("-")[:63]


def k8s_job(row: dict[str, Any], image: str = "nvcr.io/nvidia/pytorch:23.10-py3",
            command: str = DEFAULT_COMMAND, queue: str | None = None) -> dict[str, Any]:
    """A ``batch/v1`` Job for one plan row (one Indexed pod per server)."""
    servers = [s for s in str(row["servers"]).split(";") if s]
    nodes = max(1, len(servers))
    name = _k8s_name(f"mdrl-{row['job_id']}")
    labels = {"app.kubernetes.io/managed-by": "gpuscope", "gpuscope/job": name,
              "gpuscope/partition": str(row["partition"])}
    if queue:
        labels["kueue.x-k8s.io/queue-name"] = queue
    limits = {"nvidia.com/gpu": int(row["gpus"]) // nodes, "cpu": int(row["cpus"]) // nodes,
              "memory": f"{_mem_per_node(float(row['mem_gb']), nodes)}Gi"}
    pod: dict[str, Any] = {"restartPolicy": "Never", "containers": [{
        "name": "train", "image": image, "command": ["/bin/sh", "-c", command],
        "resources": {"limits": limits, "requests": dict(limits)}}]}
    if nodes == 1 and servers:
        pod["nodeName"] = servers[0]
    elif servers:
        pod["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{
                    "key": "kubernetes.io/hostname", "operator": "In", "values": servers}]}]}},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": {"matchLabels": {"gpuscope/job": name}},
                "topologyKey": "kubernetes.io/hostname"}]}}
    spec: dict[str, Any] = {"backoffLimit": 0,
                            "activeDeadlineSeconds": int(row["time_limit_s"]),
                            "template": {"metadata": {"labels": dict(labels)}, "spec": pod}}
    if nodes > 1:
        spec.update(completions=nodes, parallelism=nodes, completionMode="Indexed")
    if queue:
        spec["suspend"] = True  # Kueue admits (unsuspends) it
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "labels": dict(labels)}, "spec": spec}


def kueue_objects(cluster: ClusterConfig, partition: str) -> list[dict[str, Any]]:
    """ResourceFlavor + ClusterQueue + LocalQueue of one partition (quota = its capacity)."""
    srv = cluster.servers_in(partition)
    fl = _k8s_name(f"{partition}-flavor")
    cq = _k8s_name(f"{partition}-cq")
    return [
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor",
         "metadata": {"name": fl}, "spec": {"nodeLabels": {"gpuscope/partition": partition}}},
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
         "metadata": {"name": cq},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{
             "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
             "flavors": [{"name": fl, "resources": [
                 {"name": "cpu", "nominalQuota": sum(s.cpus for s in srv)},
                 {"name": "memory", "nominalQuota": f"{int(sum(s.mem_gb for s in srv))}Gi"},
                 {"name": "nvidia.com/gpu", "nominalQuota": sum(s.gpus for s in srv)}]}]}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
         "metadata": {"name": _k8s_name(partition), "namespace": "default"},
         "spec": {"clusterQueue": cq}},
    ]


def _dump(docs: list[dict[str, Any]]) -> str:
    try:
        import yaml
    except ImportError:  # pragma: no cover - JSON is YAML too
        return "\n---\n".join(json.dumps(d, indent=2) for d in docs) + "\n"
    return yaml.safe_dump_all(docs, sort_keys=False)


def write_plan_files(plan: pd.DataFrame, out: str | Path, fmt: str,
                     cluster: ClusterConfig | None = None, kueue: bool = False,
                     image: str | None = None, command: str = DEFAULT_COMMAND) -> list[Path]:
    """Write ``plan.csv`` and the ``slurm/*.sbatch`` or ``k8s/*.yaml`` files under ``out``."""
    out = Path(out)
    from gpuscope.core.io import csv_text

    written = [_atomic_write(out / "plan.csv", csv_text(plan))]
    rows = plan.to_dict("records")
    for r in rows:
        stem = f"{int(r['start_order']):02d}-{r['job_id']}"
        if fmt == "slurm":
            written.append(_atomic_write(out / "slurm" / f"{stem}.sbatch",
                                         sbatch_script(r, image or DEFAULT_IMAGE, command)))
        else:
            q = _k8s_name(str(r["partition"])) if kueue else None
            job = k8s_job(r, command=command, queue=q, **({"image": image} if image else {}))
            written.append(_atomic_write(out / "k8s" / f"{stem}.yaml", _dump([job])))
    if fmt == "k8s" and kueue and cluster is not None:
        objs = [o for p in dict.fromkeys(plan["partition"]) for o in kueue_objects(cluster, p)]
        written.append(_atomic_write(out / "k8s" / "kueue.yaml", _dump(objs)))
    return written
