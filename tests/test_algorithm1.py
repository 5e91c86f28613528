"""Tests for convnorm.algorithm1: the paper's Algorithm 1 equals the package's ConvNorm."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from convnorm.algorithm1 import algorithm1_numpy, algorithm1_torch, centred_affine_as_convolution
from convnorm.layers import ConvNorm2d
from convnorm.padding import convnorm_four_step, crop


def circular_output(x, weight):
    p = weight.shape[-1] // 2
    return F.conv2d(F.pad(x, (p, p, p, p), mode="circular"), weight)


@pytest.mark.parametrize("size", [(6, 7), (5, 5)])
def test_numpy_torch_and_layer_agree_with_affine(size):
    torch.manual_seed(0)
    layer = ConvNorm2d(3, 4, 3, padding=1, padding_mode="circular", eps=1e-4).double()
    with torch.no_grad():
        layer.affine_weight.normal_()
        layer.bias.normal_()
    x = torch.randn(2, 3, *size, dtype=torch.float64)
    z = circular_output(x, layer.weight)
    r = centred_affine_as_convolution(layer.affine_weight.detach(), size)
    ours = algorithm1_torch(z, layer.weight, r, eps=1e-4)
    reference = algorithm1_numpy(z.detach().numpy(), layer.weight.detach().numpy(), r.numpy(), eps=1e-4)
    np.testing.assert_allclose(ours.detach().numpy(), reference, atol=1e-12)
    torch.testing.assert_close(ours + layer.bias[:, None, None], layer(x))


def test_zero_padded_layer_is_algorithm1_on_full_output_then_crop():
    torch.manual_seed(1)
    w, x = torch.randn(4, 3, 3, 3, dtype=torch.float64), torch.randn(1, 3, 6, 6, dtype=torch.float64)
    full = F.conv2d(x, w, padding=2)  # steps 1-2: length n + m - 1
    torch.testing.assert_close(crop(algorithm1_torch(full, w), (1, 1)), convnorm_four_step(x, w, padding=1))


def test_stop_gradient_and_identity_affine():
    w = torch.randn(2, 2, 3, 3, dtype=torch.float64, requires_grad=True)
    z = torch.randn(1, 2, 5, 5, dtype=torch.float64, requires_grad=True)
    delta = torch.zeros(2, 1, 1, dtype=torch.float64) + 1  # r_k = delta at the corner: identity
    torch.testing.assert_close(algorithm1_torch(z, w, delta), algorithm1_torch(z, w))
    algorithm1_torch(z, w).sum().backward()
    assert w.grad is None and z.grad is not None


def test_centred_affine_delta_is_corner_delta():
    rho = torch.zeros(1, 3, 3)
    rho[0, 1, 1] = 1
    r = centred_affine_as_convolution(rho, (5, 4))
    assert r[0, 0, 0] == 1 and r.sum() == 1


def test_bad_input_raises():
    with pytest.raises(ValueError, match="z_out must have shape"):
        algorithm1_numpy(np.ones((2, 4, 4)), np.ones((2, 1, 3, 3)))
    with pytest.raises(ValueError, match="channels"):
        algorithm1_torch(torch.ones(1, 3, 4, 4), torch.ones(2, 1, 3, 3))
    with pytest.raises(ValueError, match="larger than the output"):
        algorithm1_torch(torch.ones(1, 2, 2, 2), torch.ones(2, 1, 3, 3))
    with pytest.raises(ValueError, match="affine"):
        algorithm1_torch(torch.ones(1, 2, 4, 4), torch.ones(2, 1, 3, 3), torch.ones(3, 3, 3))
    with pytest.raises(ValueError, match="eps"):
        algorithm1_numpy(np.ones((1, 2, 4, 4)), np.ones((2, 1, 3, 3)), eps=-1)
    with pytest.raises(ValueError, match="non-finite"):
        algorithm1_numpy(np.full((1, 2, 4, 4), np.nan), np.ones((2, 1, 3, 3)))
    with pytest.raises(ValueError, match="rho must have shape"):
        centred_affine_as_convolution(torch.ones(2, 5, 5), (4, 4))
