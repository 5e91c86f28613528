"""The run-time baseline (the authors' algorithm on torch.fft) computes ConvNorm2d's values."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from authors_layer import AuthorsConvNorm2d, with_authors_layers  # noqa: E402

from convnorm.layers import ConvNorm2d  # noqa: E402


@pytest.mark.parametrize("k, stride, padding, size", [(3, 1, 1, 8), (3, 2, 1, 9), (1, 2, 0, 8), (3, 1, 0, 7)])
def test_port_matches_the_package_layer(k, stride, padding, size):
    torch.manual_seed(0)
    layer = ConvNorm2d(4, 6, k, stride=stride, padding=padding).double()
    port = with_authors_layers(torch.nn.Sequential(layer)).double()[0]
    assert isinstance(port, AuthorsConvNorm2d)
    x = torch.randn(2, 4, size, size, dtype=torch.float64, requires_grad=True)
    expected = layer(x)
    got = port(x)
    assert got.shape == expected.shape
    assert torch.allclose(got, expected, rtol=1e-10, atol=1e-12)
    g_port, = torch.autograd.grad(got.square().sum(), x)
    g_pkg, = torch.autograd.grad(expected.square().sum(), x)
    assert torch.allclose(g_port, g_pkg, rtol=1e-9, atol=1e-11)
