"""benchmarks/bench_export_size.py finds the constants an exported ConvNorm layer holds, layer by layer,
and measures the files of an exporter."""
from __future__ import annotations

import bench_export_size
import pytest
import torch
import torch.nn as nn

from convnorm import ConvNorm2d

pytestmark = pytest.mark.compile


def network() -> nn.Sequential:
    """A 5x5 layer on the whole image, then a 3x3 layer on a map a quarter as large."""
    return nn.Sequential(ConvNorm2d(3, 8, 5, stride=2, padding=2), nn.ReLU(), ConvNorm2d(8, 8, 3, padding=1)).eval()


def test_the_constants_are_found_per_layer_largest_first_with_the_map_each_normalizes():
    torch.manual_seed(0)
    layers = bench_export_size.constants_by_layer(network(), torch.rand(1, 3, 24, 24))
    assert [entry["layer"] for entry in layers] == ["0", "2"]  # the larger kernel on the larger map first
    assert layers[0]["kernel_size"] == [5, 5] and layers[0]["input_size"] == [24, 24]
    assert layers[1]["kernel_size"] == [3, 3] and layers[1]["input_size"] == [12, 12]
    assert layers[0]["bytes"] > layers[1]["bytes"] > 0
    assert sum(4 * torch.Size(shape).numel() for shape in layers[0]["shapes"]) <= layers[0]["bytes"]


def test_the_file_of_a_converted_network_is_larger_by_its_constants_and_an_unknown_exporter_is_refused():
    torch.manual_seed(0)
    example = torch.rand(1, 3, 24, 24)
    converted = network()
    plain = nn.Sequential(nn.Conv2d(3, 8, 5, stride=2, padding=2), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1)).eval()
    constants = sum(entry["bytes"] for entry in bench_export_size.constants_by_layer(converted, example))
    grown = (bench_export_size.export_bytes(converted, example, "torch.export")
             - bench_export_size.export_bytes(plain, example, "torch.export"))
    assert constants < grown
    with pytest.raises(ValueError, match="exporter must be one of"):
        bench_export_size.export_bytes(plain, example, "onnx2")
