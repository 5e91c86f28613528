"""The estimate of the book's Colab training (``convnorm_lab.experiments.colab``) and the
operation counts it rests on (``convnorm_lab.models.flops``)."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch.nn as nn

from convnorm_lab.experiments.colab import (
    BUDGET_MINUTES,
    COLAB_PRESET,
    T4_PEAK_FLOPS,
    calibration,
    colab_estimate,
    describe,
    latest_calibration,
    reader_preset,
)
from convnorm_lab.experiments.presets import PRESETS
from convnorm_lab.models import build_model
from convnorm_lab.models.flops import forward_flops

CALIBRATIONS = sorted((Path(__file__).resolve().parents[2] / "benchmarks" / "results").glob("gpu_calibration_*.json"))


def test_operations_are_counted_per_weight_and_output_pixel():
    conv = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.Flatten(), nn.Linear(8 * 32 * 32, 10))
    assert forward_flops(conv) == 2 * 8 * 32 * 32 * 3 * 9 + 2 * 8 * 32 * 32 * 10
    # the CIFAR ResNet18's 0.56 G multiply-adds; airbench94's network about a fifth of it (0.36 PFLOP
    # for ten epochs of 50,000 images, training steps three passes)
    assert forward_flops(build_model("resnet18", "bn")) == pytest.approx(1.11e9, rel=0.01)
    airbench = forward_flops(build_model("airbench", "bn"))
    assert 3 * airbench * 50_000 * 9.9 == pytest.approx(0.36e15, rel=0.05)
    assert forward_flops(build_model("airbench", "convnorm+bn")) == airbench


@pytest.mark.parametrize("path", CALIBRATIONS, ids=lambda p: p.name)
def test_the_estimate_is_the_operations_over_the_throughput_reached(path):
    utilization, ratio = calibration(path)
    assert 0 < utilization < 1 and ratio > 1
    estimate = colab_estimate(path)
    preset = PRESETS[COLAB_PRESET]
    forward = forward_flops(build_model("airbench", "bn", width=preset.width))
    seconds = forward * preset.epochs * (3 * 45_000 + 15_000) / (utilization * T4_PEAK_FLOPS) * (1 + ratio)
    assert estimate.minutes == pytest.approx(seconds / 60)
    per_epoch = estimate.minutes / preset.epochs
    fitting = estimate.epochs_within_budget
    assert per_epoch * fitting <= BUDGET_MINUTES < per_epoch * (fitting + 1)


@pytest.mark.parametrize("path", CALIBRATIONS, ids=lambda p: p.name)
def test_the_colab_run_fits_the_t4_budget_on_its_own_shorter_schedule(path):
    estimate = colab_estimate(path)
    assert estimate.minutes <= BUDGET_MINUTES and estimate.epochs < estimate.epochs_within_budget
    own, full = PRESETS[COLAB_PRESET], PRESETS["airbench"]
    assert estimate.epochs == own.epochs < full.epochs
    # the airbench preset itself, but for its schedule and its learning-rate trials, which two trainings cannot afford
    changed = {k for k, v in own.as_dict().items() if v != full.as_dict()[k]}
    assert changed == {"name", "description", "epochs", "adv_epochs", "lr_rule"}
    assert own.rule.grid == (1,)
    text = describe(path)
    assert f"{estimate.minutes:.1f} minutes" in text and "estimate" in text and "no T4 has measured it" in text


def test_a_reader_trains_the_colab_preset_on_a_gpu_and_the_newest_calibration_prices_it(tmp_path):
    assert reader_preset(True) == COLAB_PRESET and reader_preset(False) is None
    assert latest_calibration(CALIBRATIONS[0].parent) == CALIBRATIONS[-1]
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        latest_calibration(tmp_path)
