"""convnorm.functional's arguments: what the procedure is not defined for raises ValueError
naming the argument (conv_norm and the equation, conv_norm_reference, alike), and integer
arguments are taken as PyTorch's convolutions take them (NumPy integers too)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from convnorm.functional import conv_norm, conv_norm1d, conv_norm2d
from convnorm.reference import conv_norm_reference

X, W = torch.randn(1, 3, 8, 8), torch.randn(4, 3, 3, 3)


@pytest.mark.parametrize("function", [conv_norm, conv_norm_reference])
@pytest.mark.parametrize("kwargs, match", [
    ({"padding_mode": "reflect"}, "padding_mode must be one of"),
    ({"padding": 3}, "padding must be at most"),
    ({"padding": 0, "padding_mode": "circular"}, "padding must equal"),
    ({"padding": "same", "stride": 2}, "padding='same' requires stride 1"),
    ({"padding": "full"}, "padding must be an int"),
    ({"stride": 0}, "stride must be a positive int"),
    ({"stride": 2.0}, "stride must be a positive int"),
    ({"stride": (1.5, 1)}, "stride must be a positive int"),
    ({"padding": -1}, "padding must be a non-negative int"),
    ({"dilation": (1, 2, 3)}, "dilation must be a positive int"),
    ({"groups": 3}, "groups must be a positive int dividing"),
    ({"groups": 1.0}, "groups must be a positive int dividing"),
    ({"eps": -1.0}, "eps must be a finite non-negative number"),
    ({"eps": float("inf")}, "eps must be a finite non-negative number"),
    ({"eps": float("nan")}, "eps must be a finite non-negative number"),
    ({"bias": torch.ones(3)}, r"bias must have shape \(4,\)"),
    ({"affine_weight": torch.ones(3, 3, 3)}, "affine_weight must have shape"),
    ({"affine_weight": torch.ones(4, 11, 3)}, "affine kernel .* is larger than the normalization size"),
])
def test_bad_arguments_are_named(function, kwargs, match):
    with pytest.raises(ValueError, match=match):
        function(X, W, **kwargs)


@pytest.mark.parametrize("kwargs, match", [
    ({"running_autocorrelation": torch.ones(4, 3, 3)}, r"running_autocorrelation must have shape \(4, 5, 5\)"),
    ({"running_autocorrelation": torch.ones(4, 5, 5)}, "num_steps_tracked must be a torch.Tensor"),
    ({"running_autocorrelation": torch.ones(4, 5, 5), "num_steps_tracked": torch.tensor(0), "training": True},
     "averaging_factor must be given"),
])
def test_bad_running_average_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        conv_norm(X, W, **kwargs)


def test_bad_shapes_and_types_are_named():
    with pytest.raises(ValueError, match="input must have shape"):
        conv_norm2d(X[0, 0], W)
    with pytest.raises(ValueError, match="input has 2 channels"):
        conv_norm2d(X[:, :2], W)
    with pytest.raises(ValueError, match=r"weight must have shape \(C_out, C_in, m_1, m_2\)"):
        conv_norm2d(X, W[..., 0])
    with pytest.raises(ValueError, match=r"weight must have shape \(C_out, C_in, m\)"):
        conv_norm1d(X[..., 0], W)
    with pytest.raises(ValueError, match="larger than the input size"):
        conv_norm2d(torch.randn(1, 3, 2, 2), W, padding=1, padding_mode="circular")
    with pytest.raises(ValueError, match="one tap per channel"):
        conv_norm2d(X, W[..., :1, :1], affine_weight=torch.ones(4, 3, 3))
    with pytest.raises(ValueError, match="too small"):
        conv_norm2d(torch.randn(1, 3, 1, 1), W)
    with pytest.raises(TypeError, match="input must be a torch.Tensor, got ndarray"):
        conv_norm(X.numpy(), W)
    with pytest.raises(ValueError, match="input must be a floating-point tensor"):
        conv_norm(X.long(), W)


def test_numpy_integers_are_taken_as_conv2d_takes_them():
    """Sizes from NumPy (``np.int64`` from an array's shape, say) work as Python ints do."""
    args = dict(stride=np.int64(2), padding=(np.int32(1), 1), dilation=np.int16(1), groups=np.int64(1))
    torch.testing.assert_close(conv_norm(X, W, **args), conv_norm(X, W, stride=2, padding=1))
    assert conv_norm(X, W, **args).shape == F.conv2d(X, W, **args).shape
