#!/usr/bin/env bash
# The GPU numbers of lesson 09's full profile, in one run (about 8 minutes on one H200):
# throughput and model FLOP utilisation of the tiny GPT, then the full-profile experiment itself.
#   bash benchmarks/lm_gpu.sh OUT_DIR [PEAK_TFLOPS]
# PEAK_TFLOPS is the device's dense fp32 peak (67 for an H100/H200 SXM; training runs in fp32).
set -euo pipefail
out=${1:?give an output folder}
peak=${2:-67}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/gpu.txt"
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" | tee -a "$out/gpu.txt"
python3 benchmarks/lm_throughput.py --profile quick full --device cuda --steps 100 --peak-tflops "$peak" | tee "$out/throughput.txt"
python3 benchmarks/lm_throughput.py --profile full --device cuda --steps 100 --models 4 --peak-tflops "$peak" | tee -a "$out/throughput.txt"
python3 -m ctxlab.cli lm --profile full --device cuda --gammas 1.0 0.5 --seeds 2 --no-progress \
    --out "$out" --json "$out/lm_full.json" | tee "$out/lm_full.txt"
