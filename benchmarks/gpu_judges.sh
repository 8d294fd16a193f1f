#!/usr/bin/env bash
# The dSprites judges (factor classifiers) of CG, trained at GPU scale: the judges that come with the
# package (src/repscope/judges/dsprites, see src/repscope/judges/README.md), each at least 98% identifiable
# accuracy on the 10,000 held-out images. One device call (our other dependencies travel as wheels in
# .whl, see ../shared/gpu/README.md):
#
#   device:  run(command="bash benchmarks/gpu_judges.sh", carry=[".whl"], timeout_s=420)
#
# Two trainings side by side on the one GPU (each a process with its data on the device), attribute-cnn:
# shape, scale, posX and posY on TRAIN images for EPOCHS epochs each, and orientation, the hard one, on
# ORIENTATION_TRAIN images for ORIENTATION_EPOCHS epochs. MODELS="attribute-cnn factor-cnn" adds a third
# process that trains all five with factor-cnn at TRAIN / EPOCHS. Every judge's raw and identifiable test
# accuracy (judge.json: a turned square's symmetric orientation counts as right) is printed and goes to
# $OUT/gpu_judges.txt, also for judges that finished before a time limit (LIMIT s per process) stopped
# the rest. The judges come back as one folder, $OUT/judges-<model>.tar.gz.part-* (`cat PARTS | tar -xz`:
# run directories with their weights), usable as `--judges DIR` or a study's judges_dir.
# ACCELERATOR=cpu TRAIN=2000 ORIENTATION_TRAIN=2000 TEST=500 EPOCHS=1 ORIENTATION_EPOCHS=1 checks the
# script on the CPU (not a measurement).
set -uo pipefail
OUT=${OUT:-/tmp/out}
ACCELERATOR=${ACCELERATOR:-gpu}
TRAIN=${TRAIN:-200000}
EPOCHS=${EPOCHS:-5}
ORIENTATION_TRAIN=${ORIENTATION_TRAIN:-400000}
ORIENTATION_EPOCHS=${ORIENTATION_EPOCHS:-8}
TEST=${TEST:-10000}
LIMIT=${LIMIT:-360}
MODELS=${MODELS:-attribute-cnn}
mkdir -p "$OUT"
LOG="$OUT/gpu_judges.txt"
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
fi
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 REPSCOPE_PROGRESS=lines
export REPSCOPE_HOME=${REPSCOPE_HOME:-/tmp/rhome}
PYTHON=${PYTHON:-python3}
WORK=$(mktemp -d)
{ nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null || echo "no nvidia-smi: $ACCELERATOR"; } | tee "$LOG"
train() {  # NAME MODEL TRAIN EPOCHS FACTOR...: one process, its own folder and log, read when it ends
  local name=$1 model=$2 size=$3 epochs=$4 start=$SECONDS
  shift 4
  local factors=()
  for factor in "$@"; do factors+=(--factor "$factor"); done
  echo "\$ disentangle train-judges --model $model ${factors[*]} --train-size $size --test-size $TEST --epochs $epochs" \
    > "$WORK/$name.txt"
  # into a file, not a pipe: a child process the time limit missed would hold a pipe open for ever
  timeout -k 5 "$LIMIT" "$PYTHON" -m repscope.cli disentangle train-judges --out "$WORK/$name" --overwrite \
    --model "$model" "${factors[@]}" --train-size "$size" --test-size "$TEST" --epochs "$epochs" \
    --accelerator "$ACCELERATOR" >> "$WORK/$name.txt" 2>&1
  echo "# exit $? after $((SECONDS - start)) s (limit $LIMIT s)" >> "$WORK/$name.txt"
}
jobs=()
for model in $MODELS; do
  if [ "$model" = attribute-cnn ]; then
    train attribute-cnn attribute-cnn "$TRAIN" "$EPOCHS" shape scale posX posY &
    train attribute-cnn-orientation attribute-cnn "$ORIENTATION_TRAIN" "$ORIENTATION_EPOCHS" orientation &
    jobs+=(attribute-cnn attribute-cnn-orientation)
  else
    train "$model" "$model" "$TRAIN" "$EPOCHS" shape scale orientation posX posY &
    jobs+=("$model")
  fi
done
wait
for name in "${jobs[@]}"; do
  grep -v -i "warn\|elapsed" "$WORK/$name.txt" | tail -n 40 | tee -a "$LOG"
done
# orientation joins the other four: one folder of judges per model
if [ -d "$WORK/attribute-cnn-orientation/orientation" ] && [ -d "$WORK/attribute-cnn" ]; then
  mv "$WORK/attribute-cnn-orientation/orientation" "$WORK/attribute-cnn/"
fi
for model in $MODELS; do
  # every judge that finished, whatever happened after it
  for judge in "$WORK/$model"/*/judge.json; do
    [ -f "$judge" ] && echo "${judge#"$WORK/"}: $(tr -s ' \n' ' ' < "$judge")" | tee -a "$LOG"
  done
  if [ -d "$WORK/$model" ]; then
    # in parts of 15 MiB: a file coming back from the device machine may hold 16 MiB
    tar -cz -C "$WORK" "$model" | split -b 15m - "$OUT/judges-$model.tar.gz.part-"
  fi
done
rm -rf "$WORK"
