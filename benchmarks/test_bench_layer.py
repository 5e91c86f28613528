"""benchmarks/bench_layer.py's records and printed lines say which processor measured them
(ratios differ several-fold between processors), and its networks are the CIFAR ResNet18 with
Conv2d+BN and with ConvNorm2d+BN."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import bench_layer
import pytest
import torch.nn as nn

from convnorm import ConvNorm2d
from convnorm_lab.models import build_model
from convnorm_lab.training.results import provenance as lab_provenance

ROOT = Path(__file__).resolve().parents[1]


def test_the_printed_line_names_the_processor():
    cpu = bench_layer.cpu_info()
    assert cpu["model"] in bench_layer.cpu_line() and cpu["torch_cpu_capability"] in bench_layer.cpu_line()


def test_every_whole_step_record_carries_the_cpu():
    args = argparse.Namespace(batch=32, device="cpu", computation="rule")
    cpu = bench_layer.cpu_info()
    assert bench_layer.setup(args, "", cpu)["cpu"] is cpu


def conv_shapes(net: nn.Module) -> list[tuple]:
    """Each convolution's weight shape, stride and padding, in the network's order."""
    return [(tuple(m.weight.shape), m.stride, m.padding) for m in net.modules() if isinstance(m, nn.Conv2d)]


def test_the_network_is_the_labs_cifar_resnet18_less_its_input_standardization():
    ours, lab = bench_layer.model("bn"), build_model("resnet18", norm="bn")
    assert conv_shapes(ours) == conv_shapes(lab)
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in lab.parameters()) == 11_173_962


def test_every_convolution_of_the_convnorm_network_is_a_convnorm2d_followed_by_batchnorm():
    net = bench_layer.model("convnorm+bn")
    convs = [m for m in net.modules() if isinstance(m, nn.Conv2d)]
    assert len(convs) == 20 and all(isinstance(m, ConvNorm2d) and m.affine_weight is not None for m in convs)
    assert conv_shapes(net) == conv_shapes(bench_layer.model("bn"))


@pytest.mark.training  # starts a process that trains both networks a few steps
def test_it_runs_with_the_library_alone_and_writes_the_labs_record_layout(tmp_path):
    """Its smallest run in a fresh process where importing the lab or the book's code fails: it needs
    the library and torch only, and its record has the provenance fields of the lab's records."""
    poisoned = tmp_path / "poisoned"
    for package in ("convnorm_lab", "convnorm_book"):
        (poisoned / package).mkdir(parents=True)
        (poisoned / package / "__init__.py").write_text(f"raise ImportError('{package} is not installed')\n")
    out = tmp_path / "bench_layer.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(poisoned), str(ROOT)]), "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_layer.py"), "--batch", "2", "--repeats", "1",
                    "--no-rss", "--threads", "1", "--out", str(out)], env=env, cwd=tmp_path, check=True,
                   capture_output=True, text=True, timeout=600)
    record = json.loads(out.read_text())
    assert set(record["provenance"]) == set(lab_provenance("bench_layer", "batch2", 0, None, 1.0, "cpu"))
    assert record["provenance"]["experiment"] == "bench_layer" and record["results"]["setup"]["batch"] == 2
    assert record["results"]["saved_activation_ratio"] > 1 and record["results"]["time_ratio_median"] > 0
