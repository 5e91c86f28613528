"""convnorm.algorithm1: the paper's Algorithm 1 on the outputs of a circular layer is the
layer's circular ConvNorm (its affine kernel rewritten as a convolution), and the zero-padded
layer is Algorithm 1 on the full output, cropped."""
import pytest
import torch
import torch.nn.functional as F

from convnorm.algorithm1 import algorithm1, centred_affine_as_convolution
from convnorm.layers import ConvNorm2d
from convnorm.padding import crop
from convnorm.reference import conv_norm_reference


def circular_output(x, weight):
    p = weight.shape[-1] // 2
    return F.conv2d(F.pad(x, (p, p, p, p), mode="circular"), weight)


@pytest.mark.parametrize("size", [(6, 7), (5, 5)])
def test_algorithm1_is_the_circular_layer_with_affine(size):
    torch.manual_seed(0)
    layer = ConvNorm2d(3, 4, 3, padding=1, padding_mode="circular", eps=1e-4).double()
    with torch.no_grad():
        layer.affine_weight.normal_()
        layer.bias.normal_()
    x = torch.randn(2, 3, *size, dtype=torch.float64)
    r = centred_affine_as_convolution(layer.affine_weight.detach(), size)
    ours = algorithm1(circular_output(x, layer.weight), layer.weight, r, eps=1e-4)
    torch.testing.assert_close(ours + layer.bias[:, None, None], layer(x))


def test_zero_padded_layer_is_algorithm1_on_full_output_then_crop():
    torch.manual_seed(1)
    w, x = torch.randn(4, 3, 3, 3, dtype=torch.float64), torch.randn(1, 3, 6, 6, dtype=torch.float64)
    full = F.conv2d(x, w, padding=2)  # length n + m - 1
    torch.testing.assert_close(crop(algorithm1(full, w), (1, 1)), conv_norm_reference(x, w, padding=1, eps=0.0))


def test_stop_gradient_and_identity_affine():
    w = torch.randn(2, 2, 3, 3, dtype=torch.float64, requires_grad=True)
    z = torch.randn(1, 2, 5, 5, dtype=torch.float64, requires_grad=True)
    delta = torch.zeros(2, 1, 1, dtype=torch.float64) + 1  # r_k = delta at the corner: identity
    torch.testing.assert_close(algorithm1(z, w, delta), algorithm1(z, w))
    algorithm1(z, w).sum().backward()
    assert w.grad is None and z.grad is not None


def test_centred_affine_delta_is_corner_delta():
    rho = torch.zeros(1, 3, 3)
    rho[0, 1, 1] = 1
    r = centred_affine_as_convolution(rho, (5, 4))
    assert r[0, 0, 0] == 1 and r.sum() == 1


@pytest.mark.parametrize("call, message", [
    (lambda: algorithm1(torch.ones(2, 4, 4), torch.ones(2, 1, 3, 3)), r"z_out must have shape \(N, C_O, H, W\)"),
    (lambda: algorithm1(torch.ones(1, 3, 4, 4), torch.ones(2, 1, 3, 3)), "channels"),
    (lambda: algorithm1(torch.ones(1, 2, 2, 2), torch.ones(2, 1, 3, 3)), "larger than the output"),
    (lambda: algorithm1(torch.ones(1, 2, 4, 4), torch.ones(2, 1, 3, 3), torch.ones(3, 3, 3)), "affine"),
    (lambda: algorithm1(torch.ones(1, 2, 4, 4), torch.ones(2, 1, 3, 3), eps=-1), "eps"),
    (lambda: algorithm1(torch.ones(1, 2, 4, 4), torch.full((2, 1, 3, 3), torch.nan)), "non-finite"),
    (lambda: algorithm1(torch.ones(1, 2, 4, 4), torch.ones(2, 1, 3)), "weight must have shape"),
    (lambda: centred_affine_as_convolution(torch.ones(2, 5, 5), (4, 4)), "rho must have shape"),
])
def test_bad_input_raises(call, message):
    with pytest.raises(ValueError, match=message):
        call()
