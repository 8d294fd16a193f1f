#!/usr/bin/env bash
# The CdSprites+ attribute classifiers (issue 28's judges: renderer-independent, with a reject option),
# trained for all five levels at the measured recipe on the GPU machine, in one device call (our other
# dependencies travel as wheels in .whl, see ../shared/gpu/README.md):
#
#   device:  run(command="bash benchmarks/gpu_sprite_judges.sh", carry=[".whl"], timeout_s=560)
#
# The recipe (train-judges' defaults, those of the package's level-3 and level-5 judges, measured on
# 2 CPU cores): 1,000,000 augmented draws for shape (TRAIN x EPOCHS), 200,000 for each other attribute
# (OTHER x EPOCHS), Adam 2e-3 cosine-annealed to 0. The draws cost about as much CPU as the
# training, so the stream is drawn by every core but one (--workers -2). Each level trains into
# $OUT/home/classifiers/cdsprites-level<N> (classifiers.json + one checkpoint per attribute) and is then
# measured on the second, independent renderer, sharp and blurred by sigma 2 px (targets 0.98 and 0.95);
# everything comes back as $OUT/sprite_judges.tar.gz and the log $OUT/gpu_sprite_judges.txt.
# ACCELERATOR=cpu TRAIN=2000 OTHER=500 EPOCHS=1 LEVELS="1 2" checks the script on the CPU (not a measurement).
set -uo pipefail
OUT=${OUT:-/tmp/out}
ACCELERATOR=${ACCELERATOR:-gpu}
TRAIN=${TRAIN:-200000}
OTHER=${OTHER:-40000}
EPOCHS=${EPOCHS:-5}
LEVELS=${LEVELS:-"1 2 3 4 5"}
LIMIT=${LIMIT:-500}  # seconds for all levels together
mkdir -p "$OUT"
LOG="$OUT/gpu_sprite_judges.txt"
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
fi
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 REPSCOPE_PROGRESS=lines
export REPSCOPE_HOME="$OUT/home"
PYTHON=${PYTHON:-python3}
{ nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null || echo "no nvidia-smi: $ACCELERATOR"; } | tee "$LOG"
deadline=$((SECONDS + LIMIT))
for level in $LEVELS; do
  left=$((deadline - SECONDS))
  if [ "$left" -lt 30 ]; then echo "# level $level: no time left" | tee -a "$LOG"; break; fi
  echo "\$ sprites train-judges --level $level --train-size $TRAIN --other-train-size $OTHER --epochs $EPOCHS --workers -2" | tee -a "$LOG"
  start=$SECONDS
  # into a file, not a pipe: a child process the time limit missed would hold a pipe open for ever
  timeout -k 5 "$left" "$PYTHON" -m repscope.cli sprites train-judges --level "$level" --train-size "$TRAIN" \
    --other-train-size "$OTHER" --epochs "$EPOCHS" --workers -2 --accelerator "$ACCELERATOR" > "$OUT/step.txt" 2>&1
  rc=$?
  grep -v -i "warn\|elapsed" "$OUT/step.txt" | tee -a "$LOG"
  echo "# exit $rc after $((SECONDS - start)) s" | tee -a "$LOG"
  rm -f "$OUT/step.txt"
  [ "$rc" -eq 0 ] || continue
  "$PYTHON" - "$level" <<'PY' 2>&1 | grep -v -i warn | tee -a "$LOG"
import sys
import numpy as np
from repscope.data.multimodal.second_renderer import second_rendering
from repscope.studies.multimodal.judges import judges_dir, read_judges
level = int(sys.argv[1])
judges = read_judges(judges_dir(level), level)
for sigma in (0.0, 2.0):
    drawn = second_rendering(level, 2000, seed=11, blur_sigma=sigma)
    judged = judges.judge(drawn["images"])
    right = (judged.table == drawn["table"]).mean(0)
    each = ", ".join(f"{name} {value:.4f}" for name, value in zip(judges.attributes, right))
    print(f"level {level} second renderer, blur {sigma}: {each}; recognised {judged.recognised.mean():.4f}")
PY
done
tar -czf "$OUT/sprite_judges.tar.gz" -C "$OUT" home/classifiers 2>/dev/null && rm -rf "$OUT/home"
