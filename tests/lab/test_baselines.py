"""convnorm_lab.baselines: each baseline has its defining property (SN σ = 1, ONI orthogonal
rows, OCNN penalty zero exactly on orthogonal kernels, Cayley convolutions isometric)."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn as nn

from convnorm_lab.baselines import (
    CayleyConv2d,
    OCNNConv2d,
    OCNNRegularizer,
    cayley,
    kernel_orthogonality_penalty,
    ocnn_penalty,
    oni,
    oni_orthogonalize,
    spectral_norm,
)


def test_spectral_norm_gives_unit_sigma():
    torch.manual_seed(0)
    conv = spectral_norm(nn.Conv2d(16, 32, 3))
    x = torch.randn(1, 16, 8, 8)
    for _ in range(30):  # power iterations run in training-mode forwards
        conv(x)
    sigma = torch.linalg.matrix_norm(conv.weight.reshape(32, -1), ord=2)
    assert float(sigma.detach()) == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize("c_out", [8, 20])
def test_oni_rows_are_orthogonal(c_out):
    torch.manual_seed(0)
    weight = torch.randn(c_out, 4, 3, 3, dtype=torch.float64)
    out = oni_orthogonalize(weight, iterations=10, scale=math.sqrt(2)).reshape(c_out, -1)
    assert torch.allclose(out @ out.T, 2 * torch.eye(c_out, dtype=torch.float64), atol=1e-6)
    assert torch.allclose(out.sum(1), torch.zeros(c_out, dtype=torch.float64), atol=1e-10)  # centred rows
    # the paper's T = 5 is close, not exact; more iterations get closer
    def error(t):
        w = oni_orthogonalize(weight, iterations=t, scale=1.0).reshape(c_out, -1)
        return float((w @ w.T - torch.eye(c_out, dtype=torch.float64)).abs().max())
    assert error(10) < 1e-6 and error(8) < error(5) < error(3) < 1


def test_oni_parametrization_trains_through_the_iteration():
    conv = oni(nn.Conv2d(3, 6, 3), iterations=5, scale=1.0)
    conv(torch.randn(2, 3, 8, 8)).sum().backward()
    assert conv.parametrizations.weight.original.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="iterations"):
        oni_orthogonalize(torch.randn(4, 3, 3, 3), iterations=0)


@pytest.mark.parametrize("stride", [1, 2])
def test_ocnn_penalty_vanishes_on_orthogonal_kernels(stride):
    q = torch.linalg.qr(torch.randn(16, 16, dtype=torch.float64))[0][:8]  # 8 orthonormal rows
    pointwise = q.reshape(8, 16, 1, 1)
    centred = torch.zeros(8, 16, 3, 3, dtype=torch.float64)
    centred[:, :, 1, 1] = q
    assert float(kernel_orthogonality_penalty(pointwise, stride)) < 1e-20
    assert float(kernel_orthogonality_penalty(centred, stride)) < 1e-20
    # off the centre tap, overlapping shifts are penalised
    spread = centred.clone()
    spread[:, :, 1, 2] = q
    assert float(kernel_orthogonality_penalty(spread, stride)) > 0.1


def test_ocnn_penalty_of_pointwise_kernel_is_gram_error():
    k = torch.randn(6, 10, 1, 1, dtype=torch.float64)
    m = k.reshape(6, 10)
    expected = ((m @ m.T - torch.eye(6, dtype=torch.float64)) ** 2).sum()
    assert torch.allclose(kernel_orthogonality_penalty(k), expected)


def test_ocnn_model_penalty_sums_layers_times_lambda():
    model = nn.Sequential(OCNNConv2d(3, 4, 3), nn.ReLU(), OCNNConv2d(4, 4, 3, stride=2), nn.Conv2d(4, 2, 1))
    total = kernel_orthogonality_penalty(model[0].weight) + kernel_orthogonality_penalty(model[2].weight, 2)
    assert torch.allclose(ocnn_penalty(model), total)
    assert torch.allclose(OCNNRegularizer(0.01)(model), 0.01 * total)
    assert float(ocnn_penalty(nn.Sequential(nn.Conv2d(3, 4, 3)))) == 0.0
    with pytest.raises(ValueError, match="lambda"):
        OCNNRegularizer(-1.0)


@pytest.mark.parametrize("shape", [(5, 6, 4), (5, 3, 7), (2, 4, 4)])
def test_cayley_transform_is_orthonormal(shape):
    w = torch.randn(*shape, dtype=torch.complex128)
    q = cayley(w)
    small = min(shape[1:])
    gram = q.mH @ q if shape[1] >= shape[2] else q @ q.mH
    assert torch.allclose(gram, torch.eye(small, dtype=torch.complex128).expand_as(gram), atol=1e-10)


@pytest.mark.parametrize("stride, c_out", [(1, 6), (2, 16)])
def test_cayley_convolution_is_an_isometry(stride, c_out):
    torch.manual_seed(0)
    layer = CayleyConv2d(4, c_out, 3, stride=stride, bias=False).double()
    x = torch.randn(3, 4, 8, 8, dtype=torch.float64)
    y = layer(x)
    assert y.shape == (3, c_out, 8 // stride, 8 // stride)
    assert torch.allclose(y.flatten(1).norm(dim=1), x.flatten(1).norm(dim=1))
    if stride == 1:  # a (circular) convolution commutes with shifts
        assert torch.allclose(layer(torch.roll(x, (2, 3), (2, 3))), torch.roll(y, (2, 3), (2, 3)))
    with pytest.raises(ValueError, match="stride"):
        CayleyConv2d(4, 4, 3, stride=3)
