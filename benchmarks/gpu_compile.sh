#!/usr/bin/env bash
# The device check of trainer.compile (issue 27) as one call on the GPU machine, after gpu_session.sh
# showed the multimodal step bound by the host (GPU ~12% busy at batch 32):
#
#   device:  run(command="bash benchmarks/gpu_compile.sh", carry=[".whl"], timeout_s=400)
#
# The paper's MVAE at batch 32 and the conv64 beta-VAE at batch 64, device path only, eager against
# torch.compile's default and reduce-overhead (CUDA graphs) modes; the compile time is in the exit line.
# Writes $OUT/gpu_compile.txt.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 REPSCOPE_HOME=/tmp/rhome REPSCOPE_PROGRESS=lines
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/gpu_compile.txt"
step() {  # step SECONDS COMMAND...: run COMMAND, append its output to $OUT/gpu_compile.txt
  local limit=$1
  shift
  echo "\$ $*" >> "$OUT/gpu_compile.txt"
  local start=$SECONDS
  timeout "$limit" "$@" 2>&1 | grep -v -i warn | tee -a "$OUT/gpu_compile.txt"
  echo "# exit ${PIPESTATUS[0]} after $((SECONDS - start)) s (limit $limit s)" | tee -a "$OUT/gpu_compile.txt"
}
BENCH=(python3 benchmarks/gpu_throughput.py --no-loader --steps 100 --warmup 10)
step 40 "${BENCH[@]}" --models mvae --batches 32
step 130 "${BENCH[@]}" --models mvae --batches 32 --compile default
step 120 "${BENCH[@]}" --models mvae --batches 32 --compile reduce-overhead
step 60 "${BENCH[@]}" --models beta-vae --batches 64 --compile reduce-overhead
