#!/usr/bin/env bash
# One device round on the H200, from the repo root:
#   source .devbundle/activate.sh && bash bench/device_round.sh [smoke|full]
# Compiles every released build, then runs the GPU tests and the benchmarks; logs and
# result files go to $OUT.
set -uo pipefail
mode=${1:-full}
OUT=${OUT:-/tmp/kda-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu --format=csv | tee "$OUT/gpu.txt"
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
python -m kda_tile build --jobs 12 2>&1 | grep -v "^\[" | tee "$OUT/build.log"
if [ "$mode" = smoke ]; then
  python bench/smoke.py 2>&1 | tee "$OUT/smoke.log"
  timeout 300 python bench/bench_peers.py --quick --out "$OUT" 2>&1 | tail -25
else
  timeout 420 python -m pytest -m gpu -q -x --no-header -p no:cacheprovider tests/ 2>&1 | tail -30 | tee "$OUT/pytest_gpu.log"
  timeout 300 python bench/bench_peers.py --out "$OUT" 2>&1 | tail -25
fi
