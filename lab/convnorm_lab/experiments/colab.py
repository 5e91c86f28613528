"""How long the book's "Train it yourself" takes on a free Colab T4: the airbench network
with BN, then with ConvNorm+BN, one seed each, at the ``airbench-colab`` preset
(:data:`COLAB_PRESET`: the airbench preset's network and recipe at the Colab run's own,
shorter schedule, every network at the recipe's rate). An *estimate*, from operations and
throughputs, until a T4 measures it.

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
from .gpu_queue import CALIBRATION_PATTERN
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
#: the preset a reader trains on a GPU: the airbench network at :data:`~convnorm_lab.experiments.presets.COLAB_EPOCHS`
COLAB_PRESET = "airbench-colab"


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


def reader_preset(cuda_available: bool) -> str | None:
    """The preset of a reader's "Train it yourself": :data:`COLAB_PRESET` on a GPU; ``None``
    without one (the chapter's default, the reduced cpu scale)."""
    return COLAB_PRESET if cuda_available else None


def latest_calibration(folder: str | Path) -> Path:
    """The newest GPU calibration record in ``folder`` (``benchmarks/results`` of the repository).

    Raises:
        FileNotFoundError: naming the folder, where it holds none.
    """
    found = sorted(Path(folder).glob(CALIBRATION_PATTERN))
    if not found:
        raise FileNotFoundError(f"no GPU calibration record ({CALIBRATION_PATTERN}) in {folder}")
    return found[-1]


def describe(path: str | Path) -> str:
    """The estimate in words, saying that it is one (what the chapter prints)."""
    e = colab_estimate(path)
    return (f"On a free Colab T4, BN then ConvNorm+BN on the airbench network ({e.epochs} epochs, the Colab run's "
            f"own schedule) should take about {e.minutes:.1f} minutes of the {BUDGET_MINUTES} promised. It is an "
            f"estimate from the networks' operations and the T4's peak throughput ({T4_PEAK_FLOPS / 1e12:g} TFLOPS), "
            f"at the share of a GPU's peak ({e.utilization:.0%}) and the ConvNorm+BN step's cost over BN's "
            f"({e.convnorm_ratio:.1f}x) that a larger GPU measured for ResNet18; no T4 has measured it yet.")


def colab_estimate(path: str | Path, preset: str = COLAB_PRESET) -> ColabEstimate:
    """The minutes of BN then ConvNorm+BN, one seed each, at ``preset`` on a T4 (see the module)."""
    utilization, ratio = calibration(path)
    p = get_preset(preset)
    forward = forward_flops(build_model(p.arch, BN, width=p.width))
    train, val, test = SPLIT
    operations = forward * p.epochs * (TRAINING_MULTIPLE * train + val + test)
    seconds = operations / (utilization * T4_PEAK_FLOPS) * (1 + ratio)
    return ColabEstimate(seconds / 60, utilization, ratio, Path(path).name, p.epochs)
