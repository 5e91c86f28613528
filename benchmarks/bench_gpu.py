"""The layer's benchmark, the first step of a GPU window: which of ConvNorm's computations is
correct and fastest on this GPU, and what a ConvNorm2d+BN ResNet18 costs against Conv2d+BN and
the authors' algorithm, in one record, written after every section (a window that is killed
keeps what was measured) with each item's exception caught and recorded.

The contenders (``CONTENDERS``) are a registry: each names how ConvNorm2d computes (a
:class:`~convnorm.functional.ComputationPolicy` on the device), whether it can run here, and the
filter a training then takes for it (``--filter`` of ``calibrate_gpu.py`` and
``scripts/gpu_runs.py``); a new computation is one more entry. In the window's order:

1. **Correctness** (``checks``, never cut by the budget; the known-good filter first): each
   contender computes ConvNorm2d layers of the ResNet18's geometries, output and the gradients
   of input, weight and affine kernel, against the float64 reference
   (:func:`convnorm.reference.conv_norm_reference`) on the same device: in float32 with
   TensorFloat-32 off (``FLOAT32_TOLERANCE``), and under bfloat16 autocast for a random kernel
   (``BFLOAT16_TOLERANCE``), for a low-pass one (a box filter, ``LOW_PASS_TOLERANCE``) and for
   the low-pass one with the convolution kept in float32 (the escape hatch,
   ``ESCAPE_HATCH_TOLERANCE``). A contender that fails is not timed and cannot be chosen.
2. **Compilation** (``compiled``, outside the timed budget): every network, layer and kernel
   setting below stepped once per correct contender, and the graph check's small networks
   (``tests/lab/test_training_cuda.py``), so that Triton compiles every specialization they
   launch (its cache on disk serves the child processes and the graph check).
3. **The headline** (``steps``, bf16): one training step of a CIFAR ResNet18 (forward,
   cross-entropy, backward, SGD with momentum) under bfloat16 autocast at the fast protocol's
   batch, Conv2d+BN against ConvNorm2d+BN with each correct contender: on a GPU as one CUDA graph
   per step (each network in its own process: two captured networks in one process have
   failed), elsewhere, or where no ConvNorm step could be graphed, eagerly (interleaved,
   medians of the rounds).
4. **Layers** (``layers``): forward and backward of the ResNet18's seven 3x3 layer shapes at the
   bfloat16 batch, channels-last as the network runs, Conv2d against ConvNorm2d with each
   correct contender, interleaved.
5. **Float32** (``steps``, fp32): the step in float32 at the paper's batch, eagerly, beside the
   authors' algorithm+BN (``authors_layer.py``); on a GPU also graphed for Conv2d+BN, the chosen
   contender and the authors' algorithm.
6. **The kernels' sweep** (``sweep``, at most ``SWEEP_S`` seconds of its own): the fused
   kernels' forward and backward at the seven layer shapes for each ``num_warps`` and programs
   per multiprocessor of ``SWEEP``; the defaults follow a stored record of it.

**The choice** (``chosen_filter``, :func:`choose`, written after every section): the correct
contender with the fastest bfloat16 step (graphed where measured, else eager); with nothing
timed, the known-good filter (``convnorm._policy.KNOWN_GOOD_FILTER``) where its check passed;
never one whose check failed, and the same whatever the order of the records' entries.

cuDNN's autotuner is on (``torch.backends.cudnn.benchmark``), as in the trainer and the
calibration. Sections 3-5 stop at ``--budget`` seconds, counted from the end of the compilation;
what was not reached is listed in ``skipped``. ``--scale smoke`` runs the same at a width and
batches a CPU takes in seconds (the window's rehearsal); off CUDA no graph is timed, and the
fused filter is checked and timed only where Triton's interpreter is on.

    python benchmarks/bench_gpu.py --out benchmarks/results/bench_gpu_<gpu>_<time>.json
    python benchmarks/bench_gpu.py --chosen RECORD [--rule-out fused]  # prints a record's choice
"""
from __future__ import annotations

import argparse
import contextlib
import json
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / folder) for folder in (".", "lab", "book_code")]  # this checkout's packages
sys.path.insert(0, str(HERE))

from authors_layer import with_authors_layers  # noqa: E402
from bench_layer import RESNET18_3X3, batch  # noqa: E402
from timing import interleaved_medians  # noqa: E402

from convnorm import ConvNorm2d  # noqa: E402
from convnorm._policy import KNOWN_GOOD_FILTER  # noqa: E402
from convnorm.functional import ComputationPolicy, conv_norm2d, use_policy  # noqa: E402
from convnorm.reference import conv_norm_reference  # noqa: E402
from convnorm_lab.models import build_model  # noqa: E402
from convnorm_lab.training import load_results, provenance, save_results  # noqa: E402
from convnorm_lab.training.graphed import GraphedStep  # noqa: E402
from convnorm_lab.training.results import cpu_info  # noqa: E402

SCALES = {"full": {"width": 64, "bf16_batch": 512, "fp32_batch": 128, "layer_batch": 512, "rounds": 10},
          "smoke": {"width": 4, "bf16_batch": 4, "fp32_batch": 2, "layer_batch": 2, "rounds": 2}}
"""The network's width, the batches and the timed rounds of each scale."""
FLOAT32_TOLERANCE = 1e-4
"""Largest error of a float32 contender against the float64 reference, relative to the largest
entry: float32's rounding through a convolution and two transforms is about 1e-6, and a filter
that is wrong (a missing scale, a swapped plane) is off by order 1."""
BFLOAT16_TOLERANCE = 5e-2
"""Largest error of the output under bfloat16 autocast for a random kernel, relative to the
largest entry: the convolution in bfloat16 (8-bit mantissa, 2**-9 = 2e-3 per rounding, grown by
the sum over 9 C_in products and the normalizer's gain) errs by about 1e-2 there."""
LOW_PASS_TOLERANCE = 0.5
"""Largest error of the output under bfloat16 autocast for the low-pass kernel (a 3x3 box plus
1 % noise), relative to the largest entry. Where the convolution runs in bfloat16 (the fused
filter), its rounding, 2**-9 of each entry, is amplified by the normalizer's gain at the
frequencies where the box's spectrum nearly vanishes, about 1/(1 %) = 100 times its gain at
low ones: about 2**-9 * 100 = 0.2 (0.12-0.27 seen on an H200, 0.15 interpreted). Half the
output's scale bounds that with room, and still fails a contender that is wrong, which errs by
order 1 and more. The float32 computations err by about 3e-3 here."""
ESCAPE_HATCH_TOLERANCE = 5e-2
"""Largest error of the low-pass check with the convolution kept in float32
(``float32_convolution``): the escape hatch must bring a contender back to the random kernel's
accuracy (only the output's own bfloat16 rounding is left)."""
CHECKS = [(8, 8, 32, 1), (8, 8, 32, 2), (8, 8, 16, 1), (8, 8, 8, 2), (8, 8, 4, 1)]
"""Layers checked for correctness: (C_in, C_out, input size, stride), the ResNet18's sizes
(normalization sizes 34, 18, 10, 6), few channels so the float64 reference is quick."""
SWEEP = {"num_warps": (1, 2, 4, 8), "programs_per_sm": (2, 4, 8, 16)}
"""The fused kernels' settings the sweep times at each layer shape: warps per program (the
analyses expect 1/2/4 for the 16/32/64 blocks) and programs per multiprocessor (8-16 expected)."""
SWEEP_S = 20.0
"""Seconds the sweep may take, its compilation excepted (done before, with the rest)."""
SWEEP_ROUNDS = 3
"""Timed rounds of each setting at each shape (medians), as many as ``SWEEP_S`` leaves."""


class Contender(NamedTuple):
    """One way ConvNorm2d computes on the device, timed against the others."""

    name: str
    """Its label in the record (``convnorm2d+bn[<name>]``)."""
    policy: Callable[[torch.device], ComputationPolicy]
    """The computation policy it computes under on a device."""
    why_not: Callable[[torch.device], str | None]
    """Why it cannot run on a device, or None where it can."""
    filter: str | None
    """The spatial filter a window's trainings take when it is chosen (one of ``FILTERS``);
    None for a contender that is timed but not trained with."""


def filter_policy(name: str, device: torch.device) -> ComputationPolicy:
    """The spatial computation with ``name`` as its filter on ``device`` (the frequency domain,
    a CPU's rule, off, so that every device times the same filters)."""
    return ComputationPolicy(frequency_domain_devices=()).filtering(name, device.type)


def _fused_why_not(device: torch.device) -> str | None:
    from convnorm._fused_filter import available, fits

    if not available(device):
        return f"Triton does not run the kernels on {device.type} here"
    if not fits(device):
        return "this GPU's capability or shared memory does not fit the compiled kernels"
    return None


def frequency_gemms_policy(device: torch.device) -> ComputationPolicy:
    """Every layer in the frequency domain by matrix products (``convnorm._frequency_gemm``):
    real DFT matrices and one batched product over the frequencies, in the autocast dtype, the
    form for a GPU's tensor cores. Timed beside the filters, not yet a filter a training takes."""
    return replace(ComputationPolicy().forcing("frequency_domain"), frequency_domain_gemms=True)


CONTENDERS = {
    "fft": Contender("fft", lambda device: filter_policy("fft", device), lambda device: None, "fft"),
    "dense": Contender("dense", lambda device: filter_policy("dense", device), lambda device: None, "dense"),
    "fused": Contender("fused", lambda device: filter_policy("fused", device), _fused_why_not, "fused"),
    "frequency-gemms": Contender("frequency-gemms", frequency_gemms_policy, lambda device: None, None),
}
"""The contenders, by name; a new computation is one more entry."""


def _rank(name: str) -> tuple[int, str]:
    """The order in which contenders are checked and ties broken: the known-good filter first,
    then by name (never by the order of a record's entries)."""
    return (name != KNOWN_GOOD_FILTER, name)


def runnable(device: torch.device) -> tuple[list[str], list[dict]]:
    """The contenders this device can run, in :func:`_rank` order, and for the others why not."""
    names, skipped = [], []
    for name in sorted(CONTENDERS, key=_rank):
        why = CONTENDERS[name].why_not(device)
        if why is None:
            names.append(name)
        else:
            skipped.append({"what": f"the {name} contender", "why": why})
    return names, skipped


def _relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    """The largest error of ``got`` relative to the largest entry of ``want``."""
    got, want = got.detach().double(), want.detach()
    return float((got - want).abs().max() / want.abs().max().clamp_min(1e-300))


def check(name: str, device: torch.device) -> dict:
    """The errors of contender ``name`` on ``device`` against the float64 reference (see the
    module docstring), and ``ok``: every error within its tolerance."""
    errors = {"float32": 0.0, "bfloat16": 0.0, "bfloat16_low_pass": 0.0, "bfloat16_low_pass_float32_convolution": 0.0}
    policy = CONTENDERS[name].policy(device)
    escape = replace(policy, float32_convolution=True)
    tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        with use_policy(policy):
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
                box = torch.ones_like(layer32.weight) + 0.01 * torch.randn_like(layer32.weight)
                low_pass = conv_norm_reference(x64.detach(), box.double(), None, stride, 1)
                with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16):
                    errors["bfloat16"] = max(errors["bfloat16"], _relative_error(layer32(x32), want.detach()))
                    errors["bfloat16_low_pass"] = max(errors["bfloat16_low_pass"],
                                                      _relative_error(conv_norm2d(x32, box, None, stride, 1), low_pass))
                    with use_policy(escape):
                        errors["bfloat16_low_pass_float32_convolution"] = max(
                            errors["bfloat16_low_pass_float32_convolution"],
                            _relative_error(conv_norm2d(x32, box, None, stride, 1), low_pass))
    except Exception as error:  # noqa: BLE001 (a contender that fails here is a finding: it is not chosen)
        return {"ok": False, "error": f"{type(error).__name__}: {error}", **errors}
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
    ok = (errors["float32"] <= FLOAT32_TOLERANCE and errors["bfloat16"] <= BFLOAT16_TOLERANCE
          and errors["bfloat16_low_pass"] <= LOW_PASS_TOLERANCE
          and errors["bfloat16_low_pass_float32_convolution"] <= ESCAPE_HATCH_TOLERANCE)
    return {"ok": ok, **errors}


def channels_last(network: str, contender: str | None, precision: str, device: torch.device) -> bool:
    """The layout the network's training uses (the rule of ``Preset.channels_last``): channels-last
    for mixed precision on a GPU, unless its ConvNorm layers filter by FFTs or dense matrices
    (which would convert it at every layer), or it is the authors' algorithm (FFTs too)."""
    if device.type != "cuda" or precision != "bf16" or network == "authors+bn":
        return False
    return network != "convnorm2d+bn" or CONTENDERS[contender].policy(device).keeps_channels_last(device.type)


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


def _label(kind: str, contender: str | None) -> str:
    return f"{kind}[{contender}]" if contender else kind


def _parse(label: str) -> tuple[str, str | None]:
    kind, _, rest = label.partition("[")
    return kind, rest.rstrip("]") or None


def network_steps(precision: str, labels: list[str], scale: dict, device: torch.device) -> dict:
    """One eager training step of each network ``label`` (``kind`` or ``kind[contender]``), as a
    closure run under its contender's policy, in the layout its training uses."""
    size = scale["bf16_batch" if precision == "bf16" else "fp32_batch"]
    steps = {}
    for label in labels:
        kind, contender = _parse(label)
        x, y = batch(size, seed=1, device=device.type)
        layout = channels_last(kind, contender, precision, device)
        x = x.contiguous(memory_format=torch.channels_last) if layout else x
        steps[label] = _in_policy(train_step(network(kind, scale["width"], device, layout), x, y, precision),
                                  CONTENDERS[contender].policy(device) if contender else None)
    return steps


def _in_policy(step, policy: ComputationPolicy | None):
    """``step`` run under ``policy`` (every call: a prepared layer keeps the policy it was
    prepared under only while that policy is in force)."""
    if policy is None:
        return step

    def run():
        with use_policy(policy):
            return step()
    return run


def graph_child(kind: str, contender: str | None, precision: str, scale_name: str) -> dict:
    """Seconds per replay of one network's training step captured as one CUDA graph."""
    torch.backends.cudnn.benchmark = True  # as the trainer: the same algorithms as the trainings
    device, scale = torch.device("cuda"), SCALES[scale_name]
    size = scale["bf16_batch" if precision == "bf16" else "fp32_batch"]
    layout = channels_last(kind, contender, precision, device)
    with use_policy(CONTENDERS[contender].policy(device)) if contender else contextlib.nullcontext():
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
    kind, contender = _parse(label)
    command = [sys.executable, __file__, "--graph-child", kind, contender or "-", precision, scale_name]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=max(timeout, 1))
    except subprocess.TimeoutExpired:
        return "the budget was spent"
    if done.returncode:
        lines = done.stderr.strip().splitlines()
        return lines[-1] if lines else f"exit {done.returncode}"
    return json.loads(done.stdout.strip().splitlines()[-1])["seconds_per_step"]


def layer_shapes(scale: dict) -> list[tuple[int, int, int, int]]:
    """The ResNet18's seven 3x3 layer shapes (C_in, C_out, size, stride) at the scale's width."""
    width = scale["width"] / 64
    return [(max(1, round(c_in * width)), max(1, round(c_out * width)), size, stride)
            for c_in, c_out, size, stride in RESNET18_3X3]


def _shape_name(shape: tuple[int, int, int, int]) -> str:
    c_in, c_out, size, stride = shape
    return f"{c_in}->{c_out}, {size}x{size}, stride {stride}"


def layer_steps(shape: tuple[int, int, int, int], contenders: list[str], scale: dict, device: torch.device) -> dict:
    """Forward (bfloat16 autocast) and backward of one layer shape at the bfloat16 batch, on a
    channels-last input as the network runs it: Conv2d and ConvNorm2d with each contender."""
    c_in, c_out, size, stride = shape
    generator = torch.Generator().manual_seed(size)
    x = torch.randn(scale["layer_batch"], c_in, size, size, generator=generator).to(device)
    x = x.contiguous(memory_format=torch.channels_last).requires_grad_()
    w = (0.05 * torch.randn(c_out, c_in, 3, 3, generator=generator)).to(device).requires_grad_()
    rho = torch.zeros(c_out, 3, 3, device=device)
    rho[:, 1, 1] = 1
    rho.requires_grad_()
    steps = {"conv2d": _layer_step(F.conv2d, x, w, None, stride, 1)}
    for name in contenders:
        steps[f"convnorm2d[{name}]"] = _in_policy(
            _layer_step(conv_norm2d, x, w, None, stride, 1, affine_weight=rho), CONTENDERS[name].policy(device))
    return steps


def _layer_step(function, x: torch.Tensor, *args, **kwargs):
    """Forward (under bfloat16 autocast) and backward of ``function(x, *args, **kwargs)``."""
    def run() -> float:
        with torch.autocast(x.device.type, dtype=torch.bfloat16):
            out = function(x, *args, **kwargs)
        out.float().square().mean().backward()
        return float(out.detach().float().sum())
    return run


def sweep_steps(shape: tuple[int, int, int, int], scale: dict, device: torch.device) -> dict:
    """The fused kernels' forward and backward (bfloat16, channels-last, TensorFloat-32 products)
    on a full convolution's output of one layer shape, for each setting of ``SWEEP``."""
    from convnorm._fused_filter import filter_backward, filter_forward, filter_matrices
    from convnorm._transforms import dense_dft
    from convnorm.functional import layer_geometry

    _, c_out, size, stride = shape
    n = scale["layer_batch"]
    probe_x, probe_w = torch.empty(1, 1, size, size), torch.empty(1, 1, 3, 3)
    geometry = layer_geometry(probe_x, probe_w, stride, 1, 1, 1, "zeros")
    matrices = filter_matrices(dense_dft(geometry.length, geometry.stride, geometry.out_size, torch.float32, device))
    (l0, l1), k = geometry.length, geometry.length[1] // 2 + 1
    generator = torch.Generator().manual_seed(size)
    y = torch.randn(n, c_out, l0, l1, generator=generator).to(device, torch.bfloat16)
    y = y.contiguous(memory_format=torch.channels_last)
    real, imag = (torch.randn(c_out, l0, k, generator=generator).to(device) for _ in range(2))
    g = torch.randn(n, c_out, *matrices.out_size, generator=generator).to(device, torch.bfloat16)
    g = g.contiguous(memory_format=torch.channels_last)
    steps = {}
    for warps in SWEEP["num_warps"]:
        for per_sm in SWEEP["programs_per_sm"]:
            def run(warps=warps, per_sm=per_sm) -> None:
                filter_forward(y, real, imag, matrices, None, "tf32", num_warps=warps, programs_per_sm=per_sm)
                filter_backward(g, y, real, imag, matrices, True, True, "tf32", num_warps=warps,
                                programs_per_sm=per_sm)
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
            steps[f"warps {warps}, {per_sm} per SM"] = run
    return steps


def graph_check_steps(contender: str, device: torch.device) -> list:
    """Closures stepping the graph check's networks (``tests/lab/test_training_cuda.py``: the
    small network of width 8, 16x16 images, full batches of 32 and a last one of 4, in float32
    and bfloat16, contiguous and channels-last) once under ``contender``, so that its kernels
    are compiled before the check's own timeout."""
    policy = CONTENDERS[contender].policy(device)
    steps = []
    for norm in ("convnorm+bn", "convnorm"):
        for precision in ("fp32", "bf16"):
            for layout in (False, True):
                for size in (32, 4):
                    torch.manual_seed(0)
                    model = build_model("small", norm, 10, width=8).to(device)
                    x = torch.rand(size, 3, 16, 16, device=device)
                    if layout:
                        model, x = model.to(memory_format=torch.channels_last), x.contiguous(
                            memory_format=torch.channels_last)
                    y = torch.randint(0, 10, (size,), device=device)
                    steps.append(_in_policy(train_step(model, x, y, precision), policy))
    return steps


def budgeted_medians(steps: dict, rounds: int, left) -> dict[str, float] | None:
    """Median seconds per call of each closure over at most ``rounds`` interleaved rounds, one
    round at a time while the budget (``left()`` seconds) lasts, after one untimed warm-up
    round (everything was compiled before the budget began); None if not one round was timed."""
    if left() <= 0:
        return None
    for step in steps.values():
        step()
    samples: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        if left() <= 0:
            break
        for name, timed in interleaved_medians(steps, repeats=1, warmup=0).items():
            samples[name].extend(timed["samples_s"])
    if not all(samples.values()):
        return None
    return {name: statistics.median(s) for name, s in samples.items()}


def choose(checks: dict, steps: dict, ruled_out: tuple[str, ...] = ()) -> str | None:
    """The filter of the correct contender with the fastest bfloat16 step, graphed where
    measured, else eager (ties broken by :func:`_rank`); with nothing timed, the first correct
    one by :func:`_rank`: the known-good filter where its check passed. Never a contender whose
    check failed, or one of ``ruled_out``, or one that trains with no filter; the same whatever
    the order of ``checks`` and ``steps``."""
    correct = sorted((name for name, check in checks.items()
                      if isinstance(check, dict) and check.get("ok") is True and name not in ruled_out
                      and name in CONTENDERS and CONTENDERS[name].filter is not None), key=_rank)
    for mode in ("graphed", "eager"):
        bf16 = steps.get(mode, {}).get("bf16", {})
        timed = {name: bf16.get(f"convnorm2d+bn[{name}]") for name in correct}
        timed = {name: t for name, t in timed.items() if isinstance(t, float)}
        if timed:
            return CONTENDERS[min(timed, key=lambda name: (timed[name], _rank(name)))].filter
    return CONTENDERS[correct[0]].filter if correct else None


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
            "cuda_graph": "each network in its own process, 20 replays",
            "cudnn_benchmark": torch.backends.cudnn.benchmark,
            "tolerances": {"float32": FLOAT32_TOLERANCE, "bfloat16": BFLOAT16_TOLERANCE,
                           "bfloat16_low_pass": LOW_PASS_TOLERANCE,
                           "bfloat16_low_pass_float32_convolution": ESCAPE_HATCH_TOLERANCE},
            "known_good_filter": KNOWN_GOOD_FILTER, "contenders": sorted(CONTENDERS, key=_rank)}


class Record:
    """The benchmark's record, written (atomically, by ``save_results``) at every :meth:`save`:
    after each section, and on the way out however the run ends."""

    def __init__(self, out: str | None, device: torch.device, scale_name: str):
        self.out, self.device, self.scale_name, self.begin = out, device, scale_name, time.perf_counter()
        self.results = {"setup": setup(device, scale_name), "checks": {}, "compiled": {},
                        "steps": {"eager": {}, "graphed": {}}, "layers": {}, "sweep": {}, "skipped": [],
                        "errors": [], "sections": [], "chosen_filter": None}

    def save(self, section: str | None = None) -> None:
        results = self.results
        if section is not None:
            results["sections"].append(section)
        results["chosen_filter"] = choose(results["checks"], results["steps"])
        results["wall_s"] = time.perf_counter() - self.begin
        if self.out:
            block = provenance("bench_gpu", self.scale_name, 0, None, results["wall_s"], self.device)
            save_results(self.out, block, results)

    def item(self, what: str, measure: Callable[[], object]) -> object:
        """``measure()``, or None with its exception recorded under ``errors`` (one item failing
        leaves the others to be measured)."""
        try:
            return measure()
        except Exception as error:  # noqa: BLE001 (recorded; the rest of the window goes on)
            self.results["errors"].append({"what": what, "error": f"{type(error).__name__}: {error}"})
            print(f"error in {what}: {type(error).__name__}: {error}")
            return None

    def skip(self, what: str, why: str) -> None:
        self.results["skipped"].append({"what": what, "why": why})


def run(args: argparse.Namespace) -> dict:
    """The sections in the window's order (see the module docstring), the record written after
    each; a SIGTERM (the window's ``timeout``) ends the run with the record written."""
    torch.backends.cudnn.benchmark = True  # as the trainer and the calibration
    device, scale = torch.device(args.device), SCALES[args.scale]
    record = Record(args.out, device, args.scale)
    results = record.results
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        contenders, skipped = runnable(device)
        results["skipped"].extend(skipped)
        record.save()  # from here on a killed benchmark leaves a record
        _checks(record, contenders, device)
        correct = [name for name in contenders if results["checks"][name].get("ok")]
        print(f"filter: {results['chosen_filter']}")
        _compile(record, correct, scale, device, args.compile_budget)
        begin = time.perf_counter()
        left = lambda: args.budget - (time.perf_counter() - begin)  # noqa: E731
        _headline(record, correct, scale, args.scale, device, left)
        _layers(record, correct, scale, device, left)
        _float32(record, correct, scale, args.scale, device, left)
        _sweep(record, correct, scale, device)
        results["stopped"] = "every section done"
    except SystemExit:
        results["stopped"] = "terminated (the window's timeout): the sections listed were done"
        raise
    finally:
        record.save()
        print(f"filter: {results['chosen_filter']}")
    return results


def _checks(record: Record, contenders: list[str], device: torch.device) -> None:
    for name in contenders:
        answer = check(name, device)
        record.results["checks"][name] = answer
        print(f"{name}: " + ("correct" if answer["ok"] else "FAILED")
              + "".join(f", {key} {answer[key]:.1e}" for key in answer if key not in ("ok", "error"))
              + (f" {answer['error']}" if "error" in answer else ""))
        record.save()
    record.save("checks")


def _compile(record: Record, correct: list[str], scale: dict, device: torch.device, budget: float) -> None:
    """Section 2: every step the later sections time, run once per correct contender, and the
    graph check's networks under each correct contender, outside the timed budget (each failure
    recorded), in the order the window needs them (the headline's steps and the graph check's
    networks first), until ``budget`` seconds are spent: a group not compiled by then is not
    timed (its times would hold its compilation). Off CUDA nothing is compiled (Triton's
    interpreter runs the kernels as Python)."""
    if device.type != "cuda":
        record.skip("the compilation", "no CUDA device: nothing to compile")
        record.save("compile")
        return
    begin = time.perf_counter()
    labels = ["conv2d+bn", *(f"convnorm2d+bn[{name}]" for name in correct)]
    groups = {"bf16 steps": lambda: network_steps("bf16", labels, scale, device),
              "the graph check's networks": lambda: {f"{name} {i}": step for name in correct
                                                     for i, step in enumerate(graph_check_steps(name, device))}}
    for shape in layer_shapes(scale):
        groups[f"layer {_shape_name(shape)}"] = lambda shape=shape: layer_steps(shape, correct, scale, device)
    groups["fp32 steps"] = lambda: network_steps("fp32", labels + ["authors+bn"], scale, device)
    if "fused" in correct:
        for shape in layer_shapes(scale):
            groups[f"sweep {_shape_name(shape)}"] = lambda shape=shape: sweep_steps(shape, scale, device)
    errors = record.results["errors"]
    for group, make in groups.items():
        if time.perf_counter() - begin > budget:
            record.skip(f"compiling {group}", "the compilation's budget was spent: not timed")
            continue
        steps, failed = record.item(f"compiling {group}", make), []
        for label, step in (steps or {}).items():
            before = len(errors)
            record.item(f"compiling {group}: {label}", step)
            if len(errors) > before:
                failed.append(label)
        # a sweep's settings are timed without those that failed (a setting a GPU cannot take);
        # every other group is timed whole or not at all
        sweep = group.startswith("sweep ")
        record.results["compiled"][group] = steps is not None and (len(failed) < len(steps) if sweep else not failed)
        if failed and sweep:
            record.results.setdefault("sweep_failed", {})[group] = failed
    record.results["compile_s"] = time.perf_counter() - begin
    print(f"compiled in {record.results['compile_s']:.1f} s")
    record.save("compile")


def _compiled(record: Record, group: str, device: torch.device) -> bool:
    """Whether ``group``'s steps may be timed: compiled (off CUDA there is nothing to compile);
    where not, the skip is recorded."""
    if device.type != "cuda" or record.results["compiled"].get(group):
        return True
    record.skip(group, "not compiled (see errors, or the compilation's budget)")
    return False


def _headline(record: Record, correct: list[str], scale: dict, scale_name: str, device: torch.device, left) -> None:
    """Section 3: the bfloat16 step, BN against ConvNorm+BN with each correct contender."""
    labels = ["conv2d+bn", *(f"convnorm2d+bn[{name}]" for name in correct)]
    if not _compiled(record, "bf16 steps", device):
        record.save("headline")
        return
    if device.type == "cuda":
        for label in labels:
            _graphed(record, "bf16", label, scale_name, left)
        graphed_times = record.results["steps"]["graphed"].get("bf16", {})
        if any(isinstance(graphed_times.get(label), float) for label in labels[1:]):
            record.save("headline")
            return
        record.skip("graphed bf16 steps of ConvNorm", "none was timed: the eager steps instead")
    else:
        record.skip("CUDA graphs", "no CUDA device")
    _eager(record, "bf16", labels, scale, device, left)
    record.save("headline")


def _graphed(record: Record, precision: str, label: str, scale_name: str, left) -> None:
    """The graphed step of network ``label`` in ``precision``, or why not, into the record."""
    if left() <= 0:
        record.skip(f"{precision} step of {label} as one CUDA graph", "the budget was spent")
        return
    answer = record.item(f"graphed {precision} {label}", lambda: graphed(label, precision, scale_name, left()))
    record.results["steps"]["graphed"].setdefault(precision, {})[label] = answer
    print(f"graphed {precision} {label}: " + (f"{answer * 1e3:.2f} ms" if isinstance(answer, float) else str(answer)))
    record.save()


def _eager(record: Record, precision: str, labels: list[str], scale: dict, device: torch.device, left) -> None:
    steps = record.item(f"{precision} networks", lambda: network_steps(precision, labels, scale, device))
    timed = record.item(f"eager {precision} steps", lambda: budgeted_medians(steps, scale["rounds"], left)) \
        if steps else None
    if timed is None:
        record.skip(f"{precision} eager steps", "the budget was spent")
        return
    record.results["steps"]["eager"][precision] = timed
    print(f"eager {precision}: " + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in timed.items()))


def _layers(record: Record, correct: list[str], scale: dict, device: torch.device, left) -> None:
    """Section 4: the seven layer shapes, channels-last."""
    for shape in layer_shapes(scale):
        name = _shape_name(shape)
        if not _compiled(record, f"layer {name}", device):
            continue
        steps = record.item(f"layer {name}", lambda shape=shape: layer_steps(shape, correct, scale, device))
        timed = (record.item(f"timing layer {name}", lambda steps=steps: budgeted_medians(steps, scale["rounds"], left))
                 if steps else None)
        if timed is None:
            record.skip(f"layer {name}", "the budget was spent" if left() <= 0 else "it failed (see errors)")
            continue
        record.results["layers"][name] = timed
        record.save()
    record.save("layers")


def _float32(record: Record, correct: list[str], scale: dict, scale_name: str, device: torch.device, left) -> None:
    """Section 5: the float32 step beside the authors' algorithm, eagerly, and graphed on a GPU."""
    if not _compiled(record, "fp32 steps", device):
        record.save("float32")
        return
    labels = ["conv2d+bn", *(f"convnorm2d+bn[{name}]" for name in correct), "authors+bn"]
    _eager(record, "fp32", labels, scale, device, left)
    chosen = record.results["chosen_filter"]
    if device.type == "cuda" and chosen is not None:
        for label in ("conv2d+bn", f"convnorm2d+bn[{chosen}]", "authors+bn"):
            _graphed(record, "fp32", label, scale_name, left)
    record.save("float32")


def _sweep(record: Record, correct: list[str], scale: dict, device: torch.device) -> None:
    """Section 6: the fused kernels' settings at the seven layer shapes, within ``SWEEP_S``."""
    if "fused" not in correct or device.type != "cuda":
        record.skip("the kernels' sweep", "the fused filter is not correct here" if "fused" not in correct
                    else "no CUDA device: the interpreter has no warps or multiprocessors to sweep")
        record.save("sweep")
        return
    begin = time.perf_counter()
    left = lambda: SWEEP_S - (time.perf_counter() - begin)  # noqa: E731
    for shape in layer_shapes(scale):
        name = _shape_name(shape)
        if not _compiled(record, f"sweep {name}", device):
            continue
        failed = record.results.get("sweep_failed", {}).get(f"sweep {name}", [])
        steps = record.item(f"sweep {name}", lambda shape=shape, failed=failed: {
            setting: step for setting, step in sweep_steps(shape, scale, device).items() if setting not in failed})
        timed = record.item(f"timing sweep {name}", lambda steps=steps: budgeted_medians(
            steps, SWEEP_ROUNDS, left)) if steps else None
        if timed is None:
            record.skip(f"sweep of {name}", "its 20 s were spent" if left() <= 0 else "it failed (see errors)")
            continue
        record.results["sweep"][name] = timed
        record.save()
    record.save("sweep")


def chosen(paths: list[str], ruled_out: tuple[str, ...]) -> str | None:
    """The choice of the newest of the records ``paths`` in which a check passed (that is not
    ``ruled_out``), or None."""
    for path in sorted(paths, key=lambda p: Path(p).stat().st_mtime, reverse=True):
        try:
            results = load_results(path)["results"]
        except (OSError, ValueError, KeyError):
            continue
        answer = choose(results.get("checks", {}), results.get("steps", {}), ruled_out)
        if answer is not None:
            return answer
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--scale", choices=list(SCALES), default="full")
    parser.add_argument("--budget", type=float, default=60.0,
                        help="seconds of timing after the checks and the compilation; what is not reached is skipped")
    parser.add_argument("--compile-budget", type=float, default=150.0,
                        help="seconds of compilation before the timing (a GPU only); what is not compiled is not timed")
    parser.add_argument("--out", default=None)
    parser.add_argument("--checks-only", action="store_true", help="check the contenders, time nothing")
    parser.add_argument("--chosen", nargs="+", metavar="RECORD", help="print the choice of these records and exit")
    parser.add_argument("--rule-out", action="append", default=[], choices=list(CONTENDERS),
                        help="with --chosen: a contender a later check failed")
    parser.add_argument("--graph-child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.graph_child:
        kind, contender, precision, scale_name = args.graph_child
        print(json.dumps(graph_child(kind, None if contender == "-" else contender, precision, scale_name)))
        return
    if args.chosen:
        print(chosen(args.chosen, tuple(args.rule_out)) or "")
        return
    if args.budget <= 0:
        parser.error(f"--budget must be a positive number of seconds, got {args.budget}")
    if args.checks_only:
        device = torch.device(args.device)
        record = Record(args.out, device, args.scale)
        contenders, skipped = runnable(device)
        record.results["skipped"].extend(skipped)
        _checks(record, contenders, device)
        print(f"filter: {record.results['chosen_filter']}")
        return
    run(args)
    if args.out:
        print("wrote", args.out)


if __name__ == "__main__":
    main()
