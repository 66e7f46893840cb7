#!/usr/bin/env bash
# One real-GPU session in one command (about 8 minutes), everything under $OUT:
#   env.txt          what ran: date, nvidia-smi, torch/CUDA/cuDNN versions, host
#   kernels.parquet  `gpuscope profile kernels` (KERNELS_MIN minutes: GEMM/BMM, conv, element-wise,
#                    softmax, layer norm, optimizer foreach ops in fp32/tf32/fp16/bf16)
#   fit/             `gpuscope emulator fit` on it: devices.toml, kernel_params.json, fit.json
#   steps.csv        `gpuscope profile steps gpu-steps-short` (transformers and CNNs in
#                    fp32/tf32/amp-fp16/amp-bf16, STEPS_S seconds)
#   labels.csv, runs.tar.gz  only with CAMPAIGN_S > 0: a short NVML-sampled profiling campaign
# Rerunning resumes the kernel sweep and the step sweep (rows already measured are skipped).
# Afterwards, on any machine: benchmarks/emulator_vs_gpu.py compares the emulator with steps.csv;
# `gpuscope emulate kernels --input $OUT/kernels.parquet --devices DEV -o pred.parquet` the
# kernel model with the kernels.
# Usage: OUT=dir bash benchmarks/gpu_session.sh h100 [LIKE]   (LIKE: a catalog GPU to start a
# GPU the catalog lacks from, e.g. OUT=dir bash benchmarks/gpu_session.sh my-gpu h100)
set -uo pipefail
DEV=${1:-h100}
LIKE=${2:-}
OUT=${OUT:-gpu-out}
PY=${PYTHON:-python3}
KERNELS_MIN=${KERNELS_MIN:-4}
STEPS_S=${STEPS_S:-150}
CAMPAIGN_S=${CAMPAIGN_S:-0}
export PYTHONUNBUFFERED=1 PYTHONPATH=${PYTHONPATH:-}:$PWD
mkdir -p "$OUT"
{
  date -u; nvidia-smi; nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit,clocks.max.sm --format=csv
  "$PY" -c "import torch, platform; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), torch.cuda.get_device_name(), 'python', platform.python_version())"
  nproc; free -g; grep -m1 'model name' /proc/cpuinfo
} > "$OUT/env.txt" 2>&1
echo "== kernels (budget ${KERNELS_MIN} min)"
timeout $((KERNELS_MIN * 60 + 60)) "$PY" -m gpuscope profile kernels --device-name "$DEV" \
  -o "$OUT/kernels.parquet" --budget-min "$KERNELS_MIN" --quiet
echo "kernels rc=$?"
echo "== steps (budget ${STEPS_S} s)"
timeout "$STEPS_S" "$PY" -m gpuscope profile steps gpu-steps-short \
  -o "$OUT/steps.csv" --budget-s $((STEPS_S - 30)) --target-s 1 --quiet
echo "steps rc=$? rows=$(($(wc -l < "$OUT/steps.csv") - 1))"
echo "== fit"
timeout 120 "$PY" -m gpuscope emulator fit --kernels "$OUT/kernels.parquet" --device "$DEV" \
  ${LIKE:+--like "$LIKE"} -o "$OUT/fit"
echo "fit rc=$?"
if [ "$CAMPAIGN_S" -gt 0 ]; then
  echo "== campaign (budget ${CAMPAIGN_S} s)"
  timeout "$CAMPAIGN_S" "$PY" -m gpuscope profile run campaigns/gpu-measured.toml \
    --device-name "$DEV" --out "runs/$DEV" --quiet
  echo "campaign rc=$?"
  "$PY" -m gpuscope profile label "runs/$DEV" -o "$OUT/labels.csv"
  tar czf "$OUT/runs.tar.gz" "runs/$DEV"
fi
echo "== done: $(date -u)"
