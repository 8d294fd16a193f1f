#!/usr/bin/env bash
# The CANDLE rotation judge (CG's hardest) trained at GPU scale on renders packed into parts
# (benchmarks/candle_parts.py): several attribute-cnn widths side by side on the one GPU, on the same
# train / validation / test split as the CPU runs (the same files in the same order). Two device calls,
# the second within the machine's idle time of the first (its renders stay in $DATA):
#
#   here:    python benchmarks/candle_parts.py pack RENDERS .gpu-candle-1 --parts 2   # then move part-2
#            mv .gpu-candle-1/part-2 .gpu-candle-2/         # into .gpu-candle-2 (both in .git/info/exclude)
#   device:  run(command="PARTS=.gpu-candle-1 bash benchmarks/gpu_candle_rotation.sh upload", carry=[".gpu-candle-1"])
#   device:  run(command="PARTS=.gpu-candle-2 bash benchmarks/gpu_candle_rotation.sh train",
#                carry=[".gpu-candle-2", ".whl"], timeout_s=480)
#
# On an H200, for the 19,440 cube and torus images of render seeds 1-12 (README, CANDLE judges), the
# defaults trained the three runs side by side in 283-343 s: identifiable test accuracy 0.987 (width 4,
# 300 and 400 epochs) and 0.983 (width 2, 400 epochs).
#
# `train` unpacks its part, refuses to go on unless $DATA holds EXPECTED images, times one training step
# of each width side by side (batch 128 on the device, the augmentation included), and sizes each run's
# epochs to fit BUDGET seconds: min(its most, BUDGET / an epoch's estimated time). Each run is
#   repscope disentangle train-judges --data candle --factor rotation --data-param data_dir=$DATA
#     --network-param first_stride=1 --network-param readout=max --network-param width=W
#     --model-param augment=shift --model-param 'augment_ranges=[[-6, 6]]' --epochs E --accelerator gpu
# RUNS lists them as WIDTH:MOST_EPOCHS (a width twice, the second with fewer epochs: one that ends
# before LIMIT even if the estimate is off). Every judge's raw and identifiable test accuracy goes to
# $OUT/gpu_candle_rotation.txt, and each judge comes back as $OUT/rotation-K-wW-eE.tar.gz (its run
# folder with its weights: the `rotation` folder in it is a rotation judge for `--judges DIR`).
# ACCELERATOR=cpu EXPECTED=N RUNS=1:1 BUDGET=60 checks the script on the CPU (not a measurement).
set -uo pipefail
MODE=${1:-train}
PARTS=${PARTS:?name the folder of parts (PARTS=.gpu-candle-1)}
OUT=${OUT:-/tmp/out}
DATA=${DATA:-/tmp/candle-rotation}
EXPECTED=${EXPECTED:-19440}
RUNS=${RUNS:-4:400 4:300 2:400}
BUDGET=${BUDGET:-700}
LIMIT=${LIMIT:-430}
ACCELERATOR=${ACCELERATOR:-gpu}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT" "$DATA"
LOG="$OUT/gpu_candle_rotation.txt"
compgen -G "$PARTS/part-*/part.json" > /dev/null || { echo "$PARTS: no part-*/part.json (candle_parts.py pack)"; exit 1; }
for part in "$PARTS"/part-*; do
  "$PYTHON" benchmarks/candle_parts.py unpack "$part" "$DATA" | tee -a "$LOG" || exit 1
done
have=$(find "$DATA" -name '*.png' | wc -l)
echo "$DATA holds $have images" | tee -a "$LOG"
[ "$MODE" = upload ] && exit 0
if [ "$have" -ne "$EXPECTED" ]; then
  echo "expected $EXPECTED images: upload the other parts first (a fresh machine holds none)" | tee -a "$LOG"
  exit 2
fi
if [ "$ACCELERATOR" = gpu ] && compgen -G ".whl/*.whl" > /dev/null; then  # the device has no venv
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 REPSCOPE_PROGRESS=lines
export REPSCOPE_HOME=${REPSCOPE_HOME:-/tmp/rhome}
WORK=$(mktemp -d)
{ nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null || echo "no nvidia-smi: $ACCELERATOR"; } | tee -a "$LOG"
# the split's training rows: 80% train, of which 10% validate (repscope.studies.candle.cg)
steps=$(( (EXPECTED * 8 / 10 * 9 / 10 + 127) / 128 ))
probe() {  # WIDTH: seconds per training step at batch 128, alone on the host, beside the other widths
  "$PYTHON" - "$1" "$ACCELERATOR" <<'EOF'
import sys, time
import torch
import torch.nn.functional as F
from repscope.train.tasks.supervised import SupervisedTask
width, accelerator = int(sys.argv[1]), sys.argv[2]
device = "cuda" if accelerator == "gpu" else "cpu"
params = {"first_stride": 1, "readout": "max", "width": width}
task = SupervisedTask(network="attribute-cnn", num_outputs=6, image_shape=[3, 64, 64], network_params=params,
                      augment="shift", augment_ranges=[[-6, 6]]).to(device)
optimiser = torch.optim.Adam(task.parameters(), 2e-3)
images = torch.randint(0, 256, (128, 3, 64, 64), dtype=torch.uint8, device=device)
targets = torch.randint(0, 6, (128,), device=device)
warm, timed = (10, 60) if device == "cuda" else (1, 2)
for step in range(warm + timed):
    if step == warm:
        torch.cuda.synchronize() if device == "cuda" else None
        start = time.perf_counter()
    loss = F.cross_entropy(task(task.augmented(images)), targets)
    optimiser.zero_grad()
    loss.backward()
    optimiser.step()
torch.cuda.synchronize() if device == "cuda" else None
print(f"{(time.perf_counter() - start) / timed:.5f}")
EOF
}
widths=()
for run in $RUNS; do widths+=("${run%%:*}"); done
for width in "${widths[@]}"; do probe "$width" > "$WORK/probe-$width" 2>&1 & done
wait
train() {  # NAME WIDTH EPOCHS: one process, its own folder and log
  local name=$1 width=$2 epochs=$3 start=$SECONDS
  timeout -k 5 "$LIMIT" "$PYTHON" -m repscope.cli disentangle train-judges --out "$WORK/$name" --overwrite \
    --data candle --factor rotation --data-param "data_dir=$DATA" \
    --network-param first_stride=1 --network-param readout=max --network-param "width=$width" \
    --model-param augment=shift --model-param 'augment_ranges=[[-6, 6]]' --epochs "$epochs" \
    --accelerator "$ACCELERATOR" > "$WORK/$name.txt" 2>&1
  echo "# exit $? after $((SECONDS - start)) s (limit $LIMIT s)" >> "$WORK/$name.txt"
}
names=()
k=0
for run in $RUNS; do
  k=$((k + 1))
  width=${run%%:*} most=${run##*:}
  step=$(tail -1 "$WORK/probe-$width")
  # an epoch: the timed steps plus the trainer's own work (about 3 ms a step) and half a second of
  # validation and logging; the budget leaves the start-up (reading the renders) out. On an H200 this
  # estimate was about twice the time taken (width 4: 1.7 s estimated, 0.8-0.9 s measured an epoch)
  epochs=$("$PYTHON" -c "print(max(1, min($most, int($BUDGET / ($steps * ($step + 0.003) + 0.5)))))" 2>/dev/null) || {
    cat "$WORK/probe-$width" | tee -a "$LOG"; exit 1; }
  echo "width $width: $step s a step (probe), $steps steps an epoch -> $epochs epochs (most $most)" | tee -a "$LOG"
  # the run's place in RUNS keeps two runs that end with the same width and epochs apart
  names+=("rotation-$k-w$width-e$epochs")
  train "rotation-$k-w$width-e$epochs" "$width" "$epochs" &
done
wait
for name in "${names[@]}"; do
  { echo "== $name"; grep -E "identifiable|Error|error|exit" "$WORK/$name.txt" | tail -5; } | tee -a "$LOG"
  [ -f "$WORK/$name/rotation/judge.json" ] && cat "$WORK/$name/rotation/judge.json" >> "$LOG"
done
# one archive per judge, its weights without the optimizer's state (last.ckpt): 2.8-10.8 MB each at
# widths 2 and 4, under the 16 MiB a file brings back
for name in "${names[@]}"; do
  [ -d "$WORK/$name" ] && tar -czf "$OUT/$name.tar.gz" -C "$WORK" --exclude='last.ckpt' "$name"
done
tar -czf "$OUT/logs.tar.gz" -C "$WORK" "${names[@]/%/.txt}"
ls -la "$OUT"
