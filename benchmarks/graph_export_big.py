"""Big models export fast on CPU: the training-step graph of GPT-2 large
(774 M parameters, batch 4 x 1024 tokens, AdamW) in <= 10 s and <= 2 GB peak memory, 2 cores.

    .venv/bin/python benchmarks/graph_export_big.py [--repeat 3]

Each case runs in a fresh subprocess limited to 2 intra-op threads; the time is one
``export_graph(job)`` (build the model on the meta device + warm-up step + traced step), after
imports; the memory is the subprocess's peak resident set (``ru_maxrss``, imports included).
Cases: catalog ``gpt2_large`` (plain PyTorch), ``--hf gpt2:n_layer=36,n_embd=1280,n_head=20``
(transformers), ``llama`` (TinyLlama-1.1B) and ``gpt2_large`` in amp-bf16 (fake-tensor trace).
Prints the figure, the target and PASS/MISS; quote ``uptime`` with it (shared machine).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

TARGET_S = 10.0
TARGET_MB = 2048.0

_CHILD = r"""
import json, resource, sys, time
import torch
torch.set_num_threads(2)
from gpuscope.graphs import export_graph
from gpuscope.jobs.spec import JobSpec
import gpuscope.graphs.frontends.torch, gpuscope.workloads.workload  # imports are not export time
job = JobSpec.from_dict(json.loads(sys.argv[1]))
if job.hf:
    import transformers  # noqa: F401
t0 = time.perf_counter()
g = export_graph(job)
dt = time.perf_counter() - t0
print(json.dumps({"s": dt, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "nodes": g.num_nodes, "params": g.meta["param_count"],
                  "tflops": g.total_flops() / 1e12}))
"""

CASES = {
    "gpt2_large (catalog)": {"model": "gpt2_large", "dataset": "tokens:seq=1024"},
    "gpt2 large (--hf)": {"hf": "gpt2:n_layer=36,n_embd=1280,n_head=20",
                          "dataset": "tokens:seq=1024"},
    "llama 1.1B (catalog)": {"model": "llama", "dataset": "tokens:seq=1024"},
    "gpt2_large amp-bf16": {"model": "gpt2_large", "dataset": "tokens:seq=1024",
                            "precision": "amp-bf16"},
}


def run(case: dict, repeat: int) -> dict:
    job = {"optimizer": "adamw", "batch_size": 4, "epochs": 1, **case}
    env = {**os.environ, "OMP_NUM_THREADS": "2"}
    best: dict = {}
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(job)], env=env,
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        if not best or r["s"] < best["s"]:
            best = {**r, "peak_mb": max(r["peak_mb"], best.get("peak_mb", 0.0))}
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per case (best time, max memory)")
    a = ap.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} (1-min average), cores: {os.cpu_count()}")
    print(f"{'case':<24} {'export s':>9} {'peak MB':>8} {'nodes':>6} {'params M':>9} "
          f"{'TFLOP/step':>10}")
    for name, case in CASES.items():
        r = run(case, a.repeat)
        print(f"{name:<24} {r['s']:>9.2f} {r['peak_mb']:>8.0f} {r['nodes']:>6} "
              f"{r['params'] / 1e6:>9.1f} {r['tflops']:>10.2f}")
        if name.startswith("gpt2_large (catalog)"):
            ok = r["s"] <= TARGET_S and r["peak_mb"] <= TARGET_MB
            print(f"  target: <= {TARGET_S:.0f} s and <= {TARGET_MB:.0f} MB -> "
                  f"{r['s'] / TARGET_S:.2f}x time, {r['peak_mb'] / TARGET_MB:.2f}x memory: "
                  f"{'PASS' if ok else 'MISS'}")


if __name__ == "__main__":
    main()
