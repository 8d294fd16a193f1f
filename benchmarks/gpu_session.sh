#!/usr/bin/env bash
# The device check of issue 27 as one call on the GPU machine (its python3 has torch, Lightning,
# numpy, scikit-learn...; our other dependencies travel as wheels in .whl, see ../shared/gpu/README.md):
#
#   here:    the wheel download of ../shared/gpu/README.md into .whl (git-ignored)
#   device:  run(command="bash benchmarks/gpu_session.sh", carry=[".whl"], timeout_s=540)
#
# Writes $OUT/gpu.txt (the card), $OUT/gpu_throughput.txt (the benchmark's table at 32-bit, four MVAE
# runs sharing the GPU, two families in bf16-mixed) and $OUT/mmvae_evaluate.txt (the evaluation's
# model steps on 10,000 samples).
set -euo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 REPSCOPE_HOME=/tmp/rhome REPSCOPE_PROGRESS=lines
nvidia-smi --query-gpu=name,memory.total --format=csv | tee "$OUT/gpu.txt"
timeout 300 python3 benchmarks/gpu_throughput.py --steps 150 --warmup 20 2>&1 | tee "$OUT/gpu_throughput.txt"
timeout 90 python3 benchmarks/gpu_throughput.py --models mvae --share 4 --steps 150 2>&1 \
  | tee -a "$OUT/gpu_throughput.txt" || true
timeout 60 python3 benchmarks/gpu_throughput.py --models mvae,beta-vae --precision bf16-mixed --steps 100 \
  2>&1 | tee -a "$OUT/gpu_throughput.txt" || true
timeout 60 python3 benchmarks/mmvae_evaluate.py --n 10000 --k 30 --config mmvae-cdsprites-paper --no-cpu \
  2>&1 | tee "$OUT/mmvae_evaluate.txt" || true
