"""Kubernetes manifests for a SpeCon run, after the authors' deployment (fishercht1995/SpeCon).

``export`` writes:

* ``storage.yaml``: an NFS PersistentVolume and a PersistentVolumeClaim for the loss logs and
  checkpoints (the released repo mounts NFS at ``/mnt/linuxidc``);
* ``rbac.yaml``: a ServiceAccount, a ClusterRole with pods get/list/watch/create/delete, and its
  binding (the scheduler deletes and recreates pods to migrate them);
* ``pods.yaml``: one Pod per job pinned with ``spec.nodeName`` to its initial (DS round-robin)
  worker, with CPU/memory requests and the PVC mounted; the job writes ``/mnt/linuxidc/<job>.csv``
  and checkpoints under ``/mnt/linuxidc/ckpt/<job>/``;
* ``migration-plan.yaml``: the simulator's decisions in time order, each move a ``delete`` of
  the running pod followed by an ``apply`` of the same pod on ``nodeName = to_node`` with
  ``RESTORE_FROM`` set to its checkpoint (application-level checkpoints, as SpeCon does).

Transparent migration (CRIU, ``cuda-checkpoint``) would need the same GPU type and order on
restore (NVIDIA/cuda-checkpoint#18); application-level checkpoints are the portable default.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from gpuscope.core.errors import InputError
from gpuscope.core.io import Column, read_csv, write_text
from gpuscope.core.limits import MAX_INT, MAX_SECONDS

MOUNT = "/mnt/linuxidc"
NAMESPACE = "default"


#: The columns of a ``specon simulate -o`` folder's tables, checked before any manifest is
#: written (a job is ``job<N>``, a worker ``worker-<k>`` or its index, times bounded).
JOB_COLUMNS: tuple[Column, ...] = (
    Column("job_id", "integer", low=0, high=MAX_INT, nan=False), Column("model", "string"),
    Column("platform", "string"), Column("arrival_s", low=0, high=MAX_SECONDS, nan=False),
    Column("finish_s", low=0, high=MAX_SECONDS, nan=False),
    Column("jct_s", low=0, high=MAX_SECONDS, nan=False), Column("worker_first", "string"),
    Column("worker_last", "string"), Column("n_moves", "integer", low=0, nan=False))
DECISION_COLUMNS: tuple[Column, ...] = (
    Column("time", low=0, high=MAX_SECONDS, nan=False), Column("job", "string"),
    Column("original_node", "string"), Column("to_node", "string"), Column("kind", "string"))
_PATTERNS = {"job": r"job\d{1,9}", "worker_first": r"(worker-)?\d{1,6}",
             "worker_last": r"(worker-)?\d{1,6}", "original_node": r"worker-\d{1,6}",
             "to_node": r"(worker-\d{1,6})?", "kind": r"M|R|stay",
             "model": r"[A-Za-z0-9._-]{0,63}", "platform": r"[A-Za-z0-9._-]{0,63}"}


def load_sim_dir(folder: Path, policy: str) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """The ``jobs-<policy>.csv`` and ``decisions-<policy>.csv`` of a ``specon simulate -o``
    folder, each column checked against its contract (one line naming the file, column
    and row otherwise)."""
    out = []
    for name, cols in ((f"jobs-{policy}.csv", JOB_COLUMNS),
                       (f"decisions-{policy}.csv", DECISION_COLUMNS)):
        path = folder / name
        text_cols = {c.name: str for c in cols if c.kind == "string"}
        df = read_csv(path, "SpeCon table", columns=cols, dtype=text_cols,
                      keep_default_na=False)
        for c, pattern in _PATTERNS.items():
            if c in df.columns:
                bad = ~df[c].astype(str).str.fullmatch(pattern)
                if bad.any():
                    i = int(bad.to_numpy().argmax())
                    raise InputError(f"SpeCon table {path}, column {c!r}: row {i + 1} is not "
                                     f"of the form {pattern} ({str(df[c].iloc[i])[:40]!r})")
        out.append([{k: str(v) for k, v in r.items()} for r in df.to_dict("records")])
    return out[0], out[1]


def storage(nfs_server: str) -> list[dict[str, Any]]:
    pv = {"apiVersion": "v1", "kind": "PersistentVolume",
          "metadata": {"name": "specon-logs", "labels": {"app": "specon"}},
          "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteMany"],
                   "persistentVolumeReclaimPolicy": "Retain",
                   "nfs": {"server": nfs_server, "path": MOUNT}}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": "specon-logs", "namespace": NAMESPACE},
           "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "",
                    "volumeName": "specon-logs", "resources": {"requests": {"storage": "10Gi"}}}}
    return [pv, pvc]


def rbac() -> list[dict[str, Any]]:
    sa = {"apiVersion": "v1", "kind": "ServiceAccount",
          "metadata": {"name": "specon-scheduler", "namespace": NAMESPACE}}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "specon-scheduler"},
            "rules": [{"apiGroups": [""], "resources": ["pods"],
                       "verbs": ["get", "list", "watch", "create", "delete"]},
                      {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "specon-scheduler"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "specon-scheduler"},
               "subjects": [{"kind": "ServiceAccount", "name": "specon-scheduler",
                             "namespace": NAMESPACE}]}
    return [sa, role, binding]


def node_name(worker: str | int) -> str:
    """``worker-k`` (1-based, as in decisions.csv) from a 0-based index or a name."""
    return f"worker-{int(worker) + 1}" if str(worker).isdigit() else str(worker)


def pod(job: dict[str, str], node: str, image: str, cpu: str, memory: str,
        restore: bool = False) -> dict[str, Any]:
    name = f"job{job['job_id']}"
    env = [{"name": "JOB_NAME", "value": name}, {"name": "LOSS_LOG", "value": f"{MOUNT}/{name}.csv"},
           {"name": "CHECKPOINT_DIR", "value": f"{MOUNT}/ckpt/{name}"}]
    if restore:
        env.append({"name": "RESTORE_FROM", "value": f"{MOUNT}/ckpt/{name}"})
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE,
                         "labels": {"app": "specon-job", "model": job.get("model", "")}},
            "spec": {"nodeName": node, "restartPolicy": "Never",
                     "containers": [{"name": name, "image": image,
                                     "command": ["python", "train.py", f"{MOUNT}/{name}.csv", name],
                                     "env": env,
                                     "resources": {"requests": {"cpu": cpu, "memory": memory}},
                                     "volumeMounts": [{"name": "logs", "mountPath": MOUNT}]}],
                     "volumes": [{"name": "logs",
                                  "persistentVolumeClaim": {"claimName": "specon-logs"}}]}}


def plan(jobs: list[dict[str, str]], decisions: list[dict[str, str]], image: str, cpu: str,
         memory: str) -> list[dict[str, Any]]:
    """Ordered steps: each move is ``delete`` then ``apply`` on the destination node."""
    by_id = {f"job{j['job_id']}": j for j in jobs}
    steps: list[dict[str, Any]] = []
    for d in sorted(decisions, key=lambda r: float(r["time"])):
        if not d["to_node"]:
            continue
        if d["job"] not in by_id:
            raise InputError(f"decision names unknown job {d['job']!r}")
        base = {"time_s": float(d["time"]), "job": d["job"], "kind": d["kind"]}
        steps.append({**base, "action": "delete", "node": d["original_node"],
                      "command": f"kubectl delete pod {d['job']} -n {NAMESPACE} --wait=true"})
        manifest = pod(by_id[d["job"]], d["to_node"], image, cpu, memory, restore=True)
        steps.append({**base, "action": "apply", "node": d["to_node"],
                      "command": "kubectl apply -f -", "manifest": copy.deepcopy(manifest)})
    return steps


def _write(path: Path, docs: list[dict[str, Any]]) -> Path:
    return write_text(path, yaml.safe_dump_all(docs, sort_keys=False), what="manifest",
                      check=False)


def export(out: Path, jobs: list[dict[str, str]], decisions: list[dict[str, str]],
           image: str = "wzheng33/birnn", nfs_server: str = "10.10.1.1", cpu: str = "2",
           memory: str = "4Gi") -> list[Path]:
    """Write storage.yaml, rbac.yaml, pods.yaml and migration-plan.yaml under ``out``."""
    if not jobs:
        raise InputError("no jobs to export")
    pods = [pod(j, node_name(j["worker_first"]), image, cpu, memory) for j in jobs]
    return [_write(out / "storage.yaml", storage(nfs_server)), _write(out / "rbac.yaml", rbac()),
            _write(out / "pods.yaml", pods),
            _write(out / "migration-plan.yaml",
                   [{"kind": "SpeConMigrationPlan", "steps": plan(jobs, decisions, image, cpu, memory)}])]


__all__ = ["export", "load_sim_dir", "node_name", "plan", "pod", "rbac", "storage"]
