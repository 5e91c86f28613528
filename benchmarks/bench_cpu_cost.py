"""What ConvNorm costs on a CPU: a training step of a network against its ``convnorm.convert``-ed copy.

For two networks, at one and at two threads, in one process, with the same weights in both
copies (``convert`` keeps them):

- the CIFAR ResNet18 (``convnorm_lab.models.build_model("resnet18", norm="bn")``) on 32x32 images;
- torchvision's ResNet18 architecture (``resnet.resnet18``, written with ``torch.nn``) on
  224x224 images, at a small batch so that a step takes seconds.

A step is forward, cross-entropy, backward and an SGD step with momentum. The two copies step in
turn, one step of each per round (``timing.interleaved_medians``), so that
the machine's other load falls on both alike; the record keeps every step's time, the ratio of
the medians, each round's ratio, and the load average before and after each configuration (on a
shared machine other processes slow both networks, unevenly). Written to
``benchmarks/results/bench_cpu_cost.json``; the book's page *ConvNorm in practice* reads it.

    OMP_NUM_THREADS=2 nice -n 19 python benchmarks/bench_cpu_cost.py
"""
from __future__ import annotations

import argparse
import copy
import os
import platform
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path

import torch
import torch.nn as nn
from bench_layer import cpu_line
from resnet import resnet18
from timing import interleaved_medians, make_train_step

from convnorm import convert
from convnorm_lab.models import build_model
from convnorm_lab.training.results import cpu_info, device_name, provenance, save_results

HERE = Path(__file__).resolve().parent
NETWORKS = ("conv2d+bn", "convnorm2d+bn")
THREADS = (1, 2)


def cifar_resnet18() -> nn.Module:
    """The CIFAR ResNet18 with Conv2d+BN (3x3 stem, no pooling, maps of 32x32 down to 4x4, 10 classes)."""
    return build_model("resnet18", norm="bn")


def torchvision_resnet18() -> nn.Module:
    """torchvision's ResNet18 architecture with Conv2d+BN (7x7 stride-2 stem, max pooling, 1000 classes)."""
    return resnet18()


CASES = {"cifar_resnet18": (cifar_resnet18, 32, 10), "torchvision_resnet18": (torchvision_resnet18, 224, 1000)}
"""Each network: how it is built, its image size, its classes."""


def pair(build) -> dict[str, nn.Module]:
    """The Conv2d+BN network and its conversion, from the same weights."""
    torch.manual_seed(0)
    base = build()
    return {"conv2d+bn": base, "convnorm2d+bn": convert(copy.deepcopy(base))}


def measure(case: str, batch: int, threads: int, repeats: int) -> dict:
    """One configuration: interleaved training steps of both networks of ``case`` at ``threads``."""
    build, size, classes = CASES[case]
    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(0)
    images = torch.rand(batch, 3, size, size, generator=g)
    labels = torch.randint(0, classes, (batch,), generator=g)
    nets = pair(build)
    load_before = os.getloadavg()
    timing = interleaved_medians({name: make_train_step(net, images, labels) for name, net in nets.items()},
                                 repeats=repeats, warmup=1)
    load_after = os.getloadavg()
    base, ours = NETWORKS
    rounds = [b / a for a, b in zip(timing[base]["samples_s"], timing[ours]["samples_s"])]
    return {"network": case, "image_size": size, "batch": batch, "threads": torch.get_num_threads(),
            "step_time": timing, "ratio_median": timing[ours]["median_s"] / timing[base]["median_s"],
            "round_ratios": rounds, "load_average_before": list(load_before), "load_average_after": list(load_after)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cifar-batch", type=int, default=32)
    parser.add_argument("--imagenet-batch", type=int, default=2, help="batch of the 224x224 network")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "bench_cpu_cost.json")
    args = parser.parse_args()
    if min(args.cifar_batch, args.imagenet_batch, args.repeats) < 1:
        parser.error("--cifar-batch, --imagenet-batch and --repeats must be at least 1")
    start, cpu = time.time(), cpu_info()
    batches = {"cifar_resnet18": args.cifar_batch, "torchvision_resnet18": args.imagenet_batch}
    configurations = []
    for case, batch in batches.items():
        for threads in THREADS:
            result = measure(case, batch, threads, args.repeats)
            configurations.append(result)
            t = result["step_time"]
            print(f"{case} {result['image_size']}x{result['image_size']} batch {batch}, {threads} thread(s): "
                  f"{t['conv2d+bn']['median_s']:.2f} s vs {t['convnorm2d+bn']['median_s']:.2f} s, "
                  f"ratio {result['ratio_median']:.2f} (rounds {min(result['round_ratios']):.2f}-"
                  f"{max(result['round_ratios']):.2f}); load {result['load_average_before'][0]:.1f} -> "
                  f"{result['load_average_after'][0]:.1f}", flush=True)
    results = {
        "setup": {"train_step": "forward + cross-entropy + backward + SGD(momentum) step",
                  "convnorm": "convnorm.convert of a copy of the Conv2d+BN network (same weights)",
                  "order": "one step of each network per round, Conv2d+BN first; one warm-up round",
                  "device": device_name("cpu"), "cpu": cpu, "python": platform.python_version(),
                  "repeats": args.repeats, "threads": list(THREADS)},
        "configurations": configurations,
        "ratio_range": [min(c["ratio_median"] for c in configurations),
                        max(c["ratio_median"] for c in configurations)],
        "ratio_median_of_configurations": statistics.median(c["ratio_median"] for c in configurations),
        "measured_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    print(f"CPU: {cpu_line()}; torch {torch.__version__}")
    experiment = provenance("bench_cpu_cost", "ab_threads_1_2", 0, None, time.time() - start, "cpu")
    print(f"written {save_results(args.out, experiment, results)}")


if __name__ == "__main__":
    main()
