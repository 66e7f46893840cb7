# %% [markdown]
# # Seed 001 allocation experiments (Tables 8–20), reproduced
#
# Runs top to bottom: `.venv/bin/python notebooks/allocator_seed001.py`.
# Needs the bundled checkpoints (`datasets/checkpoints/<device>.pt`, `<device>-driple.pt`;
# or set `GPUSCOPE_MODEL_DIR`) and the emulated ground truth
# (`datasets/emulated/<device>/labels.parquet`). Every table states whether its ground truth
# is measured or emulated.

# %%
import os
from pathlib import Path

from gpuscope.allocator.inputs import prepare, seed_workload, table8_jobs
from gpuscope.allocator.reproduce import (
    SEED_CLUSTER,
    ablation,
    available_policies,
    compare_policies,
    comparison_md,
    policies_for,
    reproduce_gavel,
    table9_md,
)
from gpuscope.allocator.truth import truth_steps
from gpuscope.cluster.counts import ClusterSpec
from gpuscope.core.data import external_dir

ROOT = Path(__file__).resolve().parents[1] if "__file__" in globals() else Path.cwd()
MODELS = Path(os.environ.get("GPUSCOPE_MODEL_DIR", ROOT / "datasets" / "checkpoints"))
TRUTH = ROOT / "datasets" / "emulated"
cluster = ClusterSpec.parse(SEED_CLUSTER)
policies = policies_for(MODELS, cluster)
STEPS = truth_steps(TRUTH, cluster.devices)  # the emulated campaign's epoch length
print("steps per epoch of the ground-truth runs:", STEPS)

# %% [markdown]
# ## Tables 8, 9 and 14: six jobs one minute apart

# %%
inp8 = prepare(table8_jobs(STEPS), cluster, MODELS, TRUTH, policies)
print(table9_md(inp8))

# %% [markdown]
# ## Tables 10–16: the Table 4 workload (128 jobs, gan counted twice), FIFO and SJF

# %%
jobs = seed_workload(128, steps_per_epoch=STEPS)
inp = prepare(jobs, cluster, MODELS, TRUTH, policies)
rows = compare_policies(inp, available_policies(inp))
print(comparison_md(inp, "Table 4 workload", rows, "All jobs queued at t = 0."))

# %% [markdown]
# ## Tables 17–20: ablations of Eq. 2's resource set

# %%
alone, without = ablation(inp)
print(comparison_md(inp, "One resource alone (Tables 17–18)", alone))
print(comparison_md(inp, "All but one resource (Tables 19–20)", without))

# %% [markdown]
# ## Measured ground truth: Gavel's throughputs (execution-time policies only)

# %%
GAVEL = external_dir() / "gavel"  # Gavel's throughputs JSON and traces, read by path
if GAVEL.is_dir():
    print(reproduce_gavel(GAVEL, "/tmp/gpuscope-notebook/tables", "/tmp/gpuscope-notebook/fig"))
