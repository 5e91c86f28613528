#!/usr/bin/env bash
# A lent GPU window, driven by a deadline (DEADLINE_S seconds from the start of each call).
#
#   COMMIT=<sha> bash scripts/device_session.sh measure                 # call 1: the layer on this GPU
#   COMMIT=<sha> DEADLINE_S=540 bash scripts/device_session.sh train    # call 2, at once: the trainings
#   COMMIT=<sha> DEADLINE_S=540 bash scripts/device_session.sh           # both in one call
#
# Two calls because the official CIFAR-10 images travel losslessly in two parts of about 56 MiB,
# and one call carries at most 64 MiB beside the working tree: call 1 carries part 1
# (.data-part1/, ignored by git), which the machine keeps while it is warm, and measures the
# layer meanwhile, so the minute it costs is not lost; call 2 carries part 2 (.data-part2/) and
# trains. What call 1 decided is kept on the machine in .window/ for call 2, and comes back too.
#
# measure: the layer's benchmark (benchmarks/bench_gpu.py: its checks, then Triton compiling every
#   specialization the networks launch, at most COMPILE_S seconds, then BENCH_S seconds of timing,
#   the graphed bf16 step first: which of ConvNorm's filters is correct and fastest here, and what
#   ConvNorm costs against Conv2d+BN and the authors' algorithm). Its record is written into
#   $STATE after every section, so a benchmark cut short leaves what it measured; record and whole
#   log come back in $OUT/measure.tgz. On a GPU where the fused filter passed its checks, the fused
#   filter's and the layer's CUDA tests (at most KERNEL_TESTS_S seconds): failing, they rule it out.
#   The filter is the record's choice (a filter whose check passed; none: the next step checks the
#   known-good one), then the graph check with it (a graphed training against an eager one,
#   TensorFloat-32 off, at most CHECKS_S seconds, its kernels compiled by the benchmark; failing,
#   the trainings step eagerly).
# train: a filter whose check passed (the measure step's, else the newest record's, else the
#   checks run here, at most CHECKS_ONLY_S seconds; none passing stops the window); CIFAR-10
#   decoded once; MPS started where the machine has it; the calibration (benchmarks/calibrate_gpu.py:
#   the step times of the networks to train, with the chosen filter, as they will step; at most
#   CALIBRATION_S seconds and a third of what the deadline leaves, and none below
#   CALIBRATION_MIN_S); then scripts/gpu_runs.py trains the plan (the primary endpoints first; stored runs
#   are skipped) until the deadline, starting a training only if its estimate fits, and packs
#   each finished training at once into $OUT/results.tgz, laid out as the repository (`tar xzf
#   results.tgz -C <repo>`), with $OUT/status.json. $OUT/logs.tgz holds the logs.
# Every step takes what the deadline leaves; a window that runs out returns what finished and
# says why it stopped in one line (`stopped: ...`, also in status.json).
#
# Data: $CONVNORM_DATA_DIR, else .data/ (any copy), else .data-part1/ and .data-part2/ (the
# lossless copy's two parts). The code runs from a copy in $WORK/code (default /tmp/gpu/code),
# so that the records name COMMIT. PRESET=fast-smoke rehearses a window on any machine
# (tests/lab/test_gpu_protocol.py does); PYTHON names the interpreter (default python3).
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PHASE=${1:-all}
case "$PHASE" in measure|train|all) ;; *) echo "usage: device_session.sh [measure|train]" >&2; exit 2 ;; esac
PYTHON=${PYTHON:-python3}
DEADLINE_S=${DEADLINE_S:-540}
PRESET=${PRESET:-fast}
WORK=${WORK:-/tmp/gpu}
OUT=${OUT:-$WORK/out}
STATE=${STATE:-$REPO/.window}  # what call 1 decided, for call 2 (ignored by git; kept on a warm machine)
BENCH_S=${BENCH_S:-60}  # the benchmark's timed sections; its checks and compilation come before, outside it
COMPILE_S=${COMPILE_S:-150}  # Triton compiling every specialization the networks launch (60-100 s seen on an H200)
KERNEL_TESTS_S=${KERNEL_TESTS_S:-150}  # the fused filter's and the layer's CUDA tests, their compilation included
CHECKS_ONLY_S=${CHECKS_ONLY_S:-120}  # the train step's own checks, where no record has one that passed
CHECKS_ONLY_MIN_S=${CHECKS_ONLY_MIN_S:-10}  # below this the checks cannot finish: the window stops
CHECKS_S=${CHECKS_S:-45}  # graphed trainings against eager ones, each tuning cuDNN; a timeout turns graphs off
CALIBRATION_S=${CALIBRATION_S:-75}
CALIBRATION_MIN_S=${CALIBRATION_MIN_S:-20}  # below this a calibration's children time nothing
t0=$(date +%s)
left() { echo $(( DEADLINE_S - ($(date +%s) - t0) )); }
capped() { local l; l=$(left); echo $(( $1 < l / $2 ? $1 : l / $2 )); }  # min(cap, what is left / share)
log() { echo "[$(date -u +%T) +$(( $(date +%s) - t0 ))s] $*"; }
mkdir -p "$WORK/logs" "$OUT" "$STATE"
exec > >(tee -a "$WORK/logs/session-$PHASE.log") 2>&1  # the window's output, packed with the logs
tee_pid=$!
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg CONVNORM_CACHE_DIR=${CONVNORM_CACHE_DIR:-$WORK/cache}
export CONVNORM_GIT_COMMIT=${COMMIT:?the commit of this clean tree}
scale=full; [ "$PRESET" = "${PRESET%-smoke}" ] || scale=smoke

finish() {  # $1: exit status; the logs packed, every line out before the call returns
    (cd "$WORK" && tar czf "$OUT/logs-$PHASE.tgz" logs)
    log "packed: $(ls "$OUT" | tr '\n' ' ')"
    exec >&- 2>&-
    wait "$tee_pid"
    exit "$1"
}
stop() {  # $1: why the window stops before its trainings, in one line (status.json says it too)
    log "stopped: $1"
    local why=${1//\\/\/}; why=${why//\"/\'}  # a JSON string: no backslash or double quote left
    printf '{"preset": "%s", "finished": [], "failed": [], "stopped": "%s"}\n' "$PRESET" "$why" > "$OUT/status.json"
    finish 0
}

rm -rf "$WORK/code" && mkdir -p "$WORK/code"
cp -r convnorm lab book_code scripts benchmarks tests results pyproject.toml "$WORK/code/"
cd "$WORK/code" || exit 1
export PYTHONPATH=$WORK/code:$WORK/code/lab:$WORK/code/book_code
device=cpu  # the GPU's name as nvidia-smi (and torch) give it; asked without importing torch
if command -v nvidia-smi >/dev/null && gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1) \
        && [ -n "$gpu" ]; then
    device=$gpu
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
fi
echo "device: $device"
slug=$(echo "$device" | tr '[:upper:]' '[:lower:]' | sed -E 's/[^a-z0-9]+/-/g; s/^-+//; s/-+$//')
stamp=$(date -u +%Y%m%dT%H%M)

chosen() {  # the filter of the newest benchmark record in $STATE whose check passed (not one ruled out), or nothing
    local records=("$STATE"/bench_gpu_*.json) out=()
    [ -f "${records[0]}" ] || return 0
    [ -s "$STATE/ruled_out" ] && out=(--rule-out "$(cat "$STATE/ruled_out")")
    "$PYTHON" benchmarks/bench_gpu.py --chosen "${records[@]}" "${out[@]}" 2>>"$WORK/logs/chosen.log" | tail -n 1
}

if [ "$PHASE" != train ]; then
    # the record is written into $STATE after every section, so that a killed benchmark leaves it
    # for the next step; it is archived in the repository's layout
    bench=bench_gpu_${slug}_${stamp}.json
    budget=$(capped "$BENCH_S" 3)
    compiling=$(capped "$COMPILE_S" 3)
    log "the layer's benchmark (checks, compilation at most ${compiling} s, then ${budget} s of timing)"
    timeout -k 10 "$(capped $(( budget + compiling + 30 )) 1)" "$PYTHON" benchmarks/bench_gpu.py --scale "$scale" \
        --budget "$budget" --compile-budget "$compiling" --out "$STATE/$bench" > "$WORK/logs/bench.log" 2>&1
    log "the benchmark ended (exit $?); its whole log:"
    cat "$WORK/logs/bench.log"
    if [ "$device" != cpu ] && grep -q '^fused: correct' "$WORK/logs/bench.log"; then
        budget=$(capped "$KERNEL_TESTS_S" 2)  # half of what is left: the graph check takes the rest
        log "the fused filter's and the layer's CUDA tests (at most ${budget} s)"
        timeout -k 10 "$budget" "$PYTHON" -m pytest -q -x -o addopts="" -p no:cacheprovider \
            tests/convnorm/test_fused_filter.py tests/convnorm/test_layer_cuda.py > "$WORK/logs/kernel-tests.log" 2>&1
        status=$?
        tail -n 5 "$WORK/logs/kernel-tests.log"
        if [ "$status" -ge 124 ]; then echo fused > "$STATE/ruled_out"; log "they did not finish in ${budget} s: the fused filter, unverified here, is ruled out"
        elif [ "$status" -ne 0 ]; then echo fused > "$STATE/ruled_out"; log "they did not pass (exit $status): the fused filter is ruled out"; fi
    fi
    filter=$(chosen)
    echo "$filter" > "$STATE/filter"
    mkdir -p benchmarks/results
    [ -f "$STATE/$bench" ] && cp "$STATE/$bench" benchmarks/results/ && cp "$WORK/logs/bench.log" benchmarks/results/"${bench%.json}.log" \
        && tar czf "$OUT/measure.tgz" "benchmarks/results/$bench" "benchmarks/results/${bench%.json}.log"
    if [ -n "$filter" ]; then log "ConvNorm filters by: $filter"; else log "no filter passed its check yet: the next step checks the known-good one"; fi
    if [ "$device" != cpu ]; then
        budget=$(capped "$CHECKS_S" 1)  # the measure step's last: what is left, up to CHECKS_S
        log "graph check (at most ${budget} s; its kernels were compiled by the benchmark)"
        FILTER=$filter timeout -k 10 "$budget" "$PYTHON" -m pytest -q -x -o addopts="" -p no:cacheprovider \
            tests/lab/test_training_cuda.py > "$WORK/logs/cuda-checks.log" 2>&1
        status=$?
        tail -n 3 "$WORK/logs/cuda-checks.log"
        if [ "$status" -eq 0 ]; then echo --cuda-graph > "$STATE/graph"
        else : > "$STATE/graph"; log "the graph check did not pass (exit $status): training without CUDA graphs"; fi
    else
        : > "$STATE/graph"
        log "no GPU: a rehearsal (no graphs)"
    fi
    [ "$PHASE" = measure ] && finish 0
fi

if [ ! -s "$STATE/filter" ]; then  # the measure step was cut, or chose nothing: a filter whose check passed
    filter=$(chosen)
    if [ -z "$filter" ]; then
        budget=$(capped "$CHECKS_ONLY_S" 3)
        [ "$budget" -ge "$CHECKS_ONLY_MIN_S" ] || stop "no time left to check a filter (${budget} s), and no record of a check that passed"
        log "no benchmark record with a passed check: checking the filters (at most ${budget} s, no timing)"
        timeout -k 10 "$budget" "$PYTHON" benchmarks/bench_gpu.py --scale "$scale" --checks-only \
            --out "$STATE/bench_gpu_${slug}_${stamp}_checks.json" > "$WORK/logs/checks-only.log" 2>&1
        cat "$WORK/logs/checks-only.log"
        filter=$(chosen)
    fi
    [ -n "$filter" ] || stop "no filter passed its check (or its checks did not finish in ${budget} s)"
    echo "$filter" > "$STATE/filter"
    log "ConvNorm filters by: $filter (from the checks on record)"
fi
filter=$(cat "$STATE/filter" 2>/dev/null); graph=$(cat "$STATE/graph" 2>/dev/null)
[ -f "$STATE/graph" ] || log "no measure step on this machine: no graphs"
if [ -z "${CONVNORM_DATA_DIR:-}" ]; then
    if [ -d "$REPO/.data" ]; then CONVNORM_DATA_DIR=$REPO/.data
    else  # the lossless copy's two parts, carried by two calls
        CONVNORM_DATA_DIR=$WORK/data; mkdir -p "$CONVNORM_DATA_DIR"
        for part in "$REPO"/.data-part1/* "$REPO"/.data-part2/*; do [ -f "$part" ] && ln -sf "$part" "$CONVNORM_DATA_DIR/"; done
    fi
fi
export CONVNORM_DATA_DIR
log "decoding CIFAR-10 once"
"$PYTHON" -c "from convnorm_lab.data import find_cifar, load_cifar; print(find_cifar('cifar10').description); \
print(load_cifar('cifar10')[0].shape)" > "$WORK/logs/decoding.log" 2>&1
status=$?
cat "$WORK/logs/decoding.log"
[ "$status" -eq 0 ] || stop "decoding CIFAR-10 failed: $(tail -n 1 "$WORK/logs/decoding.log")"

if [ "$device" != cpu ]; then
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
fi

calibration=benchmarks/results/gpu_calibration_${slug}_${stamp}.json
budget=$(capped "$CALIBRATION_S" 3)
filtered=(); [ -n "$filter" ] && filtered=(--filter "$filter")
calibrated=()
if [ "$budget" -ge "$CALIBRATION_MIN_S" ]; then
    log "calibration (at most ${budget} s)"
    # the step times are timed as the trainings will step: eagerly where the graph check failed
    eager=(); [ -n "$graph" ] || eager=(--eager)
    timeout $(( budget + 15 )) "$PYTHON" benchmarks/calibrate_gpu.py --preset "$PRESET" --budget "$budget" \
        "${eager[@]}" "${filtered[@]}" ${CALIBRATION_ARGS:-} --out "$calibration" > "$WORK/logs/calibration.log" 2>&1
    tail -n 12 "$WORK/logs/calibration.log"
    [ -f "$calibration" ] && calibrated=(--calibration "$calibration" --pack-also "$calibration")
else  # a calibration cut shorter than its children take to start measures nothing: the time goes to training
    log "no calibration (${budget} s would be left for it): trainings priced by recorded step times"
fi
for record in "$STATE"/bench_gpu_*.json; do  # the benchmark comes back with the trainings too
    [ -f "$record" ] && cp "$record" benchmarks/results/ && calibrated+=(--pack-also "benchmarks/results/$(basename "$record")")
done

trainings=$(left)
[ "$trainings" -gt 20 ] || stop "no time left for a training ($trainings s after the calibration)"
log "trainings until the deadline ($trainings s left)"
# shellcheck disable=SC2086
"$PYTHON" scripts/gpu_runs.py --preset "$PRESET" --deadline "$trainings" --pack "$OUT" --logs "$WORK/logs/runs" \
    "${calibrated[@]}" "${filtered[@]}" $graph ${REQUESTS:-} 2>&1 | tee "$WORK/logs/gpu_runs.log"
runs=${PIPESTATUS[0]}
command -v nvidia-smi >/dev/null && echo quit | nvidia-cuda-mps-control 2>/dev/null
if [ -f "$OUT/status.json" ]; then
    log "stopped: $("$PYTHON" -c "import json,sys; print(json.load(open(sys.argv[1])).get('stopped') or 'every training done')" "$OUT/status.json")"
else
    stop "the trainings did not start: $(grep '^error: ' "$WORK/logs/gpu_runs.log" | tail -n 1)"
fi
finish "$runs"
