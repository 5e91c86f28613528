#!/usr/bin/env bash
# One lent GPU window, in one call, driven by a deadline (DEADLINE_S seconds from the
# start, default 540: run it with the device tool's timeout_s about 570).
#
#   COMMIT=<sha of this clean tree> bash scripts/device_session.sh
#   COMMIT=<sha> REQUESTS="adversarial:0-4" bash scripts/device_session.sh   # other requests than the plan's
#
# In order: CIFAR-10 decoded once, on the processor while the GPU runs the CUDA checks (a
# graphed training step against the eager one, at most CHECKS_S seconds; failing, the
# trainings step eagerly), then those of ConvNorm computed with dense DFT matrices on the
# GPU (at most DENSE_CHECKS_S seconds; failing, the calibration may not choose them); MPS
# started if the machine has it; the calibration (benchmarks/calibrate_gpu.py: how ConvNorm
# transforms fastest here, the core networks' step times and whether two trainings at once
# go faster, whatever its budget; then, within CALIBRATION_S seconds, the run time against
# Conv2d+BN and the authors' algorithm until recorded whole for this GPU, and the other
# networks' step times); then scripts/gpu_runs.py trains the plan (the core, then the
# queue; stored runs are skipped) until the deadline, starting a training only if its
# estimate fits, and packs each finished training at once into $OUT/results.tgz, laid out
# as the repository (`tar xzf results.tgz -C <repo>`), with $OUT/status.json. At the end
# $OUT/logs.tgz holds the logs. A window cut short returns everything that finished and
# nothing half-done; logs.tgz holds the window's own output (session.log) beside each
# training's log.
#
# The CIFAR-10 copy travels in .data/ (ignored by git, carried) or $CONVNORM_DATA_DIR.
# The code runs from a copy in $WORK/code (default /tmp/gpu/code), so that the records
# name COMMIT. PRESET=fast-smoke rehearses a window on any machine in about a minute
# (tests/test_gpu_protocol.py does); PYTHON names the interpreter (default python3).
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
DEADLINE_S=${DEADLINE_S:-540}
PRESET=${PRESET:-fast}
WORK=${WORK:-/tmp/gpu}
OUT=${OUT:-$WORK/out}
CHECKS_S=${CHECKS_S:-45}  # eight graphed trainings against eager ones, each tuning cuDNN; a timeout turns graphs off
DENSE_CHECKS_S=${DENSE_CHECKS_S:-30}  # the layer against its float64 reference, and a graphed training
# the core's two networks, their transforms and profile, and the concurrency take about a minute
# whatever this says; the run-time comparison, until recorded whole for this GPU, fits in the rest
CALIBRATION_S=${CALIBRATION_S:-75}
t0=$(date +%s)
left() { echo $(( DEADLINE_S - ($(date +%s) - t0) )); }
log() { echo "[$(date -u +%T) +$(( $(date +%s) - t0 ))s] $*"; }
mkdir -p "$WORK/logs" "$OUT"
exec > >(tee -a "$WORK/logs/session.log") 2>&1  # the whole window's output, packed with the logs
tee_pid=$!
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg CONVNORM_CACHE_DIR=$WORK/cache
export CONVNORM_DATA_DIR=${CONVNORM_DATA_DIR:-$PWD/.data} CONVNORM_GIT_COMMIT=${COMMIT:?the commit of this clean tree}

rm -rf "$WORK/code" && mkdir -p "$WORK/code"
cp -r convnorm convnorm_book scripts benchmarks tests results pyproject.toml "$WORK/code/"
cd "$WORK/code" || exit 1
export PYTHONPATH=$WORK/code
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
device=$("$PYTHON" -c "import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'cpu')") \
    || exit 1
"$PYTHON" -c "import torch; print('torch', torch.__version__)"
echo "device: $device"

# the data is decoded on the processor while the checks use the GPU (neither needs the other)
log "decoding CIFAR-10 once"
"$PYTHON" -c "from convnorm.data import load_cifar; print(load_cifar('cifar10')[0].shape)" > "$WORK/logs/decoding.log" 2>&1 &
decoding=$!

graph=--cuda-graph
forbid_dense=()
if [ "$device" != cpu ]; then
    log "CUDA checks (at most ${CHECKS_S} s)"
    timeout "$CHECKS_S" "$PYTHON" -m pytest -q -x -o addopts="" -p no:cacheprovider tests/test_training_cuda.py \
        -k "not dense_transforms" > "$WORK/logs/cuda-checks.log" 2>&1
    status=$?
    tail -n 3 "$WORK/logs/cuda-checks.log"
    [ "$status" -eq 0 ] || { graph=""; log "the CUDA checks did not pass (exit $status): training without CUDA graphs"; }
    log "CUDA checks of dense DFT matrices (at most ${DENSE_CHECKS_S} s)"
    timeout "$DENSE_CHECKS_S" "$PYTHON" -m pytest -q -x -o addopts="" -p no:cacheprovider tests/test_layer_cuda.py \
        tests/test_training_cuda.py -k dense_transforms > "$WORK/logs/dense-checks.log" 2>&1
    status=$?
    tail -n 3 "$WORK/logs/dense-checks.log"
    [ "$status" -eq 0 ] || { forbid_dense=(--forbid-dense-transforms)
        log "the checks of dense DFT matrices did not pass (exit $status): ConvNorm transforms by FFTs"; }
    export CUDA_MPS_PIPE_DIRECTORY=$WORK/mps CUDA_MPS_LOG_DIRECTORY=$WORK/mps-log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if command -v nvidia-cuda-mps-control >/dev/null && nvidia-cuda-mps-control -d 2>/dev/null \
        && timeout 20 "$PYTHON" -c "import torch; torch.zeros(1).cuda()"; then
        log "MPS on: trainings at once may share the GPU's multiprocessors"
    else
        echo quit | nvidia-cuda-mps-control 2>/dev/null
        unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
        log "MPS off"
    fi
else
    graph=""
    log "no GPU: a rehearsal"
fi
wait "$decoding"
status=$?
cat "$WORK/logs/decoding.log"
[ "$status" -eq 0 ] || { log "decoding CIFAR-10 failed (exit $status)"; exit 1; }
log "decoded"

slug=$(echo "$device" | tr '[:upper:]' '[:lower:]' | sed -E 's/[^a-z0-9]+/-/g; s/^-+//; s/-+$//')
calibration=benchmarks/results/gpu_calibration_${slug}_$(date -u +%Y%m%dT%H%M).json
log "calibration (at most ${CALIBRATION_S} s)"
# the step times are timed as the trainings will step: eagerly where the CUDA checks failed
eager=(); [ -n "$graph" ] || eager=(--eager)
timeout $(( CALIBRATION_S + 60 )) "$PYTHON" benchmarks/calibrate_gpu.py --preset "$PRESET" --budget "$CALIBRATION_S" \
    --runtime-once "${eager[@]}" "${forbid_dense[@]}" ${CALIBRATION_ARGS:-} --out "$calibration" > "$WORK/logs/calibration.log" 2>&1
tail -n 12 "$WORK/logs/calibration.log"
calibrated=()
[ -f "$calibration" ] && calibrated=(--calibration "$calibration" --pack-also "$calibration")

log "trainings until the deadline ($(left) s left)"
# shellcheck disable=SC2086
"$PYTHON" scripts/gpu_runs.py --preset "$PRESET" --deadline "$(left)" --pack "$OUT" --logs "$WORK/logs/runs" \
    "${calibrated[@]}" $graph ${REQUESTS:-} 2>&1 | tee "$WORK/logs/gpu_runs.log"
runs=${PIPESTATUS[0]}
command -v nvidia-smi >/dev/null && echo quit | nvidia-cuda-mps-control 2>/dev/null
(cd "$WORK" && tar czf "$OUT/logs.tgz" logs)
log "packed: $(ls "$OUT" | tr '\n' ' ')"
exec >&- 2>&-
wait "$tee_pid"  # every line out before the call returns
exit "$runs"
