"""benchmarks/bench_imagenet.py measures torchvision's ResNet18 and its conversion, and records
both timings with the processor."""
from __future__ import annotations

import json
import sys

import bench_imagenet
import pytest
import torch

from convnorm import ConvNorm2d

pytestmark = pytest.mark.heavy


def test_the_network_is_torchvisions_resnet18_and_converted_whole():
    nets = bench_imagenet.networks("cpu")
    base, converted = nets["conv2d+bn"], nets["convnorm2d+bn"]
    assert sum(p.numel() for p in base.parameters()) == 11_689_512  # torchvision.models.resnet18()'s count
    assert sum(isinstance(m, torch.nn.Conv2d) for m in base.modules()) == 20
    assert sum(isinstance(m, ConvNorm2d) for m in converted.modules()) == 20  # the stem and shortcuts too
    assert not any(type(m) is torch.nn.Conv2d for m in converted.modules())  # ConvNorm2d is a Conv2d subclass
    x = torch.rand(1, 3, 32, 32)
    assert base.eval()(x).shape == converted.eval()(x).shape == (1, 1000)


def test_a_run_records_both_timings_with_the_processor(tmp_path, monkeypatch):
    out = tmp_path / "record.json"
    monkeypatch.setattr(sys, "argv", ["bench_imagenet.py", "--batch", "2", "--size", "32", "--repeats", "1",
                                      "--out", str(out)])
    bench_imagenet.main()
    results = json.loads(out.read_text())["results"]
    assert results["setup"]["image_size"] == 32 and results["setup"]["cpu"]["instruction_sets"] is not None
    for key in ("train_time_ratio_median", "evaluation_time_ratio_median", "saved_activation_ratio"):
        assert results[key] > 0
    assert set(results["train_time"]) == set(results["evaluation_time"]) == set(bench_imagenet.NETWORKS)
