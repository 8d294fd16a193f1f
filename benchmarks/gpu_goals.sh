#!/usr/bin/env bash
# The goals of issue 27 that gpu_session.sh and gpu_compile.sh left unmeasured, in two device calls
# (the machine stays warm between them; our other dependencies travel as wheels in .whl, see
# ../shared/gpu/README.md):
#
#   device:  run(command="bash benchmarks/gpu_goals.sh compiled", carry=[".whl"], timeout_s=420)
#            run(command="bash benchmarks/gpu_goals.sh shared", carry=[".whl"], timeout_s=300)
#            run(command="bash benchmarks/gpu_goals.sh more", carry=[".whl"], timeout_s=290)
#
# compiled  torch.compile reduce-overhead (CUDA graphs) of the paper's networks: MVAE at batch 32 with
#           the host's time per function (cProfile), MVAE at batch 256, MMVAE and MoPoE at batch 32
# shared    four MVAE runs at once on the GPU against one alone; `mmvae train` of a small run, then
#           `mmvae evaluate --n 10000` of it, timed as a user sees it
# more      MVAE at batch 32 compiled without the profiler's cost, then DMVAE and MMVAE+ compiled
#
# Each step has its own time limit and one that runs out does not stop the others; every line goes to
# $OUT/gpu_goals_<part>.txt as it comes. ACCELERATOR=cpu STEPS=3 N=100 TRAIN=64 runs the commands on the CPU (a check
# of the script itself, not a measurement).
set -uo pipefail
PART=${1:?usage: gpu_goals.sh compiled|shared|more}
OUT=${OUT:-/tmp/out}
ACCELERATOR=${ACCELERATOR:-gpu}
STEPS=${STEPS:-100}
N=${N:-10000}
TRAIN=${TRAIN:-3200}  # the small run's training rows (its evaluation draws its own N)
mkdir -p "$OUT"
LOG="$OUT/gpu_goals_$PART.txt"
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
fi
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 REPSCOPE_PROGRESS=lines
export REPSCOPE_HOME=${REPSCOPE_HOME:-/tmp/rhome}
PYTHON=${PYTHON:-python3}
{ nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null || echo "no nvidia-smi: $ACCELERATOR"; } | tee "$LOG"
step() {  # step SECONDS COMMAND...: run COMMAND, append its output to $LOG, say how it ended
  local limit=$1
  shift
  echo "\$ $*" | tee -a "$LOG"
  local start=$SECONDS
  # into a file, not a pipe: a child process the time limit missed would hold a pipe open for ever
  timeout -k 5 "$limit" "$@" > "$OUT/step.txt" 2>&1
  local rc=$?
  grep -v -i warn "$OUT/step.txt" | tee -a "$LOG"
  echo "# exit $rc after $((SECONDS - start)) s (limit $limit s)" | tee -a "$LOG"
  rm -f "$OUT/step.txt"
  if [[ $ACCELERATOR == gpu ]]; then  # the machine is ours alone: nothing of a step outlives it
    pkill -f "multiprocessing.spawn|multiprocessing.resource_tracker" 2> /dev/null || true
  fi
}
BENCH=("$PYTHON" benchmarks/gpu_throughput.py --accelerator "$ACCELERATOR" --no-loader --steps "$STEPS" --warmup 10)
COMPILED=("${BENCH[@]}" --compile reduce-overhead)
case $PART in
  compiled)
    step 120 "${COMPILED[@]}" --models mvae --batches 32 --profile
    step 110 "${COMPILED[@]}" --models mvae --batches 256
    step 170 "${COMPILED[@]}" --models mmvae,mopoe --batches 32
    ;;
  shared)
    step 70 "${BENCH[@]}" --models mvae --batches 32 --share 4
    RUN=/tmp/run-goals
    rm -rf "$RUN"
    step 60 "$PYTHON" -m repscope mmvae train mmvae-cdsprites-paper --set model=mvae --epochs 1 --no-evaluate \
      --set data.train_size="$TRAIN" --set data.val_size=320 --accelerator "$ACCELERATOR" --out "$RUN"
    step 110 "$PYTHON" -m repscope mmvae evaluate "$RUN" --n "$N" --k 30 --accelerator "$ACCELERATOR"
    ;;
  more)
    step 100 "${COMPILED[@]}" --models mvae --batches 32
    step 165 "${COMPILED[@]}" --models dmvae,mmvae-plus --batches 32
    ;;
  *)
    echo "unknown part $PART (compiled or shared)" >&2
    exit 2
    ;;
esac
