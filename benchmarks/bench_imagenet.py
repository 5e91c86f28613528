"""ConvNorm2d+BN against Conv2d+BN at ImageNet size: a ResNet18 of torchvision's architecture on
224x224 images, converted by ``convnorm.convert`` as a practitioner converts a pretrained model.

Times, interleaved (one call of each network in turn, medians), a training step (forward,
cross-entropy, backward, SGD with momentum) and an evaluation forward (``model.eval()``, no
gradient: what a deployed model runs), and counts the bytes autograd saves for backward. Writes
the figures with their provenance and the processor to ``benchmarks/results/bench_imagenet.json``.

    python benchmarks/bench_imagenet.py                  # batch 8, CPU
    python benchmarks/bench_imagenet.py --threads 1 --out benchmarks/results/bench_imagenet_1thread.json
    python benchmarks/bench_imagenet.py --device cuda --batch 64 --out benchmarks/results/bench_imagenet_cuda.json

The network is torchvision's ``resnet18`` layer for layer, written with ``torch.nn``
(:func:`resnet.resnet18`) so that torchvision is not needed; ``convert`` turns every one of its
convolutions into a ``ConvNorm2d``, stem and shortcuts included. At this size the ConvNorm layers
normalize maps of 56x56 to 7x7 (the stem 224x224), so the policy computes more of them spatially
with FFTs than at CIFAR's sizes.
"""
from __future__ import annotations

import argparse
import platform
import time
from datetime import datetime, timezone
from pathlib import Path

import torch
import torch.nn as nn
from bench_layer import cpu_line, print_timing
from resnet import resnet18
from timing import interleaved_medians, make_train_step, saved_activation_bytes

from convnorm import convert
from convnorm_lab.training.results import cpu_info, device_name, provenance, save_results

HERE = Path(__file__).resolve().parent
NETWORKS = ("conv2d+bn", "convnorm2d+bn")


def networks(device: str) -> dict[str, nn.Module]:
    """Both networks from the same initial weights: the Conv2d+BN ResNet18 and its conversion."""
    torch.manual_seed(0)
    base = resnet18()
    converted = resnet18()
    converted.load_state_dict(base.state_dict())
    return {"conv2d+bn": base.to(device), "convnorm2d+bn": convert(converted).to(device)}


def evaluation_forward(model: nn.Module, images: torch.Tensor):
    """One forward of ``model`` in evaluation mode without gradients, read back (a GPU synchronises)."""
    def forward() -> float:
        with torch.no_grad():
            return float(model(images)[0, 0])
    return forward


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--size", type=int, default=224, help="image height and width")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "bench_imagenet.json")
    args = parser.parse_args()
    if args.batch < 1 or args.size < 32 or args.repeats < 1:
        parser.error("--batch and --repeats must be at least 1, --size at least 32")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda needs a CUDA GPU")
    if args.threads:
        torch.set_num_threads(args.threads)
    start, cpu = time.time(), cpu_info()  # the load average before the run
    g = torch.Generator().manual_seed(0)
    images = torch.rand(args.batch, 3, args.size, args.size, generator=g).to(args.device)
    labels = torch.randint(0, 1000, (args.batch,), generator=g).to(args.device)
    nets = networks(args.device)
    train = interleaved_medians({name: make_train_step(net, images, labels) for name, net in nets.items()},
                                repeats=args.repeats)
    saved = {name: saved_activation_bytes(net, images) for name, net in nets.items()}
    for net in nets.values():
        net.eval()  # after the training steps: ConvNorm normalizes with its running average
    evaluation = interleaved_medians({name: evaluation_forward(net, images) for name, net in nets.items()},
                                     repeats=args.repeats)
    base, ours = NETWORKS
    results = {
        "setup": {"model": "ResNet18 of torchvision's architecture; ConvNorm2d+BN by convnorm.convert",
                  "batch": args.batch, "image_size": args.size, "classes": 1000,
                  "train_step": "forward + cross-entropy + backward + SGD(momentum) step",
                  "evaluation": "forward in evaluation mode without gradients", "device": device_name(args.device),
                  "cpu": cpu, "python": platform.python_version(), "repeats": args.repeats,
                  "threads": torch.get_num_threads()},
        "train_time": train,
        "train_time_ratio_median": train[ours]["median_s"] / train[base]["median_s"],
        "evaluation_time": evaluation,
        "evaluation_time_ratio_median": evaluation[ours]["median_s"] / evaluation[base]["median_s"],
        "saved_activation_bytes": saved,
        "saved_activation_ratio": saved[ours] / saved[base],
        "load_average_after": cpu_info()["load_average"],
        "measured_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    print(f"ResNet18 at {args.size}x{args.size}, batch {args.batch}, {device_name(args.device)}, {cpu_line()}")
    print("training step:")
    print_timing(train, results["train_time_ratio_median"])
    print("evaluation forward:")
    print_timing(evaluation, results["evaluation_time_ratio_median"])
    print(f"  saved-activation ratio: {results['saved_activation_ratio']:.2f} "
          f"({saved[ours] / 2**20:.1f} MiB vs {saved[base] / 2**20:.1f} MiB)")
    experiment = provenance("bench_imagenet", f"batch{args.batch}", 0, None, time.time() - start, args.device)
    print(f"written {save_results(args.out, experiment, results)}")


if __name__ == "__main__":
    main()
