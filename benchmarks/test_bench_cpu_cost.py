"""benchmarks/bench_cpu_cost.py times a network against its conversion, from the same weights, at
one and two threads, and records each configuration with its load."""
from __future__ import annotations

import json
import sys

import bench_cpu_cost
import pytest
import torch
import torch.nn as nn

from convnorm import ConvNorm2d

pytestmark = pytest.mark.heavy


def small(classes: int):
    def build() -> nn.Module:
        return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, classes))
    return build


def test_the_conversion_keeps_the_weights_and_converts_every_convolution():
    nets = bench_cpu_cost.pair(bench_cpu_cost.cifar_resnet18)
    base, converted = nets["conv2d+bn"], nets["convnorm2d+bn"]
    assert sum(isinstance(m, ConvNorm2d) for m in converted.modules()) == 20
    assert not any(type(m) is nn.Conv2d for m in converted.modules())
    converted_state = converted.state_dict()
    for name, value in base.state_dict().items():
        assert torch.equal(converted_state[name], value), name


def test_a_run_records_every_configuration_with_its_load(tmp_path, monkeypatch):
    monkeypatch.setitem(bench_cpu_cost.CASES, "cifar_resnet18", (small(10), 8, 10))
    monkeypatch.setitem(bench_cpu_cost.CASES, "torchvision_resnet18", (small(1000), 16, 1000))
    out = tmp_path / "record.json"
    monkeypatch.setattr(sys, "argv", ["bench_cpu_cost.py", "--cifar-batch", "2", "--imagenet-batch", "1",
                                      "--repeats", "2", "--out", str(out)])
    threads = torch.get_num_threads()
    try:
        bench_cpu_cost.main()
    finally:
        torch.set_num_threads(threads)
    results = json.loads(out.read_text())["results"]
    configurations = results["configurations"]
    assert [(c["network"], c["threads"]) for c in configurations] == [
        (case, t) for case in bench_cpu_cost.CASES for t in bench_cpu_cost.THREADS]
    for c in configurations:
        assert len(c["load_average_before"]) == len(c["load_average_after"]) == 3
        assert len(c["round_ratios"]) == 2 and c["ratio_median"] > 0
        assert set(c["step_time"]) == set(bench_cpu_cost.NETWORKS)
    ratios = [c["ratio_median"] for c in configurations]
    assert results["ratio_range"] == [min(ratios), max(ratios)]
