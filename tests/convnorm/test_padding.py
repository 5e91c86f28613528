"""Tests for convnorm.padding: convolution relations, crop, stride and dilation, and the pieces
put together by the equation (convnorm.reference): the shapes of conv1d/conv2d, stride as
downsampling, tight frames with circular padding only."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from convnorm.circulant import circular_convolve, zero_pad
from convnorm.functional import conv_norm
from convnorm.padding import (
    channel_blocks,
    crop,
    dilate_kernel,
    downsample,
    linear_as_circular,
    linear_convolve,
    linear_cross_correlate,
    tight_frame_distance,
)
from convnorm.reference import conv_norm_reference
from convnorm.spectral import operator_matrix


def four_steps(x, w, padding=0, stride=1, eps=0.0, padding_mode="zeros"):
    return conv_norm_reference(x, w, stride=stride, padding=padding, padding_mode=padding_mode, eps=eps)

rng = np.random.default_rng(0)


@pytest.mark.parametrize("m,n", [(3, 7), (4, 8), (1, 5), (5, 5)])
def test_relations_against_numpy_and_conv1d(m, n):
    a, x = rng.standard_normal(m), rng.standard_normal(n)
    np.testing.assert_allclose(linear_convolve(a, x), np.convolve(a, x), atol=1e-12)
    np.testing.assert_allclose(linear_as_circular(a, x), linear_convolve(a, x), atol=1e-12)
    for p in range(m):
        torch_out = F.conv1d(torch.tensor(x)[None, None], torch.tensor(a)[None, None], padding=p)[0, 0].numpy()
        np.testing.assert_allclose(linear_cross_correlate(a, x, p), torch_out, atol=1e-12)
        # cross-correlation = flipped linear convolution, cropped by m - 1 - p
        full = linear_convolve(a[::-1], x)
        np.testing.assert_allclose(linear_cross_correlate(a, x, p), full[m - 1 - p : full.size - (m - 1 - p)],
                                   atol=1e-12)


def test_circular_convolution_wraps_unless_padded():
    a, x = np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 2.0, 1.0, 3.0])
    assert not np.allclose(circular_convolve(a, x), linear_convolve(a, x)[: x.size])
    L = x.size + a.size - 1
    np.testing.assert_allclose(circular_convolve(zero_pad(a, L), zero_pad(x, L)), linear_convolve(a, x))


@pytest.mark.parametrize("d,m,n", [(1, 3, 9), (1, 4, 8), (2, 3, 6), (2, 2, 5)])
def test_the_steps_match_the_package_layer(d, m, n):
    g = torch.Generator().manual_seed(d * 10 + m)
    for p in range(m):
        for s in (1, 2):
            w = torch.randn(4, 3, *(m,) * d, dtype=torch.float64, generator=g)
            x = torch.randn(2, 3, *(n,) * d, dtype=torch.float64, generator=g)
            ours = four_steps(x, w, p, s, eps=1e-3)
            conv = (F.conv1d if d == 1 else F.conv2d)(x, w, padding=p, stride=s)
            assert ours.shape == conv.shape
            torch.testing.assert_close(ours, conv_norm(x, w, padding=p, stride=s, eps=1e-3))


def test_stride_is_downsampling_of_normalized_output():
    w, x = torch.randn(3, 2, 3, dtype=torch.float64), torch.randn(1, 2, 11, dtype=torch.float64)
    torch.testing.assert_close(four_steps(x, w, 1, 3), downsample(four_steps(x, w, 1), 3))


def test_tight_frame_exact_for_circular_not_for_zero_padding():
    w = torch.randn(2, 3, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    circ = operator_matrix(lambda x: four_steps(x, w, 1, padding_mode="circular"), (3, 12))
    zeros = operator_matrix(lambda x: four_steps(x, w, 1), (3, 12))
    assert max(tight_frame_distance(b) for b in channel_blocks(circ, 2)) < 1e-12
    assert min(tight_frame_distance(b) for b in channel_blocks(zeros, 2)) > 1e-3
    # a strided circular ConvNorm channel is still a tight frame: D_s Q_k Q_k^T D_s^T = I
    strided = operator_matrix(lambda x: four_steps(x, w, 1, 2, padding_mode="circular"), (3, 12))
    assert max(tight_frame_distance(b) for b in channel_blocks(strided, 2)) < 1e-12


def test_dilation_equals_zero_stuffed_kernel():
    w, x = torch.randn(2, 3, 3, 3, dtype=torch.float64), torch.randn(1, 3, 9, 9, dtype=torch.float64)
    stuffed = dilate_kernel(w, 2)
    assert stuffed.shape == (2, 3, 5, 5)
    torch.testing.assert_close(F.conv2d(x, w, dilation=2), F.conv2d(x, stuffed))
    torch.testing.assert_close(conv_norm(x, w, padding=2, dilation=2, eps=0.0), four_steps(x, stuffed, 2))


def test_crop_and_downsample_numpy_and_torch():
    y = np.arange(10)
    np.testing.assert_array_equal(crop(y, 2), np.arange(2, 8))
    np.testing.assert_array_equal(downsample(y, 3), [0, 3, 6, 9])
    t = torch.arange(30).reshape(5, 6)
    assert crop(t, (1, 2)).shape == (3, 2)
    assert downsample(t, (2, 4)).tolist() == [[0, 4], [12, 16], [24, 28]]


def test_bad_input_raises():
    with pytest.raises(ValueError, match="a must have shape"):
        linear_convolve(np.ones((2, 2)), np.ones(4))
    with pytest.raises(ValueError, match="padding must be a non-negative int"):
        linear_cross_correlate(np.ones(3), np.ones(5), -1)
    with pytest.raises(ValueError, match="longer than the padded signal"):
        linear_cross_correlate(np.ones(6), np.ones(3))
    with pytest.raises(ValueError, match="cannot crop"):
        crop(np.ones(4), 2)
    with pytest.raises(ValueError, match="stride"):
        downsample(np.ones(4), 0)
    x, w = torch.randn(1, 2, 8), torch.randn(3, 2, 3)
    with pytest.raises(ValueError, match="padding must be at most"):
        four_steps(x, w, padding=3)
    with pytest.raises(ValueError, match="odd effective kernel"):
        four_steps(x, torch.randn(3, 2, 4), padding=1, padding_mode="circular")
    with pytest.raises(ValueError, match="padding_mode"):
        four_steps(x, w, padding=1, padding_mode="reflect")
    with pytest.raises(ValueError, match="channels"):
        four_steps(torch.randn(1, 3, 8), w)
    with pytest.raises(ValueError, match=r"weight must have shape \(C_out, C_in, m\) or"):
        dilate_kernel(torch.ones(3, 3), 2)
    with pytest.raises(ValueError, match="dilation"):
        dilate_kernel(w, 0)
    with pytest.raises(ValueError, match="block must be a matrix"):
        tight_frame_distance(torch.ones(3))
