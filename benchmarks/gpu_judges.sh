#!/usr/bin/env bash
# The dSprites factor classifiers CG judges with, trained at GPU scale (issue 29: judges of at least 98%
# on what the images show). One device call (our other dependencies travel as wheels in .whl, see
# ../shared/gpu/README.md):
#
#   device:  run(command="bash benchmarks/gpu_judges.sh", carry=[".whl"], timeout_s=420)
#
# Trains the five dSprites judges (shape, scale, orientation, posX, posY) twice, with attribute-cnn and
# with factor-cnn, side by side on the one GPU (each a process with the data on the device), on TRAIN
# images for EPOCHS epochs each, and prints every judge's raw and identifiable test accuracy (judge.json:
# a turned square's symmetric orientation counts as right). Each model's folder comes back as
# $OUT/judges-<model>.tar.gz.part-* (run directories with their weights; `cat PARTS | tar -xz`), usable as
# `repscope disentangle score RUN --classifiers DIR`. Each model has its own time limit; a judge finished before the
# limit keeps its judge.json. The log is $OUT/gpu_judges.txt. ACCELERATOR=cpu TRAIN=2000 TEST=500
# EPOCHS=1 checks the script on the CPU (not a measurement).
set -uo pipefail
OUT=${OUT:-/tmp/out}
ACCELERATOR=${ACCELERATOR:-gpu}
TRAIN=${TRAIN:-200000}
TEST=${TEST:-10000}
EPOCHS=${EPOCHS:-5}
LIMIT=${LIMIT:-360}
MODELS=${MODELS:-attribute-cnn factor-cnn}
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
train() {  # one model's five judges; its own log, read when it ends
  local model=$1 start=$SECONDS
  # into a file, not a pipe: a child process the time limit missed would hold a pipe open for ever
  timeout -k 5 "$LIMIT" "$PYTHON" -m repscope.cli disentangle classifiers --out "$WORK/judges-$model" --overwrite \
    --model "$model" --train-size "$TRAIN" --test-size "$TEST" --epochs "$EPOCHS" --accelerator "$ACCELERATOR" \
    > "$WORK/$model.txt" 2>&1
  echo "# exit $? after $((SECONDS - start)) s (limit $LIMIT s)" >> "$WORK/$model.txt"
}
for model in $MODELS; do
  train "$model" &
done
wait
for model in $MODELS; do
  echo "\$ disentangle classifiers --model $model --train-size $TRAIN --test-size $TEST --epochs $EPOCHS" | tee -a "$LOG"
  grep -v -i "warn\|elapsed" "$WORK/$model.txt" | tail -n 40 | tee -a "$LOG"
  # every judge that finished, whatever happened after it
  for judge in "$WORK/judges-$model"/*/judge.json; do
    [ -f "$judge" ] && echo "${judge#"$WORK/"}: $(tr -s ' \n' ' ' < "$judge")" | tee -a "$LOG"
  done
  if [ -d "$WORK/judges-$model" ]; then
    # in parts of 15 MiB: a file coming back from the device machine may hold 16 MiB
    tar -cz -C "$WORK" "judges-$model" | split -b 15m - "$OUT/judges-$model.tar.gz.part-"
  fi
done
rm -rf "$WORK"
