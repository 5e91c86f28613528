"""The calibration of a GPU window, after the layer's benchmark (``bench_gpu.py``): what a
training step of each network the window will train costs here, as the trainings will run it.

1. **Step times of the protocol** (``step_times``): for each network and normalization the
   window will train (``--networks``, in order: the core's two first), seconds per image of a
   training step and of an evaluation pass, measured by the trainer itself
   (:func:`convnorm_lab.experiments.step_timing.time_steps`) at the preset's batch and precision,
   with ConvNorm's filter as the benchmark chose it (``--filter``;
   :meth:`~convnorm.functional.ComputationPolicy.filtering`) and as CUDA graphs unless
   ``--eager`` (a window whose graph check failed). Each network is timed in its own process
   (two captured CUDA graphs in one process have failed: see
   ``timing.make_graphed_train_step``).
2. **Where ConvNorm's step goes** (``profile``): the second network stepped eagerly under the
   profiler, its costliest operators per step
   (:func:`convnorm_lab.experiments.step_timing.profile_steps`): what a faster layer on this GPU
   has to cut.
3. **Concurrency** (``concurrency``): the first network's epoch timed in two processes at once
   against alone; ``jobs`` is 2 where two trainings at once get through more images per second
   than one (by ``MIN_GAIN``), else 1, and ``slowdown`` how much longer each takes beside the
   other. Whether the processes share the GPU's multiprocessors (MPS, started by the window's
   script) or take turns is recorded in ``mode``.

Everything stops at ``--budget`` seconds, each child process included (it is ended when the
budget runs out): what was not reached is listed in ``skipped``, and the launcher prices the
trainings it could not time with recorded step times. Everything runs at the preset's own
scale (``fast-smoke`` at its small one), on a CPU too (the window's rehearsal).

    python benchmarks/calibrate_gpu.py --preset fast --filter fused \
        --out benchmarks/results/gpu_calibration_<gpu>_<time>.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / folder) for folder in (".", "lab", "book_code")]  # this checkout's packages
sys.path.insert(0, str(HERE))

from convnorm.functional import FILTERS, current_policy, use_policy  # noqa: E402
from convnorm_lab.experiments.step_timing import profile_steps, time_steps  # noqa: E402
from convnorm_lab.training import provenance, save_results  # noqa: E402
from convnorm_lab.training.results import cpu_info  # noqa: E402

#: two trainings at once are worth it when together they get through this much more
MIN_GAIN = 1.1
#: the protocol networks to time, highest priority first (the core's two networks first)
NETWORKS = ("resnet18:bn", "resnet18:convnorm+bn", "resnet18:none", "resnet18:convnorm", "resnet18:sn+bn",
            "resnet18:oni+bn", "resnet18:ocnn+bn", "vgg16:bn", "vgg16:convnorm+bn")


def filtered(filter: str | None, device: torch.device):
    """The computation policy the trainings use: ConvNorm's spatial filter ``filter`` on
    ``device`` (None: the package's rule)."""
    return current_policy() if filter is None else current_policy().filtering(filter, device.type)


def protocol_child(args: argparse.Namespace, device: torch.device, network: str, profiled: bool) -> dict:
    """The step times of ``network`` (``arch:norm``) as the window will train it, and, if
    ``profiled``, its profile too."""
    arch, norm = network.split(":")
    with use_policy(filtered(args.filter, device)):
        answer = time_steps(args.preset, arch, norm, device, args.batches, cuda_graph=False if args.eager else None)
        if profiled:
            answer["profile"] = profile_steps(args.preset, arch, norm, device)
    return answer


def child(arguments: list[str], timeout: float, background: bool = False):
    """A child process of this script with ``arguments``: its JSON answer, or its error (the
    last line it wrote to stderr, or that the budget ended it); in the background, the process."""
    command = [sys.executable, __file__, "--child", *arguments]
    if background:
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        return _answer(subprocess.run(command, capture_output=True, text=True, timeout=max(timeout, 0.1)))
    except subprocess.TimeoutExpired:
        return {"error": "the budget was spent"}


def _answer(done) -> dict:
    """A child's JSON answer, or its error (the last line it wrote to stderr)."""
    if done.returncode:
        lines = done.stderr.strip().splitlines()
        return {"error": lines[-1] if lines else f"exit {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def concurrency_of(arguments: list[str], solo: dict, device: torch.device, timeout: float) -> dict:
    """Two children timing the first network at once, against ``solo``'s time alone."""
    pair = [child(arguments, timeout, background=True) for _ in range(2)]
    answers = []
    for process in pair:
        try:
            out, err = process.communicate(timeout=max(timeout, 0.1))
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            answers.append({"error": "the budget was spent"})
            continue
        answers.append(_answer(subprocess.CompletedProcess(process.args, process.returncode, out, err)))
    failed = next((a["error"] for a in answers if "error" in a), None)
    if failed is not None:
        return {"error": failed}
    slowdown = statistics.mean(a["train_s_per_image"] for a in answers) / solo["train_s_per_image"]
    mps = bool(os.environ.get("CUDA_MPS_PIPE_DIRECTORY")) and device.type == "cuda"
    return {"jobs": 2 if 2 / slowdown >= MIN_GAIN else 1, "slowdown": slowdown,
            "mode": "processes sharing the GPU" + (" (MPS)" if mps else " (time-sliced)")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="fast")
    parser.add_argument("--networks", default=",".join(NETWORKS), help="arch:norm, comma-separated, in order")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--budget", type=float, default=60.0, help="seconds; what is not reached is skipped")
    parser.add_argument("--batches", type=int, default=20, help="minibatches of a timed epoch")
    parser.add_argument("--eager", action="store_true",
                        help="time the trainings' steps eagerly (as a window that trains without CUDA graphs)")
    parser.add_argument("--filter", choices=list(FILTERS), default=None,
                        help="ConvNorm's spatial filter on the device (default: the package's rule)")
    parser.add_argument("--out", required=False)
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.budget <= 0:
        parser.error(f"--budget must be a positive number of seconds, got {args.budget}")
    device = torch.device(args.device)
    if args.child:  # the network, then "profile" to profile it too
        print(json.dumps(protocol_child(args, device, args.child[0], profiled=args.child[1:] == ["profile"])))
        return
    begin = time.perf_counter()
    left = lambda: args.budget - (time.perf_counter() - begin)  # noqa: E731
    networks = [n for n in args.networks.split(",") if n]
    common = ["--preset", args.preset, "--device", args.device, "--batches", str(args.batches)] + (
        ["--eager"] if args.eager else []) + (["--filter", args.filter] if args.filter else [])
    step_times, skipped, profile = [], [], None
    for i, network in enumerate(networks):
        if left() <= 0:
            skipped.append({"what": f"step time of {network}", "why": "the budget was spent"})
            continue
        answer = child([network, *(["profile"] if i == 1 else []), *common], left())
        if "error" in answer:
            skipped.append({"what": f"step time of {network}", "why": answer["error"]})
            continue
        profile = answer.pop("profile", profile)
        step_times.append(answer)
        print(f"{network}: {answer['train_s_per_image'] * 1e6:.1f} us per image ({answer['precision']})")
        if i == 1 and profile is not None:
            print(f"{network} profiled: {profile['ms_per_step']:.1f} ms a step; costliest: "
                  + ", ".join(f"{op['name']} {op['share']:.0%}" for op in profile["ops"][:3]))

    concurrency = {"jobs": 1, "slowdown": 1.0, "mode": "one training at a time"}
    solo = next((e for e in step_times if f"{e['arch']}:{e['norm']}" == networks[0]), None)
    if solo is None:
        skipped.append({"what": "concurrency", "why": "no step time of the first network"})
    elif left() <= 0:
        skipped.append({"what": "concurrency", "why": "the budget was spent"})
    else:
        answer = concurrency_of([networks[0], *common], solo, device, left())
        if "error" in answer:
            skipped.append({"what": "concurrency", "why": answer["error"]})
        else:
            concurrency = answer
            print(f"two at once: each {answer['slowdown']:.2f}x as long; jobs {answer['jobs']}")

    gpu = torch.cuda.get_device_name() if device.type == "cuda" else f"cpu ({cpu_info()['model']})"
    results = {"setup": {"gpu": gpu, "cpu": cpu_info(), "preset": args.preset, "torch": torch.__version__},
               "step_times": step_times, "concurrency": concurrency, "profile": profile, "filter": args.filter,
               "skipped": skipped}
    for item in skipped:
        print(f"skipped: {item['what']} ({item['why']})")
    if args.out:
        block = provenance("calibrate_gpu", args.preset, 0, None, time.perf_counter() - begin, device)
        print("wrote", save_results(args.out, block, results))


if __name__ == "__main__":
    main()
