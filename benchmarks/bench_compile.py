"""``torch.compile`` on a CPU: a small ConvNorm2d+BN network's compiled training step against its eager one.

Issue 49's item 5 asks that a compiled step be no slower than an eager one, and that compiling
take at most twice a plain network's time. A layer keeps what it prepares for an input signature
(its checks, plan and constant matrices, ``convnorm._engine``) unless it was prepared while traced:
a layer compiled before any eager call prepares inside the graph, so the compiled program
rebuilds the constants on every call; a layer that ran once eagerly keeps them, and the compiled
program reads them as inputs. This script times both, side by side in one process, with the
plain network (``nn.Conv2d`` in place of ``ConvNorm2d``) compiled and eager as the reference:

- ``plain eager``, ``plain compiled``: the Conv2d+BN network;
- ``convnorm eager``;
- ``convnorm compiled``: compiled before any eager call (constants in the graph);
- ``convnorm compiled after eager``: compiled after one eager training step (constants kept).

Each compiled network's first step (the compile) is timed once; then the steps are timed
interleaved (``convnorm_book.layer_benchmark.interleaved_medians``). Compiling is CPU-heavy:
run it alone, ``nice -n 19``, one thread.

    OMP_NUM_THREADS=1 nice -n 19 python benchmarks/bench_compile.py
"""
from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

import torch
import torch.nn as nn

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), *(str(ROOT / folder) for folder in (".", "lab", "book_code"))]

from bench_layer import cpu_line  # noqa: E402

from convnorm import ConvNorm2d  # noqa: E402
from convnorm_book.layer_benchmark import interleaved_medians, make_train_step  # noqa: E402


def network(conv: type[nn.Conv2d]) -> nn.Module:
    """Three 3x3 convolutions (16, 32 strided, 32 channels), each with BatchNorm and ReLU, then
    average pooling and a linear layer: CIFAR-shaped, small enough to compile in minutes."""
    layers: list[nn.Module] = []
    for c_in, c_out, stride in ((3, 16, 1), (16, 32, 2), (32, 32, 1)):
        layers += [conv(c_in, c_out, 3, stride, 1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU()]
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.manual_seed(0)
    images, labels = torch.randn(args.batch, 3, 32, 32), torch.randint(0, 10, (args.batch,))
    plain, convnorm = network(nn.Conv2d), network(ConvNorm2d)
    models = {"plain eager": plain, "plain compiled": copy.deepcopy(plain), "convnorm eager": convnorm,
              "convnorm compiled": copy.deepcopy(convnorm), "convnorm compiled after eager": copy.deepcopy(convnorm)}
    steps = {name: make_train_step(model, images, labels) for name, model in models.items()}
    steps["convnorm compiled after eager"]()  # one eager step: every layer prepared and kept
    compile_s = {}
    for name, model in models.items():
        if "compiled" in name:
            model.compile()
            start = time.perf_counter()
            steps[name]()
            compile_s[name] = time.perf_counter() - start
    medians = {name: summary["median_s"] for name, summary in interleaved_medians(steps, args.repeats).items()}
    print(f"CPU: {cpu_line()}; torch {torch.__version__}, {torch.get_num_threads()} thread(s), batch {args.batch}")
    for name, seconds in compile_s.items():
        print(f"first step (compile) of {name}: {seconds:.1f} s, "
              f"{seconds / compile_s['plain compiled']:.2f}x the plain network's")
    for name, seconds in medians.items():
        eager = medians["plain eager" if name.startswith("plain") else "convnorm eager"]
        print(f"{name}: {seconds * 1e3:.1f} ms a step, {seconds / eager:.2f}x its eager step")


if __name__ == "__main__":
    main()
