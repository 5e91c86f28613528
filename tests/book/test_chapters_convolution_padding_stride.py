"""convnorm_book.chapters.convolution_padding_stride: the numbers of Chapter 4's explorer separate circular
from zero padding, and bad settings are refused by name."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from convnorm_book.chapters.convolution_padding_stride import (
    padding_stride_explorer,
    padding_stride_view,
    padding_weights,
)


@pytest.mark.parametrize("n", [8, 9])
def test_padding_stride_view_separates_circular_from_zero_padding(n):
    weight = padding_weights()[3]
    for stride in (1, 2):
        circular = padding_stride_view(weight, n, 1, stride, "circular")
        np.testing.assert_allclose(circular["eigenvalues"], 1)
        assert circular["distances"].max() < 1e-12
        zero = padding_stride_view(weight, n, 1, stride)
        assert zero["eigenvalues"].shape == (2, (n + 2 - 3) // stride + 1)
        assert zero["distances"].min() > 1e-2
        np.testing.assert_allclose(zero["distances"], np.abs(zero["eigenvalues"] - 1).max(1))


@pytest.mark.parametrize("call, argument", [
    (lambda: padding_stride_view(torch.zeros(2, 3), 8, 0, 1), "weight"),
    (lambda: padding_stride_explorer(padding=3), "padding"),
])
def test_bad_settings_are_refused_by_name(call, argument):
    with pytest.raises(ValueError, match=argument):
        call()
