"""Time the spectral analysis of every conv layer of a CIFAR ResNet18 at 32x32 (CPU).

Prints, for a freshly initialised ``convnorm_lab.models`` ResNet18 (BatchNorm variant):

* the time to compute *all* singular values of every 3x3 conv layer
  (:func:`convnorm.spectral.conv_singular_values`, float32), and
* the time of :func:`convnorm.spectral.analyse_conv_layers` (spectral norm with and
  without ConvNorm, mean channel condition numbers: the data of the paper's Figure 2).

The per-frequency matrices are small, so on a loaded machine one thread is much faster than
several competing (see :mod:`convnorm.spectral`); the functions use the caller's threads, and
this script sets them (``--threads``, default 1). Writes the times, with the processor they
were measured on, to ``benchmarks/results/bench_spectral.json`` (chapter 5 of the book reads it).

Usage: ``python benchmarks/bench_spectral.py [--repeats R] [--threads T] [--out FILE]``.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

# this checkout's packages, not other installed copies
sys.path[:0] = [str(Path(__file__).resolve().parents[1] / folder) for folder in (".", "lab", "book_code")]

from convnorm.spectral import analyse_conv_layers, conv_singular_values  # noqa: E402
from convnorm_book.layer_benchmark import best_time  # noqa: E402
from convnorm_lab.models import build_model  # noqa: E402
from convnorm_lab.training.results import (  # noqa: E402
    cpu_info,  # noqa: E402
    provenance,
    save_results,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("results") / "bench_spectral.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    torch.manual_seed(0)
    model = build_model("resnet18", "bn")
    report = analyse_conv_layers(model, 32)
    weights = {name: module.weight.detach() for name, module in model.named_modules()
               if isinstance(module, torch.nn.Conv2d)}
    layers = [(weights[r.name], r.input_size) for r in report]

    def all_singular_values() -> int:
        return sum(conv_singular_values(w, size).numel() for w, size in layers)

    count = all_singular_values()
    t_svd = best_time(all_singular_values, args.repeats)
    t_report = best_time(lambda: analyse_conv_layers(model, 32), args.repeats)
    print(f"CIFAR ResNet18, {len(layers)} 3x3 conv layers at 32x32 input, torch {torch.__version__}, "
          f"{args.threads} thread(s), best of {args.repeats}")
    print(f"  all {count:,} singular values (conv_singular_values): {t_svd:.2f} s")
    print(f"  analyse_conv_layers (norms with/without ConvNorm, condition numbers): {t_report:.2f} s")
    block = provenance("bench_spectral", f"best of {args.repeats}", 0, None, time.perf_counter() - started, "cpu")
    block.update({"cpu": cpu_info(), "threads": args.threads,
                  "measured": f"wall-clock time of one call, best of the repeats, float32, {args.threads} thread(s)"})
    results = {"model": "CIFAR ResNet18 (convnorm_lab.models, BatchNorm), fresh initialisation, seed 0",
               "input_size": 32, "layers": len(layers), "singular_values": count,
               "seconds_singular_values": round(t_svd, 4), "seconds_analyse_conv_layers": round(t_report, 4),
               "repeats": args.repeats}
    print(f"written to {save_results(args.out, block, results)}")


if __name__ == "__main__":
    main()
