"""convnorm.fourier: the power spectrum from the summed autocorrelation equals the
direct sum of |FFT|^2, the normalizer whitens it, and bad input is named."""
from __future__ import annotations

import itertools

import pytest
import torch

from convnorm.fourier import (
    autocorrelation_power_spectrum,
    kernel_autocorrelation,
    kernel_power_spectrum,
    normalizer_from_autocorrelation,
    normalizer_spectrum,
)


def direct_power_spectrum(weight, n, onesided):
    """Σ_i |DFT_n(a_ki)|² with the kernel wrapped circularly onto size n."""
    d = weight.dim() - 2
    wrapped = torch.zeros(*weight.shape[:2], *([n] * d), dtype=weight.dtype)
    for idx in itertools.product(*(range(k) for k in weight.shape[2:])):
        wrapped[(..., *[i % n for i in idx])] += weight[(..., *idx)]
    fft = torch.fft.rfftn if onesided else torch.fft.fftn
    return (fft(wrapped, dim=tuple(range(2, 2 + d))).abs() ** 2).sum(1)


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("k, n", [(3, 8), (3, 7), (5, 5), (2, 6), (1, 3), (5, 3), (4, 9)])
@pytest.mark.parametrize("onesided", [True, False])
def test_power_spectrum_matches_direct_fft(d, k, n, onesided):
    weight = torch.randn(4, 3, *([k] * d), dtype=torch.float64)
    expected = direct_power_spectrum(weight, n, onesided)
    assert torch.allclose(kernel_power_spectrum(weight, n, onesided), expected, atol=1e-10)


def test_autocorrelation_zero_lag_is_energy():
    weight = torch.randn(5, 2, 3, 3, dtype=torch.float64)
    r = kernel_autocorrelation(weight)
    assert r.shape == (5, 5, 5)
    assert torch.allclose(r[:, 2, 2], (weight ** 2).sum((1, 2, 3)))
    assert torch.allclose(r, r.flip(1, 2)), "r[-tau] = r[tau]"


@pytest.mark.parametrize("n", [6, 7])
def test_normalizer_whitens_each_output_channel(n):
    weight = torch.randn(3, 4, 3, dtype=torch.float64)
    a_hat = torch.fft.rfft(weight, n=n)
    v_hat = normalizer_spectrum(weight, n)
    assert torch.allclose(((a_hat * v_hat[:, None]).abs() ** 2).sum(1), torch.ones(3, n // 2 + 1, dtype=torch.float64))


@pytest.mark.parametrize("size", [7, (6, 5)])
def test_normalizer_from_an_autocorrelation_is_that_of_its_weight(size):
    """v-hat from r = r(a) is v-hat of a; from an average of r(a) and r(2a), that of sqrt(2.5) a."""
    d = 1 if isinstance(size, int) else 2
    weight = torch.randn(3, 2, *[3] * d, dtype=torch.float64)
    r = kernel_autocorrelation(weight)
    torch.testing.assert_close(normalizer_from_autocorrelation(r, size, 1e-3), normalizer_spectrum(weight, size, 1e-3))
    average = 0.5 * r + 0.5 * kernel_autocorrelation(2 * weight)
    torch.testing.assert_close(normalizer_from_autocorrelation(average, size),
                               normalizer_spectrum(2.5 ** 0.5 * weight, size))
    with pytest.raises(ValueError, match="eps must be a finite non-negative number"):
        normalizer_from_autocorrelation(r, size, -1.0)


def test_eps_bounds_the_gain():
    weight = torch.zeros(1, 1, 3, dtype=torch.float64)
    assert torch.isinf(normalizer_spectrum(weight, 8)).all()
    assert torch.allclose(normalizer_spectrum(weight, 8, eps=1e-4), torch.full((1, 5), 100.0, dtype=torch.float64))


@pytest.mark.parametrize("bad, message", [
    (lambda: kernel_power_spectrum(torch.randn(3, 3), 8), "weight must have shape"),
    (lambda: kernel_power_spectrum(torch.randn(2, 2, 3), 0), "size must be a positive integer"),
    (lambda: kernel_power_spectrum(torch.randn(2, 2, 3, 3), (8,)), "size must have 2 entries"),
    (lambda: kernel_power_spectrum(torch.tensor([[[1.0, float("nan")]]]), 4), "weight contains non-finite"),
    (lambda: normalizer_spectrum(torch.randn(2, 2, 3), 8, eps=-1.0), "eps must be a finite non-negative number"),
    (lambda: normalizer_spectrum(torch.randn(2, 2, 3), 8, eps=float("inf")), "eps must be a finite non-negative"),
    (lambda: kernel_power_spectrum(torch.randn(2, 2, 3), 2.0), "size must be a positive integer"),
])
def test_bad_input_is_named(bad, message):
    with pytest.raises(ValueError, match=message):
        bad()


@pytest.mark.parametrize("size, dilation", [((9,), (2,)), ((10, 7), (2, 3)), ((5, 4), (3, 2))])
def test_dilated_spectrum_is_that_of_the_zero_stuffed_kernels(size, dilation):
    torch.manual_seed(3)
    w = torch.randn(3, 2, *([3] * len(size)), dtype=torch.float64)
    stuffed = torch.zeros(3, 2, *(dl * 2 + 1 for dl in dilation), dtype=torch.float64)
    stuffed[(slice(None), slice(None), *(slice(None, None, dl) for dl in dilation))] = w
    for onesided in (True, False):
        torch.testing.assert_close(
            autocorrelation_power_spectrum(kernel_autocorrelation(w), size, onesided, dilation=dilation),
            kernel_power_spectrum(stuffed, size, onesided))


def test_autocorrelation_large_kernel_path_and_spectrum_from_it():
    """Kernels too large for the Gram lag map use a grouped convolution
    (``LAG_MAP_MAX_ENTRIES``): same result, and the power spectrum from r equals the direct sum
    of |FFT|²."""
    torch.manual_seed(12)
    w = torch.randn(3, 2, 11, 11, dtype=torch.float64)
    r = kernel_autocorrelation(w)
    torch.testing.assert_close(r, kernel_autocorrelation(w, by_convolution=False))
    assert r.shape == (3, 21, 21)
    torch.testing.assert_close(r[:, 10, 10], (w ** 2).sum((1, 2, 3)))
    direct = (torch.fft.rfft2(w, s=(16, 13)).abs() ** 2).sum(1)
    torch.testing.assert_close(autocorrelation_power_spectrum(r, (16, 13)), direct)
    with pytest.raises(ValueError, match="autocorrelation must have shape"):
        autocorrelation_power_spectrum(torch.ones(3, 4, 4), 8)
