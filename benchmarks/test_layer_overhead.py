"""What a ConvNorm2d forward costs before any arithmetic: the Python frames it passes and the
operators it dispatches, against the authors' algorithm (``authors_layer.py``) in the same
configuration. On a GPU an eager step waits for the host between operators, so both counts
bound how fast an eager training can go; they are counted here, where they are exact, rather
than timed.

The layer checks its arguments once and keeps the layer prepared for its input's signature
(``convnorm._engine``): a forward call passes at most ``MAX_FRAMES`` Python frames, and, by
the computation a GPU without the fused kernels takes (the full convolution, then FFTs), it
dispatches no more operators than the authors' algorithm, in a training forward and in the
forward of a trained layer in evaluation.
"""
from __future__ import annotations

import collections
import sys
from dataclasses import replace

import pytest
import torch
from authors_layer import AuthorsConvNorm2d
from torch.utils._python_dispatch import TorchDispatchMode

from convnorm import ConvNorm2d
from convnorm.functional import ComputationPolicy, use_policy

MAX_FRAMES = 20
"""The most Python frames one forward call of a prepared layer may pass (``nn.Conv2d`` passes 7,
``nn.BatchNorm2d`` 14; ``torch.autograd.Function.apply`` alone passes 5 plus one per argument)."""

BY_FFTS = ComputationPolicy(frequency_domain_devices=(), dense_transform_devices=(), fused_filter_devices=())
"""The spatial computation with FFTs, as on a GPU without Triton (cuFFT)."""

BY_GEMMS = replace(ComputationPolicy().forcing("frequency_domain"), frequency_domain_gemms=True)
"""The frequency domain by matrix products, the GPU's form, here under bfloat16 autocast."""


class _Operators(TorchDispatchMode):
    """Counts the operators dispatched inside the ``with`` block."""

    def __init__(self):
        super().__init__()
        self.count = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count[str(func.overloadpacket)] += 1
        return func(*args, **(kwargs or {}))


def operators(layer: torch.nn.Module, x: torch.Tensor) -> collections.Counter:
    with _Operators() as counted:
        layer(x)
    return counted.count


def frames(layer: torch.nn.Module, x: torch.Tensor) -> list[str]:
    called = []

    def profile(frame, event, arg):
        if event == "call":
            called.append(f"{frame.f_code.co_filename.rsplit('/', 1)[-1]}:{frame.f_code.co_name}")

    sys.setprofile(profile)
    try:
        layer(x)
    finally:
        sys.setprofile(None)
    return called


def trained_pair(bias: bool, stride: int, training: bool) -> tuple[torch.nn.Module, torch.nn.Module]:
    """The package's layer and the authors' algorithm, after one training forward each, in
    training or evaluation mode."""
    layers = ConvNorm2d(16, 16, 3, stride, 1, bias=bias), AuthorsConvNorm2d(16, 16, 3, stride, 1, bias=bias)
    x = torch.randn(4, 16, 16, 16)
    for layer in layers:
        layer(x)  # a training step: both keep a running average for evaluation
        layer.train(training)
        layer(x)  # prepared (the package) for this signature and mode
    return layers


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
def test_no_more_operators_than_the_authors_algorithm(bias, stride, training):
    with use_policy(BY_FFTS):
        ours, theirs = trained_pair(bias, stride, training)
        x = torch.randn(4, 16, 16, 16)
        mine, authors = operators(ours, x), operators(theirs, x)
    assert sum(mine.values()) <= sum(authors.values()), (mine, authors)
    # the FFT round trip is one transform each way, with no separate pass to scale or copy
    assert mine["aten._fft_r2c"] == mine["aten._fft_c2r"] == 1 and not mine["aten.clone"] and not mine["aten.div"]


BY_DENSE = ComputationPolicy().forcing("spatial")
"""The spatial computation with dense DFT matrices, a CPU's way for maps beyond the frequency domain's."""

COMPUTATIONS = {  # policy, kernel size, stride
    "cpu-rule": (ComputationPolicy(), 3, 1), "cpu-rule-strided": (ComputationPolicy(), 3, 2),
    "ffts": (BY_FFTS, 3, 1), "dense": (BY_DENSE, 3, 1), "gemms": (BY_GEMMS, 3, 1), "gemms-strided": (BY_GEMMS, 3, 2),
    "pointwise": (ComputationPolicy(), 1, 1)}
"""Every computation of the engine's registry a CPU runs: the chunked frequency domain (the CPU's
rule), the spatial one with FFTs (a GPU's) and with dense matrices, the frequency domain by matrix
products, the pointwise one. (The fused filter runs on a CPU only under Triton's interpreter,
whose frames are not a GPU's.)"""


def frames_of(policy: ComputationPolicy, kernel: int, stride: int, autocast: torch.dtype | None,
              training: bool) -> tuple[str, list[str]]:
    """The computation a prepared 16-channel layer takes on a 16x16 map, and the frames of its
    forward, in training or evaluation mode after one training step."""
    with use_policy(policy), torch.autocast("cpu", dtype=autocast or torch.bfloat16, enabled=autocast is not None):
        layer = ConvNorm2d(16, 16, kernel, stride, kernel // 2)
        x = torch.randn(4, 16, 16, 16)
        layer(x)  # a training step: the layer keeps a running average for evaluation
        layer.train(training)
        layer(x)  # prepared for this signature and mode
        return layer._prepared.prepared.plan.method, frames(layer, x)


@pytest.mark.parametrize("autocast", [None, torch.bfloat16, torch.float16], ids=["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("computation", list(COMPUTATIONS))
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_a_forward_call_passes_few_python_frames(computation, autocast, training):
    """Every computation, in float32 and under autocast (switched off around the layer's own
    arithmetic by one C call each way), passes at most ``MAX_FRAMES``; except two under autocast,
    which pass 22: the chunked frequency domain (the CPU's rule, where a layer takes milliseconds)
    and the dense filter (a CPU's for larger maps; a GPU takes it only if its benchmark chose it),
    two frames each beyond their float32 forward's 20 (the autocast dtype read, the switch)."""
    policy, kernel, stride = COMPUTATIONS[computation]
    if autocast is not None and computation in ("cpu-rule", "cpu-rule-strided", "dense"):
        assert len(frames_of(policy, kernel, stride, autocast, training)[1]) <= MAX_FRAMES + 2
        return
    method, called = frames_of(policy, kernel, stride, autocast, training)
    assert method == {"cpu-rule": "frequency_domain", "ffts": "spatial", "dense": "spatial",
                      "gemms": "frequency_gemms", "pointwise": "pointwise"}[computation.removesuffix("-strided")]
    assert len(called) <= MAX_FRAMES, called
    assert not any("_geometry" in name or "_validation" in name for name in called)  # checked once, not per call


def test_the_counts_are_of_a_layer_prepared_once():
    """The first call of a signature checks and prepares (many frames); the next ones do not,
    and a new input size prepares again."""
    layer = ConvNorm2d(3, 4, 3, padding=1)
    first = frames(layer, torch.randn(2, 3, 8, 8))
    assert any("_geometry" in name for name in first) and len(first) > MAX_FRAMES
    assert len(frames(layer, torch.randn(2, 3, 8, 8))) <= MAX_FRAMES
    assert any("_geometry" in name for name in frames(layer, torch.randn(2, 3, 9, 9)))
