"""The layer's benchmark, the first step of a GPU window: which of ConvNorm's filters is correct
and fastest on this GPU, and what a ConvNorm2d+BN ResNet18 costs against Conv2d+BN and the
authors' algorithm, in one record.

1. **Correctness** (``checks``): each filter of the spatial computation (``FILTERS``: the fused
   Triton kernels, FFTs, dense DFT matrices; :meth:`~convnorm.functional.ComputationPolicy.filtering`)
   computes ConvNorm2d layers of the ResNet18's geometries on this device, output and the
   gradients of input, weight and affine kernel, against the float64 reference
   (:func:`convnorm.reference.conv_norm_reference`) on the same device: in float32 with
   TensorFloat-32 off (``FLOAT32_TOLERANCE``), and under bfloat16 autocast for the output, for a
   random kernel and a low-pass one (a box filter: its spectrum nearly vanishes at high
   frequencies, where the normalizer's gain reaches :math:`\\varepsilon^{-1/2}` and amplifies the
   convolution's rounding), whose errors are recorded (``BFLOAT16_TOLERANCE`` bounds the random
   kernel's). A filter that fails is not timed and cannot be chosen.
2. **Training steps** (``steps``): one step of a CIFAR ResNet18 (forward, cross-entropy,
   backward, SGD with momentum) of Conv2d+BN and of ConvNorm2d+BN with each correct filter:
   in bfloat16 autocast at the fast protocol's batch (512), and in float32 at the paper's
   (128) beside the authors' algorithm+BN (``authors_layer.py``). Eagerly (the networks
   interleaved in this process, medians of the rounds) and, on a GPU, as one CUDA graph per
   step (each network in its own process: two captured networks in one process have failed),
   for Conv2d+BN, the fastest eager filter and the authors' algorithm. Each network in the
   memory layout its training uses (channels-last for bfloat16 unless its ConvNorm layers
   filter by FFTs or dense matrices, which would convert it at every layer).
3. **Layers** (``layers``): forward and backward of every distinct 3x3 layer of the ResNet18 at
   the bfloat16 batch, Conv2d against ConvNorm2d with each correct filter, interleaved.
4. **The choice** (``chosen_filter``): the correct filter with the fastest bfloat16 step (graphed
   where measured, else eager), which the window's trainings then use (``--filter`` of
   ``calibrate_gpu.py`` and ``scripts/gpu_runs.py``).

Every section is skipped, with its reason in ``skipped``, once ``--budget`` seconds are spent
(correctness first: the choice needs it; then the bfloat16 steps, the float32 comparison, the
graphs, the layers). ``--scale smoke`` runs the same at a width and batches a CPU takes in
seconds (the window's rehearsal, ``benchmarks/test_bench_gpu.py``); off CUDA no graph is
timed, and the fused filter is checked and timed only where Triton's interpreter is on.

    python benchmarks/bench_gpu.py --out benchmarks/results/bench_gpu_<gpu>_<time>.json
"""
from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / folder) for folder in (".", "lab", "book_code")]  # this checkout's packages
sys.path.insert(0, str(HERE))

from authors_layer import with_authors_layers  # noqa: E402
from bench_layer import RESNET18_3X3, batch  # noqa: E402

from convnorm import ConvNorm2d  # noqa: E402
from convnorm.functional import FILTERS, ComputationPolicy, conv_norm2d, use_policy  # noqa: E402
from convnorm.reference import conv_norm_reference  # noqa: E402
from convnorm_book.layer_benchmark import interleaved_medians  # noqa: E402
from convnorm_lab.models import build_model  # noqa: E402
from convnorm_lab.training import provenance, save_results  # noqa: E402
from convnorm_lab.training.graphed import GraphedStep  # noqa: E402
from convnorm_lab.training.results import cpu_info  # noqa: E402

SCALES = {"full": {"width": 64, "bf16_batch": 512, "fp32_batch": 128, "layer_batch": 512, "rounds": 10},
          "smoke": {"width": 4, "bf16_batch": 4, "fp32_batch": 2, "layer_batch": 2, "rounds": 2}}
"""The network's width, the batches and the timed rounds of each scale."""
FLOAT32_TOLERANCE = 1e-4
"""Largest error of a float32 filter against the float64 reference, relative to the largest
entry: float32's rounding through a convolution and two transforms is about 1e-6, and a filter
that is wrong (a missing scale, a swapped plane) is off by order 1."""
BFLOAT16_TOLERANCE = 5e-2
"""Largest error of the output under bfloat16 autocast for a random kernel, relative to the
largest entry: the convolution in bfloat16 (8-bit mantissa, 2**-9 = 2e-3 per rounding, grown by
the sum over 9 C_in products and the normalizer's gain) errs by about 1e-2 there."""
CHECKS = [(8, 8, 32, 1), (8, 8, 32, 2), (8, 8, 16, 1), (8, 8, 8, 2), (8, 8, 4, 1)]
"""Layers checked for correctness: (C_in, C_out, input size, stride), the ResNet18's sizes
(normalization sizes 34, 18, 10, 6), few channels so the float64 reference is quick."""


def filter_policy(name: str, device: torch.device) -> ComputationPolicy:
    """The spatial computation with ``name`` as its filter on ``device`` (the frequency domain,
    a CPU's rule, off, so that every device times the same three)."""
    return ComputationPolicy(frequency_domain_devices=()).filtering(name, device.type)


def runnable_filters(device: torch.device) -> tuple[list[str], list[dict]]:
    """The filters this device can run, and for the others why not (the fused kernels need
    Triton, and off CUDA its interpreter, ``TRITON_INTERPRET=1``)."""
    from convnorm._fused_filter import available

    if available(device):
        return list(FILTERS), []
    return [f for f in FILTERS if f != "fused"], [{"what": "the fused filter",
                                                   "why": f"Triton does not run the kernels on {device.type} here"}]


def _relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    """The largest error of ``got`` relative to the largest entry of ``want``."""
    got, want = got.detach().double(), want.detach()
    return float((got - want).abs().max() / want.abs().max().clamp_min(1e-300))


def check_filter(name: str, device: torch.device) -> dict:
    """The errors of filter ``name`` on ``device`` against the float64 reference (see the module
    docstring), and ``ok``: all float32 errors within ``FLOAT32_TOLERANCE`` and the random
    kernel's bfloat16 error within ``BFLOAT16_TOLERANCE``."""
    errors = {"float32": 0.0, "bfloat16": 0.0, "bfloat16_low_pass": 0.0}
    tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        with use_policy(filter_policy(name, device)):
            for c_in, c_out, size, stride in CHECKS:
                generator = torch.Generator().manual_seed(size + stride)
                x64 = torch.randn(2, c_in, size, size, generator=generator, dtype=torch.float64).to(device)
                layer = ConvNorm2d(c_in, c_out, 3, stride, 1, dtype=torch.float64).to(device)
                with torch.no_grad():
                    layer.affine_weight.add_(0.1 * torch.randn_like(layer.affine_weight))
                x64.requires_grad_()
                want = conv_norm_reference(x64, layer.weight, layer.bias, stride, 1, affine_weight=layer.affine_weight)
                probe = torch.randn_like(want)
                wanted = torch.autograd.grad(want, (x64, layer.weight, layer.affine_weight), probe)
                layer32 = layer.float()
                x32 = x64.detach().float().requires_grad_()
                got = layer32(x32)
                grads = torch.autograd.grad(got, (x32, layer32.weight, layer32.affine_weight), probe.float())
                errors["float32"] = max(errors["float32"], _relative_error(got, want),
                                        *(_relative_error(g, w) for g, w in zip(grads, wanted)))
                with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16):
                    errors["bfloat16"] = max(errors["bfloat16"], _relative_error(layer32(x32), want.detach()))
                    box = torch.ones_like(layer32.weight) + 0.01 * torch.randn_like(layer32.weight)
                    low_pass = conv_norm_reference(x64.detach(), box.double(), None, stride, 1)
                    errors["bfloat16_low_pass"] = max(errors["bfloat16_low_pass"],
                                                      _relative_error(conv_norm2d(x32, box, None, stride, 1), low_pass))
    except Exception as error:  # noqa: BLE001 (a filter that fails here is a finding: it is not chosen)
        return {"ok": False, "error": f"{type(error).__name__}: {error}", **errors}
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
    ok = errors["float32"] <= FLOAT32_TOLERANCE and errors["bfloat16"] <= BFLOAT16_TOLERANCE
    return {"ok": ok, **errors}


def channels_last(network: str, filter: str | None, precision: str, device: torch.device) -> bool:
    """The layout the network's training uses (the rule of ``Preset.channels_last``): channels-last
    for mixed precision on a GPU, unless its ConvNorm layers filter by FFTs or dense matrices
    (which would convert it at every layer), or it is the authors' algorithm (FFTs too)."""
    if device.type != "cuda" or precision != "bf16" or network == "authors+bn":
        return False
    return network != "convnorm2d+bn" or filter_policy(filter, device).keeps_channels_last(device.type)


def network(name: str, width: int, device: torch.device, layout: bool) -> torch.nn.Module:
    """``conv2d+bn``, ``convnorm2d+bn`` or ``authors+bn``: the CIFAR ResNet18 of ``width``."""
    torch.manual_seed(0)
    model = build_model("resnet18", "bn" if name == "conv2d+bn" else "convnorm+bn", width=width)
    if name == "authors+bn":
        model = with_authors_layers(model)
    model = model.to(device)
    return model.to(memory_format=torch.channels_last) if layout else model


def train_step(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, precision: str):
    """One SGD step (momentum 0.9) of ``model`` on the batch, under bfloat16 autocast if
    ``precision`` is ``"bf16"``; returns the loss (read back: the step has finished)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    model.train()

    def step() -> float:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return float(loss.detach())

    return step


def time_steps(precision: str, names: dict[str, str | None], scale: dict, device: torch.device,
               left) -> dict | None:
    """Median seconds per eager step of each network (``names``: label -> filter, None for the
    networks without ConvNorm layers), interleaved in this process, in as many rounds as the
    budget (``left()`` seconds) leaves; None if not one."""
    size = scale["bf16_batch" if precision == "bf16" else "fp32_batch"]
    steps = {}
    for label, filter in names.items():
        kind = label.split("[")[0]
        x, y = batch(size, seed=1, device=device.type)
        layout = channels_last(kind, filter, precision, device)
        x = x.contiguous(memory_format=torch.channels_last) if layout else x
        steps[label] = _in_policy(train_step(network(kind, scale["width"], device, layout), x, y, precision),
                                  filter_policy(filter, device) if filter else None)
    return budgeted_medians(steps, scale["rounds"], left)


def _in_policy(step, policy: ComputationPolicy | None):
    """``step`` run under ``policy`` (every call: a prepared layer keeps the policy it was
    prepared under only while that policy is in force)."""
    if policy is None:
        return step

    def run():
        with use_policy(policy):
            return step()
    return run


def graph_child(kind: str, filter: str | None, precision: str, scale_name: str) -> dict:
    """Seconds per replay of one network's training step captured as one CUDA graph."""
    device, scale = torch.device("cuda"), SCALES[scale_name]
    size = scale["bf16_batch" if precision == "bf16" else "fp32_batch"]
    layout = channels_last(kind, filter, precision, device)
    with use_policy(filter_policy(filter, device)) if filter else contextlib.nullcontext():
        model = network(kind, scale["width"], device, layout).train()
        x, y = batch(size, seed=1, device="cuda")
        x = x.contiguous(memory_format=torch.channels_last) if layout else x
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def loss_fn(a, b):
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16"):
                logits = model(a)
                return F.cross_entropy(logits, b), logits

        step = GraphedStep(model, optimizer, loss_fn, x, y)
        for _ in range(3):
            step(x, y, 0.01)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(20):
            step(x, y, 0.01)
        end.record()
        torch.cuda.synchronize()
    return {"seconds_per_step": start.elapsed_time(end) / 1000 / 20}


def graphed(label: str, precision: str, scale_name: str, timeout: float) -> float | str:
    """Seconds per replayed step of network ``label`` in a child process, or its error."""
    kind, _, rest = label.partition("[")
    command = [sys.executable, __file__, "--graph-child", kind, rest.rstrip("]") or "-", precision, scale_name]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=max(timeout, 1))
    except subprocess.TimeoutExpired:
        return "the budget was spent"
    if done.returncode:
        lines = done.stderr.strip().splitlines()
        return lines[-1] if lines else f"exit {done.returncode}"
    return json.loads(done.stdout.strip().splitlines()[-1])["seconds_per_step"]


def time_layers(filters: list[str], scale: dict, device: torch.device, left) -> dict:
    """Median seconds of forward and backward of each distinct 3x3 layer of the ResNet18 at the
    bfloat16 batch under autocast: Conv2d, and ConvNorm2d with each filter (the layers the
    budget, ``left()`` seconds, leaves time for)."""
    results = {}
    width = scale["width"] / 64
    for c_in, c_out, size, stride in RESNET18_3X3:
        c_in, c_out = max(1, round(c_in * width)), max(1, round(c_out * width))
        generator = torch.Generator().manual_seed(size)
        x = torch.randn(scale["layer_batch"], c_in, size, size, generator=generator).to(device).requires_grad_()
        w = (0.05 * torch.randn(c_out, c_in, 3, 3, generator=generator)).to(device).requires_grad_()
        rho = torch.zeros(c_out, 3, 3, device=device)
        rho[:, 1, 1] = 1
        rho.requires_grad_()

        steps = {"conv2d": _layer_step(F.conv2d, x, w, None, stride, 1)}
        for name in filters:
            steps[f"convnorm2d[{name}]"] = _in_policy(
                _layer_step(conv_norm2d, x, w, None, stride, 1, affine_weight=rho), filter_policy(name, device))
        timed = budgeted_medians(steps, scale["rounds"], left)
        if timed is None:
            return results
        results[f"{c_in}->{c_out}, {size}x{size}, stride {stride}"] = timed
    return results


def _layer_step(function, x: torch.Tensor, *args, **kwargs):
    """Forward (under bfloat16 autocast) and backward of ``function(x, *args, **kwargs)``."""
    def run() -> float:
        with torch.autocast(x.device.type, dtype=torch.bfloat16):
            out = function(x, *args, **kwargs)
        out.float().square().mean().backward()
        return float(out.detach().float().sum())
    return run


def budgeted_medians(steps: dict, rounds: int, left) -> dict[str, float] | None:
    """Median seconds per call of each closure over at most ``rounds`` interleaved rounds, as many
    as the budget (``left()`` seconds) leaves after a warm-up round, which also times a round;
    None if not even one timed round fits."""
    start = time.perf_counter()
    for step in steps.values():
        step()
    per_round = time.perf_counter() - start
    affordable = min(rounds, int(left() / max(per_round, 1e-9)))
    if affordable < 1:
        return None
    timed = interleaved_medians(steps, repeats=affordable, warmup=0)
    return {name: timed[name]["median_s"] for name in steps}


def choose(checks: dict, steps: dict) -> str | None:
    """The correct filter with the fastest bfloat16 step: graphed where measured, else eager."""
    correct = [name for name, check in checks.items() if check.get("ok")]
    for mode in ("graphed", "eager"):
        timed = {name: steps.get(mode, {}).get("bf16", {}).get(f"convnorm2d+bn[{name}]") for name in correct}
        timed = {name: t for name, t in timed.items() if isinstance(t, float)}
        if timed:
            return min(timed, key=timed.get)
    return correct[0] if correct else None


def setup(device: torch.device, scale_name: str) -> dict:
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else None
    return {"device": gpu or f"cpu ({cpu_info()['model']})", "cpu": cpu_info(), "torch": torch.__version__,
            "triton": triton_version, "scale": scale_name, **SCALES[scale_name], "model": "CIFAR ResNet18",
            "step": "forward + cross-entropy + backward + SGD(momentum) step",
            "eager": "the networks interleaved in one process, median of the rounds",
            "cuda_graph": "each network in its own process, 20 replays"}


def run(args: argparse.Namespace) -> dict:
    device, scale = torch.device(args.device), SCALES[args.scale]
    begin = time.perf_counter()
    left = lambda: args.budget - (time.perf_counter() - begin)  # noqa: E731
    filters, skipped = runnable_filters(device)
    results = {"setup": setup(device, args.scale), "checks": {}, "steps": {"eager": {}, "graphed": {}},
               "layers": {}, "skipped": skipped}
    for name in filters:
        results["checks"][name] = check = check_filter(name, device)
        print(f"filter {name}: " + ("correct" if check["ok"] else "FAILED") + f" (float32 {check['float32']:.1e}, "
              f"bfloat16 {check['bfloat16']:.1e}, low-pass {check['bfloat16_low_pass']:.1e})"
              + (f" {check['error']}" if "error" in check else ""))
    correct = [name for name in filters if results["checks"][name]["ok"]]
    plan = [("bf16", {"conv2d+bn": None, **{f"convnorm2d+bn[{f}]": f for f in correct}}),
            ("fp32", {"conv2d+bn": None, **{f"convnorm2d+bn[{f}]": f for f in correct}, "authors+bn": None})]
    for precision, names in plan:
        if left() <= 0:
            skipped.append({"what": f"{precision} eager steps", "why": "the budget was spent"})
            continue
        timed = time_steps(precision, names, scale, device, left)
        if timed is None:
            skipped.append({"what": f"{precision} eager steps", "why": "the budget was spent"})
            continue
        results["steps"]["eager"][precision] = timed
        print(f"eager {precision}: " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in timed.items()))
    best = choose(results["checks"], results["steps"])
    if device.type == "cuda" and best is not None:
        for precision in ("bf16", "fp32"):
            labels = ["conv2d+bn", f"convnorm2d+bn[{best}]"] + (["authors+bn"] if precision == "fp32" else [])
            for label in labels:
                if left() <= 0:
                    skipped.append({"what": f"{precision} step of {label} as one CUDA graph",
                                    "why": "the budget was spent"})
                    continue
                answer = graphed(label, precision, args.scale, left())
                results["steps"]["graphed"].setdefault(precision, {})[label] = answer
                print(f"graphed {precision} {label}: " + (f"{answer * 1e3:.1f} ms" if isinstance(answer, float)
                                                           else answer))
    elif device.type != "cuda":
        skipped.append({"what": "CUDA graphs", "why": "no CUDA device"})
    if left() > 0 and correct:
        results["layers"] = time_layers(correct, scale, device, left)
    else:
        skipped.append({"what": "the layers", "why": "the budget was spent" if correct else "no filter is correct"})
    results["chosen_filter"] = choose(results["checks"], results["steps"])
    print(f"filter: {results['chosen_filter']}")
    results["wall_s"] = time.perf_counter() - begin
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--scale", choices=list(SCALES), default="full")
    parser.add_argument("--budget", type=float, default=60.0, help="seconds; what is not reached is skipped")
    parser.add_argument("--out", default=None)
    parser.add_argument("--graph-child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.graph_child:
        kind, filter, precision, scale_name = args.graph_child
        print(json.dumps(graph_child(kind, None if filter == "-" else filter, precision, scale_name)))
        return
    if args.budget <= 0:
        parser.error(f"--budget must be a positive number of seconds, got {args.budget}")
    results = run(args)
    if args.out:
        block = provenance("bench_gpu", args.scale, 0, None, results["wall_s"], torch.device(args.device))
        print("wrote", save_results(args.out, block, results))


if __name__ == "__main__":
    main()
