#!/usr/bin/env bash
# The course at full scale on one GPU, in one run of about 8 minutes (H200): ensemble speed-ups, the
# full staircase and attention profiles, and the GPT at fp32 / TF32 / bf16 (benchmarks/gpu.py says what
# each part measures). Writes OUT/gpu.json, OUT/gpu.txt (the printed tables) and the figures.
#   bash benchmarks/gpu.sh OUT                     # on a machine with a CUDA GPU
#   bash benchmarks/gpu.sh OUT --profile tiny      # the same script end to end on a CPU, in seconds
set -euo pipefail
out=${1:?give an output folder}
shift
python=${PYTHON:-python3}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null || echo "no GPU (nvidia-smi not found)"
  "$python" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"; } | tee "$out/device.txt"
"$python" "$(dirname "$0")/gpu.py" "$out" "$@" | tee "$out/gpu.txt"
