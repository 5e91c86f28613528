"""The calibration at the start of a GPU window: what a training step costs here, and
what ConvNorm costs against Conv2d+BN and the authors' algorithm, in one record.

1. **Step times of the protocol** (``step_times``): for each network and normalization
   the window will train (``--networks``, in order), seconds per image of a training
   step and of an evaluation pass, measured by the trainer itself
   (:func:`convnorm.experiments.step_timing.time_steps`). Each network is timed in
   its own process (two captured CUDA graphs in one process have failed: see
   ``convnorm_book.layer_benchmark.make_graphed_train_step``).
2. **Run time against the baselines** (``time``, ``setup``): a CIFAR ResNet18 step at
   batch 128 in float32, Conv2d+BN, this package's ConvNorm2d+BN and the authors'
   algorithm (``authors_layer.py``) +BN, eagerly (the three interleaved in this process,
   medians) and as one CUDA graph each (one process per network, medians of replays).
   The book's run-time table reads these. With ``--runtime-once`` (a window's choice) it
   is left out where a record of ``benchmarks/results`` holds it whole for this GPU
   (:func:`recorded_runtime`): it answers a question about the GPU and the layer, not about
   the window.
3. **Concurrency** (``concurrency``): the first network's epoch timed in two processes at
   once against alone; ``jobs`` is 2 where two trainings at once get through more
   images per second than one (by ``MIN_GAIN``), else 1, and ``slowdown`` how much longer
   each takes beside the other. Whether the processes share the GPU's multiprocessors
   (MPS, started by the window's script) or take turns is recorded in ``mode``.
4. **How ConvNorm transforms here** (``alternatives``, ``dense_transforms``): before the
   second network (the core's ConvNorm+BN ResNet18) is timed, its eager step is timed with
   the package's rule (FFTs on a GPU) and with the spatial computation's dense DFT matrices
   on the GPU too (:meth:`~convnorm.functional.ComputationPolicy.transforming_densely`), the
   one choice of the computation policy no benchmark has timed on a GPU. Dense matrices are
   chosen when they are faster by ``MIN_DENSE_GAIN`` (and not ``--forbid-dense-transforms``,
   which the window passes when their CUDA checks failed); that network and every later one
   is timed as chosen, and ``scripts/gpu_runs.py`` trains as chosen.
5. **Where ConvNorm's step goes** (``profile``): the second network stepped eagerly under
   the profiler, as chosen, its costliest operators per step
   (:func:`convnorm.experiments.step_timing.profile_steps`): what a faster layer on this
   GPU has to cut.

The first two networks (with the alternatives and the profile) and the concurrency are
measured whatever the budget: the window's estimates and its number of trainings at once
rest on them. The rest stops at ``--budget`` seconds: what was not reached is listed in
``skipped``, and the launcher prices it with recorded step times. Runs on a CPU too (the
window's rehearsal).

    python benchmarks/calibrate_gpu.py --preset fast --out benchmarks/results/gpu_calibration_<gpu>_<time>.json
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
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the packages of this checkout, not other installed copies
sys.path.insert(0, str(HERE))

from authors_layer import with_authors_layers  # noqa: E402
from bench_layer import batch, cpu_info  # noqa: E402

from convnorm.experiments.step_timing import profile_steps, time_steps  # noqa: E402
from convnorm.functional import current_policy, use_policy  # noqa: E402
from convnorm.models import build_model  # noqa: E402
from convnorm.training import provenance, save_results  # noqa: E402
from convnorm.training.graphed import GraphedStep  # noqa: E402
from convnorm_book.layer_benchmark import interleaved_medians, make_train_step  # noqa: E402

RUNTIME_MODELS = ("conv2d+bn", "convnorm2d+bn", "authors+bn")
EPOCH_IMAGES = 45000
#: two trainings at once are worth it when together they get through this much more
MIN_GAIN = 1.1
#: dense DFT matrices replace FFTs when a step is this much faster with them (two timings of
#: one step differ by a few percent)
MIN_DENSE_GAIN = 1.05
#: the protocol networks to time, highest priority first (the core's two networks first)
NETWORKS = ("resnet18:bn", "resnet18:convnorm+bn", "resnet18:none", "resnet18:convnorm", "resnet18:sn+bn",
            "resnet18:oni+bn", "resnet18:ocnn+bn", "vgg16:bn", "vgg16:convnorm+bn")


def runtime_network(name: str, device: torch.device) -> torch.nn.Module:
    torch.manual_seed(0)
    if name == "conv2d+bn":
        return build_model("resnet18", "bn").to(device)
    model = build_model("resnet18", "convnorm+bn")
    return (with_authors_layers(model) if name == "authors+bn" else model).to(device)


def graph_child(name: str, size: int, replays: int) -> dict:
    """Seconds per step of one runtime network replayed from one CUDA graph."""
    model, (x, y) = runtime_network(name, torch.device("cuda")).train(), batch(size, seed=1, device="cuda")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)  # the eager step's optimizer
    step = GraphedStep(model, optimizer, lambda a, b: (F.cross_entropy(logits := model(a), b), logits), x, y)
    for _ in range(5):
        step(x, y, 0.01)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        step(x, y, 0.01)
    end.record()
    torch.cuda.synchronize()
    return {"seconds_per_step": start.elapsed_time(end) / 1000 / replays}


def alternatives(preset: str, arch: str, norm: str, device: torch.device, batches: int) -> dict:
    """Seconds per image of an eager training step of ``arch`` with ``norm``, computed by the
    package's rule and with dense DFT matrices on ``device`` too; an error is recorded, not raised."""
    timed = {}
    for name, policy in (("rule", current_policy()), ("dense DFT matrices", transforms(True, device))):
        try:
            with use_policy(policy):
                timed[name] = time_steps(preset, arch, norm, device, batches, cuda_graph=False)["train_s_per_image"]
        except Exception as error:  # noqa: BLE001 (an alternative that fails is a finding, not a crash)
            timed[name] = f"{type(error).__name__}: {error}"
    return timed


def transforms(dense: bool, device: torch.device):
    """The computation policy to time and train with: the package's rule, or with dense DFT
    matrices on ``device`` too if ``dense``."""
    return current_policy().transforming_densely(device.type) if dense else current_policy()


def dense_is_faster(timed: dict) -> bool:
    """Whether :func:`alternatives` found the dense DFT matrices faster by ``MIN_DENSE_GAIN``
    (an alternative that failed is not chosen)."""
    rule, dense = timed.get("rule"), timed.get("dense DFT matrices")
    return isinstance(rule, float) and isinstance(dense, float) and dense * MIN_DENSE_GAIN <= rule


def recorded_runtime(gpu: str, folder: Path = HERE / "results") -> Path | None:
    """A calibration record in ``folder`` whose run-time comparison on ``gpu`` (the name its
    ``setup`` gives) is whole: every network of ``RUNTIME_MODELS`` eagerly and, on a GPU, as
    one CUDA graph; None if there is none."""
    for path in sorted(folder.glob("gpu_calibration_*.json")):
        results = json.loads(path.read_text())["results"]
        modes = ("eager",) if gpu.startswith("cpu") else ("eager", "cuda_graph")
        timed = results.get("time") or {}
        if results.get("setup", {}).get("gpu") == gpu and all(set(timed.get(m, {})) == set(RUNTIME_MODELS)
                                                             for m in modes):
            return path
    return None


def protocol_child(args: argparse.Namespace, device: torch.device, network: str, choose: bool) -> dict:
    """The step times of ``network`` (``arch:norm``) as the window will train it, and whether
    with dense DFT matrices (``dense_transforms``): as ``args`` says, or, if ``choose``, as
    :func:`alternatives` finds faster, then profiled too. A step that fails with dense matrices
    (one the GPU cannot capture, say) is timed again by the package's rule, and the failure is
    kept (``dense_error``), so that the window trains what it timed."""
    arch, norm = network.split(":")
    chosen, dense = {}, args.dense_transforms
    if choose:
        chosen["alternatives"] = alternatives(args.preset, arch, norm, device, args.batches)
        dense = dense_is_faster(chosen["alternatives"]) and not args.forbid_dense_transforms

    def timed(dense: bool) -> dict:
        with use_policy(transforms(dense, device)):
            answer = time_steps(args.preset, arch, norm, device, args.batches, cuda_graph=False if args.eager else None)
            if choose:
                chosen["profile"] = profile_steps(args.preset, arch, norm, device)
        return answer

    try:
        answer = timed(dense)
    except Exception as error:  # noqa: BLE001 (dense matrices that fail are a finding; the rule is timed instead)
        if not dense:
            raise
        chosen["dense_error"], dense = f"{type(error).__name__}: {error}", False
        answer = timed(dense)
    return {**answer, **chosen, "dense_transforms": dense}


def child(*arguments: str, background: bool = False):
    command = [sys.executable, __file__, "--child", *arguments]
    if background:
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return _answer(subprocess.run(command, capture_output=True, text=True))


def _answer(done) -> dict:
    """A child's JSON answer, or its error (the last line it wrote to stderr)."""
    if done.returncode:
        lines = done.stderr.strip().splitlines()
        return {"error": lines[-1] if lines else f"exit {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="fast")
    parser.add_argument("--networks", default=",".join(NETWORKS), help="arch:norm, comma-separated, in order")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--budget", type=float, default=30.0, help="seconds; what is not reached is skipped")
    parser.add_argument("--batches", type=int, default=20, help="minibatches of a timed epoch")
    parser.add_argument("--runtime-batch", type=int, default=128)
    parser.add_argument("--eager", action="store_true",
                        help="time the trainings' steps eagerly (as a window that trains without CUDA graphs)")
    parser.add_argument("--runtime-once", action="store_true",
                        help="leave out the run-time comparison where a record holds it whole for this GPU")
    parser.add_argument("--forbid-dense-transforms", action="store_true",
                        help="time dense DFT matrices but never choose them (their CUDA checks failed)")
    parser.add_argument("--dense-transforms", action="store_true", help=argparse.SUPPRESS)  # a child's choice
    parser.add_argument("--out", required=False)
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    device = torch.device(args.device)
    if args.child:
        kind, *rest = args.child
        if kind == "protocol":  # rest: the network, then "profile" to choose the transforms and profile it too
            print(json.dumps(protocol_child(args, device, rest[0], choose=rest[1:] == ["profile"])))
        else:
            print(json.dumps(graph_child(rest[0], args.runtime_batch, 50)))
        return
    begin = time.perf_counter()
    left = lambda: args.budget - (time.perf_counter() - begin)  # noqa: E731
    networks = [n for n in args.networks.split(",") if n]
    step_times, skipped = [], []
    common = ["--preset", args.preset, "--device", args.device, "--batches", str(args.batches)] + (
        ["--eager"] if args.eager else []) + (["--forbid-dense-transforms"] if args.forbid_dense_transforms else [])

    profile, alternative_times, dense_transforms = None, {}, None

    def protocol(network: str, *also: str) -> None:
        nonlocal profile, dense_transforms
        answer = child("protocol", network, *also, *common)
        if "error" in answer:
            skipped.append({"what": f"step time of {network}", "why": answer["error"]})
            return
        profile = answer.pop("profile", profile)
        dense = answer.pop("dense_transforms")
        if "dense_error" in answer:
            skipped.append({"what": "dense DFT matrices for the trainings", "why": answer.pop("dense_error")})
        if "alternatives" in answer:
            alternative_times.update(answer.pop("alternatives"))
            dense_transforms = dense
            if dense:  # every later network is timed as the trainings will compute
                common.append("--dense-transforms")
        step_times.append(answer)
        print(f"{network}: {answer['train_s_per_image'] * 1e6:.1f} us per image ({answer['precision']})")

    for i, network in enumerate(networks[:2]):  # the core's networks come first, whatever the budget
        protocol(network, *(["profile"] if i == 1 else []))
    if profile is not None:
        print(f"{networks[1]} profiled: {profile['ms_per_step']:.1f} ms a step; costliest: "
              + ", ".join(f"{op['name']} {op['share']:.0%}" for op in profile["ops"][:3]))
    for name, value in alternative_times.items():
        print(f"{networks[1]} eager, {name}: " + (f"{value * 1e6:.1f} us per image" if isinstance(value, float)
                                                  else value))
    if dense_transforms is not None:
        print("the trainings transform by " + ("dense DFT matrices" if dense_transforms else "the package's rule"))
    if args.forbid_dense_transforms:
        skipped.append({"what": "dense DFT matrices for the trainings", "why": "their CUDA checks failed"})

    # concurrency: the first network in two processes at once
    concurrency = {"jobs": 1, "slowdown": 1.0, "mode": "one training at a time"}
    solo = next((e for e in step_times if f"{e['arch']}:{e['norm']}" == networks[0]), None)
    if solo is not None:
        pair = [child("protocol", networks[0], *common, background=True) for _ in range(2)]
        answers = []
        for process in pair:
            out, err = process.communicate()
            answers.append(_answer(subprocess.CompletedProcess(process.args, process.returncode, out, err)))
        if all("error" not in a for a in answers):
            slowdown = statistics.mean(a["train_s_per_image"] for a in answers) / solo["train_s_per_image"]
            mps = bool(os.environ.get("CUDA_MPS_PIPE_DIRECTORY")) and device.type == "cuda"
            concurrency = {"jobs": 2 if 2 / slowdown >= MIN_GAIN else 1, "slowdown": slowdown,
                           "mode": "processes sharing the GPU" + (" (MPS)" if mps else " (time-sliced)")}
            print(f"two at once: each {slowdown:.2f}x as long; jobs {concurrency['jobs']}")
        else:
            skipped.append({"what": "concurrency", "why": next(a["error"] for a in answers if "error" in a)})
    else:
        skipped.append({"what": "concurrency", "why": "no step time measured"})

    # run time at batch 128 against Conv2d+BN and the authors' algorithm
    runtime, graph_errors = {}, {}
    gpu = torch.cuda.get_device_name() if device.type == "cuda" else f"cpu ({cpu_info()['model']})"
    recorded = recorded_runtime(gpu) if args.runtime_once else None
    if recorded is not None:
        skipped.append({"what": "run time against the baselines", "why": f"recorded whole in {recorded.name}"})
    elif left() > 0:
        x, y = batch(args.runtime_batch, seed=1, device=args.device)
        steps = {name: make_train_step(runtime_network(name, device), x, y, lr=0.01) for name in RUNTIME_MODELS}
        eager = interleaved_medians(steps, repeats=10 if device.type == "cuda" else 2, warmup=2)
        del steps
        runtime["eager"] = {name: eager[name]["median_s"] for name in RUNTIME_MODELS}
        if device.type == "cuda":
            graphs = {}
            for name in RUNTIME_MODELS:
                if left() <= 0:  # not an error of the graph: the budget was spent
                    skipped.append({"what": f"run time of {name} as one CUDA graph", "why": "the budget was spent"})
                    continue
                answer = child("graph", name, "--runtime-batch", str(args.runtime_batch))
                if "error" in answer:
                    graph_errors[name] = answer["error"]
                else:
                    graphs[name] = answer["seconds_per_step"]
            if len(graphs) == len(RUNTIME_MODELS):
                runtime["cuda_graph"] = graphs
    else:
        skipped.append({"what": "run time against the baselines", "why": "the budget was spent"})

    for network in networks[2:]:
        if left() <= 0:
            skipped.append({"what": f"step time of {network}", "why": "the budget was spent"})
            continue
        protocol(network)

    steps_per_epoch = -(-EPOCH_IMAGES // args.runtime_batch)
    time_table = {mode: {n: {"seconds_per_step": s, "relative_to_conv2d_bn": s / medians["conv2d+bn"],
                             "seconds_per_epoch": s * steps_per_epoch} for n, s in medians.items()}
                  for mode, medians in runtime.items()}
    results = {"setup": {"gpu": gpu, "cpu": cpu_info(), "preset": args.preset, "model": "CIFAR ResNet18",
                         "batch": args.runtime_batch, "torch": torch.__version__,
                         "step": "forward + cross-entropy + backward + SGD(momentum) step, float32",
                         "eager": "the three networks interleaved in one process, median of the rounds",
                         "cuda_graph": "each network in its own process, 50 replays"},
               "step_times": step_times, "concurrency": concurrency, "time": time_table,
               "profile": profile, "alternatives": alternative_times, "dense_transforms": dense_transforms,
               "graph_errors": graph_errors,
               "skipped": skipped}
    if args.out:
        block = provenance("calibrate_gpu", args.preset, 0, None, time.perf_counter() - begin, device)
        print("wrote", save_results(args.out, block, results))


if __name__ == "__main__":
    main()
