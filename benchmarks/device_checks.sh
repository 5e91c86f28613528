#!/usr/bin/env bash
# The layer's GPU checks in one call: the CUDA tests and the conversion tests (torchvision's
# resnet18 where torchvision imports), then the GPU benchmarks whose records benchmarks/README.md cites.
#
#   bash benchmarks/device_checks.sh [RESULTS_DIR]    # default: benchmarks/results
#
# Each record stores its own provenance (device, torch, git commit when git is there).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-benchmarks/results}"
mkdir -p "$out"
python -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; print(torch.cuda.get_device_name())"

python -m pytest -q -p no:cacheprovider -rs tests/test_layer_cuda.py tests/test_convert.py
for batch in 32 128; do
  python benchmarks/bench_layer.py --device cuda --cuda-graph --batch "$batch" --repeats 21 --rss-repeats 1 \
    --out "$out/bench_layer_cuda_graph_batch$batch.json"
  python benchmarks/bench_layer.py --device cuda --batch "$batch" --repeats 11 \
    --out "$out/bench_layer_cuda_batch$batch.json"
done
for batch in 32 128; do
  python benchmarks/bench_layer.py --device cuda --cuda-graph --computation frequency_domain --batch "$batch" \
    --repeats 21 --rss-repeats 1 --out "$out/bench_layer_cuda_graph_frequency_domain_batch$batch.json"
done
python benchmarks/bench_layer.py --device cuda --computation frequency_domain --batch 128 --repeats 11 \
  --out "$out/bench_layer_cuda_frequency_domain_batch128.json"
python benchmarks/bench_layer.py --device cuda --per-layer --batch 128 --repeats 11 \
  --out "$out/bench_layer_per_layer_cuda_batch128.json"
