#!/usr/bin/env bash
# The dSprites factor classifiers CG judges with, trained at GPU scale (issue 29: judges of at least 98%
# on what the images show). One device call (our other dependencies travel as wheels in .whl, see
# ../shared/gpu/README.md):
#
#   device:  run(command="bash benchmarks/gpu_judges.sh", carry=[".whl"], timeout_s=560)
#
# Trains the five dSprites judges (shape, scale, orientation, posX, posY) twice, with attribute-cnn and
# with factor-cnn, on TRAIN images for EPOCHS epochs each, and prints every judge's raw and identifiable
# test accuracy (judge.json: a turned square's symmetric orientation counts as right). The folders stay
# in $OUT/judges-<model> (run directories with their weights), usable as `repscope disentangle score RUN
# --classifiers DIR`. Each model has its own time limit; every line goes to $OUT/gpu_judges.txt as it
# comes. ACCELERATOR=cpu TRAIN=2000 TEST=500 EPOCHS=1 checks the script on the CPU (not a measurement).
set -uo pipefail
OUT=${OUT:-/tmp/out}
ACCELERATOR=${ACCELERATOR:-gpu}
TRAIN=${TRAIN:-200000}
TEST=${TEST:-10000}
EPOCHS=${EPOCHS:-5}
LIMIT=${LIMIT:-265}
mkdir -p "$OUT"
LOG="$OUT/gpu_judges.txt"
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
fi
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 REPSCOPE_PROGRESS=lines
export REPSCOPE_HOME=${REPSCOPE_HOME:-/tmp/rhome}
PYTHON=${PYTHON:-python3}
{ nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null || echo "no nvidia-smi: $ACCELERATOR"; } | tee "$LOG"
for model in attribute-cnn factor-cnn; do
  echo "\$ disentangle classifiers --model $model --train-size $TRAIN --epochs $EPOCHS" | tee -a "$LOG"
  start=$SECONDS
  # into a file, not a pipe: a child process the time limit missed would hold a pipe open for ever
  timeout -k 5 "$LIMIT" "$PYTHON" -m repscope.cli disentangle classifiers --out "$OUT/judges-$model" --overwrite \
    --model "$model" --train-size "$TRAIN" --test-size "$TEST" --epochs "$EPOCHS" --accelerator "$ACCELERATOR" \
    > "$OUT/step.txt" 2>&1
  rc=$?
  grep -v -i "warn\|elapsed" "$OUT/step.txt" | tee -a "$LOG"
  echo "# exit $rc after $((SECONDS - start)) s (limit $LIMIT s)" | tee -a "$LOG"
  rm -f "$OUT/step.txt"
done
