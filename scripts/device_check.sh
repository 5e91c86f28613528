#!/usr/bin/env bash
# The checks that need a CUDA GPU, as one script (a lent GPU machine, or any CUDA box):
#   1. the CUDA tests of the layer (tests/test_layer_cuda.py) and the torchvision conversion;
#   2. benchmarks/bench_layer.py on the GPU (batch 32 and 128), eager and with each whole
#      training step captured in a CUDA graph (--cuda-graph);
#   3. the run-time experiment at the paper's scale (ResNet18, batch 128; RUNTIME_PAPER=0 skips);
#   4. the `cpu` preset of the other experiments for each seed in SEEDS (default 0 1 2; empty:
#      skip), several processes sharing the GPU, each stopped at RUN_SECONDS (a stopped run
#      writes no result file).
# Results go to results/ and benchmarks/results/ (their JSON files carry the provenance),
# logs to $LOGS, and tarballs of both to $OUT.
#
#   CONVNORM_DATA_DIR=/path/to/cifar OUT=/tmp/out bash scripts/device_check.sh
#   SEEDS= RUNTIME_PAPER=0 OUT=/tmp/out bash scripts/device_check.sh   # tests and benchmarks only
#
# Where the checkout has no usable .git (a copied tree), GIT_DIR may point at a copy of it
# so that the result files record the commit.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/convnorm-device}
RUN_SECONDS=${RUN_SECONDS:-300}
PRESET=${PRESET:-cpu}  # of step 4 (smoke: a dry run of the loop)
SEEDS=${SEEDS-0 1 2}
RUNTIME_PAPER=${RUNTIME_PAPER:-1}
JOBS=${JOBS:-24}
LOGS=${LOGS:-/tmp/convnorm-device-logs}
mkdir -p "$OUT" "$LOGS"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 MPLBACKEND=Agg
export CONVNORM_CACHE_DIR=${CONVNORM_CACHE_DIR:-/tmp/convnorm-cache}
log() { echo "[$(date -u +%T)] $*"; }

log "commit $(git rev-parse HEAD 2>/dev/null || echo unknown) $(git status --porcelain -- convnorm | wc -l) changed package files"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"
if [ -n "$SEEDS" ]; then
    : "${CONVNORM_DATA_DIR:?set CONVNORM_DATA_DIR to the folder holding CIFAR-10}"
    log "decoding CIFAR-10 once"
    python -c "from convnorm.data import load_cifar; print(load_cifar('cifar10')[0].shape)" || exit 1
fi

log "CUDA tests"
python -m pytest -q -o addopts="" -p no:cacheprovider tests/test_layer_cuda.py tests/test_convert.py \
    2>&1 | tee "$LOGS/pytest-cuda.log" | tail -n 15

log "layer benchmark on the GPU"
for batch in 32 128; do
    python benchmarks/bench_layer.py --device cuda --batch "$batch" --repeats 21 \
        --out "benchmarks/results/bench_layer_cuda_batch$batch.json" 2>&1 | tee "$LOGS/bench-$batch.log"
    python benchmarks/bench_layer.py --device cuda --cuda-graph --batch "$batch" --repeats 21 \
        --out "benchmarks/results/bench_layer_cuda_graph_batch$batch.json" 2>&1 | tee "$LOGS/bench-graph-$batch.log"
done

if [ "$RUNTIME_PAPER" = 1 ]; then
    log "run time at the paper's scale"
    python -m convnorm.experiments runtime --preset paper --output results/paper --no-progress \
        2>&1 | tee "$LOGS/runtime-paper.log"
fi

log "$PRESET preset, seeds [$SEEDS], $JOBS processes at a time, ${RUN_SECONDS}s each at most"
jobs_list=()
for seed in $SEEDS; do
    for name in adversarial simba label-noise data-scarcity generalization ablation convergence conditioning; do
        jobs_list+=("$name $seed")
    done
done
printf '%s\n' "${jobs_list[@]}" | xargs -r -P "$JOBS" -L 1 bash -c \
    'timeout '"$RUN_SECONDS"' python -m convnorm.experiments "$0" --preset '"$PRESET"' --output results/'"$PRESET"' --seed "$1" \
        --threads 1 --no-progress > "'"$LOGS"'/$0-seed$1.log" 2>&1; echo "$0 seed $1: exit $?"'

log "done"
ls -l "results/$PRESET" results/paper benchmarks/results
tar czf "$OUT/results.tgz" $(ls "results/$PRESET"/*.json results/paper/*.json benchmarks/results/*.json 2>/dev/null)
tar czf "$OUT/logs.tgz" -C "$(dirname "$LOGS")" "$(basename "$LOGS")"
