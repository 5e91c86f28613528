"""How long the book's "Train it yourself" takes on a free Colab T4: the airbench network
with BN, then with ConvNorm+BN, one seed each, at the ``airbench`` preset. An *estimate*,
from operations and throughputs, until a T4 measures it.

.. math::  t = \\frac{3\\,F\\,(n_\\text{train} E) + F\\,(n_\\text{val} + n_\\text{test}) E}{u \\, P_\\text{T4}}
           \\,(1 + \\rho),

with :math:`F` the BN network's forward operations per image
(:func:`~convnorm_lab.models.flops.forward_flops`), :math:`E` the epochs, :math:`P_\\text{T4}`
the T4's peak half-precision throughput, :math:`u` the share of its peak a GPU reaches on
these steps and :math:`\\rho` ConvNorm+BN's step time over BN's. :math:`u` and :math:`\\rho`
are read from the GPU calibration records (``benchmarks/results/gpu_calibration_*.json``):
the BN ResNet18's measured step against its operations and that GPU's peak, and the two
networks' measured steps. Both are ResNet18's, taken to hold for the airbench network, which
is an assumption: a smaller network fills a GPU less, so the estimate is optimistic.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..models import build_model
from ..models.flops import TRAINING_MULTIPLE, forward_flops
from ..models.normalizations import BN, CONVNORM_BN
from .presets import get_preset

#: the T4's peak float16 tensor-core throughput (NVIDIA's T4 datasheet: 65 TFLOPS mixed precision)
T4_PEAK_FLOPS = 65e12
#: the dense bfloat16 tensor-core peaks of the GPUs the calibrations ran on (NVIDIA's
#: datasheets: the H100 SXM and the H200 both 989 TFLOPS without sparsity)
PEAK_FLOPS = {"H100": 989e12, "H200": 989e12}
#: the split's images the airbench preset reads: training, validation, test
SPLIT = (45_000, 5_000, 10_000)
#: what the chapter promises: both trainings within this many minutes
BUDGET_MINUTES = 10


@dataclass(frozen=True)
class ColabEstimate:
    """The estimate and what it rests on."""

    minutes: float
    utilization: float
    convnorm_ratio: float
    calibration: str
    epochs: int

    @property
    def epochs_within_budget(self) -> int:
        """The most epochs whose estimate fits :data:`BUDGET_MINUTES` (the time is linear in them)."""
        return int(self.epochs * BUDGET_MINUTES / self.minutes)


def calibration(path: str | Path) -> tuple[float, float]:
    """``(utilization, ConvNorm+BN over BN)`` of the bfloat16 ResNet18 steps of a calibration record."""
    data = json.loads(Path(path).read_text())["results"]
    gpu = data["setup"]["gpu"]
    peak = next((flops for name, flops in PEAK_FLOPS.items() if name in gpu), None)
    if peak is None:
        raise ValueError(f"no peak throughput is known for {gpu!r} (calibration {path}): add it to PEAK_FLOPS")
    steps = {e["norm"]: e["train_s_per_image"] for e in data["step_times"]
             if e["arch"] == "resnet18" and e["precision"] == "bf16"}
    operations = TRAINING_MULTIPLE * forward_flops(build_model("resnet18", BN))
    return operations / steps[BN] / peak, steps[CONVNORM_BN] / steps[BN]


def colab_estimate(path: str | Path, preset: str = "airbench") -> ColabEstimate:
    """The minutes of BN then ConvNorm+BN, one seed each, at ``preset`` on a T4 (see the module)."""
    utilization, ratio = calibration(path)
    p = get_preset(preset)
    forward = forward_flops(build_model(p.arch, BN, width=p.width))
    train, val, test = SPLIT
    operations = forward * p.epochs * (TRAINING_MULTIPLE * train + val + test)
    seconds = operations / (utilization * T4_PEAK_FLOPS) * (1 + ratio)
    return ColabEstimate(seconds / 60, utilization, ratio, Path(path).name, p.epochs)
