#!/usr/bin/env bash
# The device check of issue 27 as one call on the GPU machine (its python3 has torch, Lightning,
# numpy, scikit-learn...; our other dependencies travel as wheels in .whl, see ../shared/gpu/README.md):
#
#   here:    the wheel download of ../shared/gpu/README.md into .whl (git-ignored)
#   device:  run(command="bash benchmarks/gpu_session.sh", carry=[".whl"], timeout_s=500)
#
# Each step has its own time limit (about 470 s in all) and a step that runs out does not stop the
# others; every line is written to $OUT as it comes:
#   gpu.txt              the card
#   gpu_throughput.txt   the benchmark's table at 32-bit, then four MVAE runs sharing the GPU, then two
#                        families in bf16-mixed
#   end_to_end.txt       `mmvae train mmvae-cdsprites-paper` for one epoch on the GPU, then
#                        `mmvae evaluate --n 10000` of that run, each timed as a user would see it
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 REPSCOPE_HOME=/tmp/rhome REPSCOPE_PROGRESS=lines
nvidia-smi --query-gpu=name,memory.total --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, lightning; print('torch', torch.__version__, 'lightning', lightning.__version__)" \
  | tee -a "$OUT/gpu.txt"
step() {  # step SECONDS FILE COMMAND...: run COMMAND, append its output to $OUT/FILE, report a timeout
  local limit=$1 file=$2
  shift 2
  echo "\$ $*" >> "$OUT/$file"
  local start=$SECONDS
  timeout "$limit" "$@" 2>&1 | tee -a "$OUT/$file"
  local rc=${PIPESTATUS[0]}
  echo "# exit $rc after $((SECONDS - start)) s (limit $limit s)" | tee -a "$OUT/$file"
}
step 200 gpu_throughput.txt python3 benchmarks/gpu_throughput.py --steps 80 --warmup 10
step 50 end_to_end.txt python3 -m repscope mmvae train mmvae-cdsprites-paper --epochs 1 --no-evaluate \
  --accelerator gpu --out /tmp/run-paper
step 110 end_to_end.txt python3 -m repscope mmvae evaluate /tmp/run-paper --n 10000 --k 30 --accelerator gpu
step 60 gpu_throughput.txt python3 benchmarks/gpu_throughput.py --models mvae --share 4 --steps 80 --warmup 10
step 45 gpu_throughput.txt python3 benchmarks/gpu_throughput.py --models mvae,beta-vae --precision bf16-mixed \
  --steps 80 --warmup 10
