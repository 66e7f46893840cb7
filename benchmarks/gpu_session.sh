#!/usr/bin/env bash
# One real-GPU session in one command (about 9 minutes): environment record, the in-process
# step-time sweep (campaigns/gpu-steps.toml -> steps.csv) and a short NVML-sampled profiling
# campaign (campaigns/gpu-measured.toml -> runs/<device>, labels.csv), everything under $OUT.
# Afterwards, on any machine: benchmarks/emulator_vs_gpu.py compares the emulator and the
# predictor with what was measured.   Usage: OUT=dir bash benchmarks/gpu_session.sh h100
set -uo pipefail
DEV=${1:-h100}
OUT=${OUT:-gpu-out}
PY=${PYTHON:-python3}
STEPS_S=${STEPS_S:-240}
CAMPAIGN_S=${CAMPAIGN_S:-270}
export PYTHONUNBUFFERED=1 PYTHONPATH=${PYTHONPATH:-}:$PWD
mkdir -p "$OUT"
{
  date -u; nvidia-smi; nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit,clocks.max.sm --format=csv
  "$PY" -c "import torch, platform; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), torch.cuda.get_device_name(), 'python', platform.python_version())"
  nproc; free -g; grep -m1 'model name' /proc/cpuinfo
} > "$OUT/env.txt" 2>&1
echo "== steps (budget ${STEPS_S} s)"
timeout "$STEPS_S" "$PY" -m gpuscope profile steps campaigns/gpu-steps.toml \
  -o "$OUT/steps.csv" --budget-s $((STEPS_S - 30)) --quiet
echo "steps rc=$? rows=$(($(wc -l < "$OUT/steps.csv") - 1))"
echo "== campaign (budget ${CAMPAIGN_S} s)"
timeout "$CAMPAIGN_S" "$PY" -m gpuscope profile run campaigns/gpu-measured.toml \
  --device-name "$DEV" --out "runs/$DEV" --quiet
echo "campaign rc=$?"
"$PY" -m gpuscope profile label "runs/$DEV" -o "$OUT/labels.csv"
tar czf "$OUT/runs.tar.gz" "runs/$DEV"
echo "== done: $(date -u)"
