#!/usr/bin/env bash
# One lent GPU session, in calls of at most 10 minutes each, the machine staying warm
# between them. Phase `start` (the first call) checks the GPU code (CUDA tests), times
# the run-time benchmark and the run-time experiment alone on the GPU, then starts
# scripts/gpu_runs.py in the background (its own process session, so it outlives the
# call) and watches it; phase `watch` (each later call) only watches. Each call ends
# after WATCH_S seconds by packing what is recorded so far into $OUT: results.tgz holds
# results/short-schedule/ (run records, result files) and benchmarks/results/ (the
# benchmark record), laid out as in the repository, so `tar xzf results.tgz -C <repo>`
# puts them in place; logs.tgz holds the logs and the launcher's status.
#
#   PHASE=start COMMIT=<sha> WATCH_S=420 RUNS="generalization:0-3 ablation:0-2" bash scripts/device_session.sh
#   PHASE=watch WATCH_S=540 bash scripts/device_session.sh
#
# The CIFAR-10 copy travels in .data/ (ignored by git, carried; or $CONVNORM_DATA_DIR).
# Everything the runs write goes to $WORK (default /tmp/gpu, outside the synced tree,
# which each call copies anew); the code runs from a copy in $WORK/code made at the
# start, with COMMIT recorded in every record. PRESET=short-schedule-smoke rehearses a
# session on any machine in a minute or two (tests/test_gpu_protocol.py does).
set -uo pipefail
cd "$(dirname "$0")/.."
PHASE=${PHASE:?start or watch}
WATCH_S=${WATCH_S:-480}
PRESET=${PRESET:-short-schedule}
WORK=${WORK:-/tmp/gpu}
OUT=${OUT:-$WORK/out}
mkdir -p "$WORK/logs" "$WORK/benchmarks/results" "$OUT"
t0=$(date +%s)
log() { echo "[$(date -u +%T)] $*"; }
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg CONVNORM_CACHE_DIR=$WORK/cache CONVNORM_DATA_DIR=${CONVNORM_DATA_DIR:-$PWD/.data}
export CUDA_MPS_PIPE_DIRECTORY=$WORK/mps CUDA_MPS_LOG_DIRECTORY=$WORK/mps-log

if [ "$PHASE" = start ]; then
    : "${COMMIT:?the commit of this clean tree}"
    rm -rf "$WORK/code" && mkdir -p "$WORK/code" && cp -r convnorm convnorm_book scripts benchmarks tests pyproject.toml "$WORK/code/"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))"
    cd "$WORK/code" || exit 1
    export CONVNORM_GIT_COMMIT=$COMMIT PYTHONPATH=$WORK/code
    log "decoding CIFAR-10 once"
    python3 -c "from convnorm.data import load_cifar; print(load_cifar('cifar10')[0].shape)" || exit 1
    log "CUDA tests"
    graph=--cuda-graph
    python3 -c "import sys, torch; sys.exit(not torch.cuda.is_available())" || graph=--no-cuda-graph
    timeout 150 python3 -m pytest -q -x -o addopts="" -p no:cacheprovider tests/test_training_cuda.py \
        tests/test_layer_cuda.py 2>&1 | tee "$WORK/logs/pytest-cuda.log" | tail -n 8
    grep -q "test_training_cuda.py.*FAILED\|FAILED tests/test_training_cuda" "$WORK/logs/pytest-cuda.log" && graph=--no-cuda-graph
    log "run-time benchmark (alone on the GPU)"
    timeout 200 python3 benchmarks/bench_runtime_gpu.py --batch 128 \
        --out "$WORK/benchmarks/results/bench_runtime_gpu_batch128.json" 2>&1 | tee "$WORK/logs/bench.log" | tail -n 4
    log "run-time experiment (alone on the GPU)"
    timeout 120 python3 -m convnorm.experiments runtime --preset "$PRESET" --seed 0 --no-progress \
        --output "$WORK/results/$PRESET" 2>&1 | tee "$WORK/logs/runtime.log" | tail -n 2
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if command -v nvidia-cuda-mps-control >/dev/null && nvidia-cuda-mps-control -d 2>/dev/null \
        && timeout 60 python3 -c "import torch; torch.zeros(1).cuda(); print('MPS client ok')"; then
        log "MPS on: the runs' kernels may share the GPU's multiprocessors"
    else
        echo quit | nvidia-cuda-mps-control 2>/dev/null; unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
        log "MPS off"
    fi
    log "starting the runs ($graph): ${RUNS:?}"
    # shellcheck disable=SC2086
    setsid nohup python3 scripts/gpu_runs.py --preset "$PRESET" --output "$WORK/results" \
        --logs "$WORK/logs/runs" --jobs "${JOBS:-12}" --stop-after "${STOP_AFTER:-1150}" \
        $( [ "$graph" = --no-cuda-graph ] && echo --no-cuda-graph ) $RUNS > "$WORK/logs/gpu_runs.log" 2>&1 < /dev/null &
    cd - >/dev/null || exit 1
fi

while [ $(( $(date +%s) - t0 )) -lt "$WATCH_S" ]; do
    sleep 20
    pgrep -f "gpu_runs.py --preset $PRESET --output $WORK/results" >/dev/null || { log "the runs have ended"; break; }
done
log "status"
tail -n 25 "$WORK/logs/gpu_runs.log"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader
PRESET=$PRESET WORK=$WORK python3 - <<'PY'
import json, os, pathlib
work = pathlib.Path(os.environ["WORK"])
p = work / "results" / os.environ["PRESET"] / "gpu_runs_status.json"
if p.exists():
    s = json.loads(p.read_text())
    print({k: len(v) for k, v in s.items() if isinstance(v, list)}, "elapsed", s.get("elapsed_s"))
for f in sorted((work / "logs" / "runs").glob("*.log"))[:40]:
    lines = f.read_text().strip().splitlines()
    print(f.name, "|", lines[-1][:150] if lines else "")
PY
cp "$WORK/results/$PRESET/gpu_runs_status.json" "$WORK/logs/" 2>/dev/null
(cd "$WORK" && tar czf "$OUT/results.tgz" --exclude=checkpoints --exclude=gpu_runs_status.json \
    $(ls -d results benchmarks 2>/dev/null))
(cd "$WORK" && tar czf "$OUT/logs.tgz" logs)
ls -l "$OUT"
