"""Identities of the one-channel warm-up (convnorm.allpass) and its input checks."""
import numpy as np
import pytest
import torch

from convnorm.allpass import allpass_filter, normalizer_filter, preconditioner_dense, sample_normalizer_filter
from convnorm.circulant import circulant, circular_convolve, zero_pad
from convnorm.fourier import normalizer_spectrum

SIZES = [(1, 1), (2, 5), (3, 8), (4, 9), (7, 16)]


@pytest.mark.parametrize("k,n", SIZES)
def test_dense_and_fft_preconditioner_agree(rng, k, n):
    a = rng.standard_normal(k)
    p = preconditioner_dense(a, n)
    c = circulant(a, n)
    np.testing.assert_allclose(p @ (c @ c.T) @ p, np.eye(n), atol=1e-8)
    np.testing.assert_allclose(circulant(normalizer_filter(a, n)), p, atol=1e-8)


@pytest.mark.parametrize("k,n", SIZES)
def test_normalizer_matches_fourier_module_and_inverse_modulus(rng, k, n):
    a = rng.standard_normal(k)
    v_hat = np.fft.fft(normalizer_filter(a, n))
    np.testing.assert_allclose(v_hat, 1 / np.abs(np.fft.fft(a, n)), rtol=1e-8, atol=1e-10)
    torch_v_hat = normalizer_spectrum(torch.from_numpy(a).reshape(1, 1, -1), n, onesided=False)[0].numpy()
    np.testing.assert_allclose(v_hat.real, torch_v_hat, rtol=1e-8)


@pytest.mark.parametrize("k,n", SIZES)
def test_allpass_filter_is_orthogonal_and_keeps_phase(rng, k, n):
    a = rng.standard_normal(k)
    g = allpass_filter(a, n)
    q = circulant(g)
    np.testing.assert_allclose(q, preconditioner_dense(a, n) @ circulant(a, n), atol=1e-8)
    np.testing.assert_allclose(q @ q.T, np.eye(n), atol=1e-8)
    g_hat, a_hat = np.fft.fft(g), np.fft.fft(a, n)
    np.testing.assert_allclose(np.abs(g_hat), 1.0, atol=1e-8)
    np.testing.assert_allclose(g_hat * np.abs(a_hat), a_hat, atol=1e-8)
    np.testing.assert_allclose(g, circular_convolve(normalizer_filter(a, n), zero_pad(a, n)), atol=1e-12)


@pytest.mark.parametrize("n", [8, 9])
def test_eps_shrinks_gains_and_bounds_normalizer(rng, n):
    a, eps = rng.standard_normal(3), 0.3
    a_hat = np.fft.fft(a, n)
    g_hat = np.fft.fft(allpass_filter(a, n, eps))
    np.testing.assert_allclose(np.abs(g_hat), np.abs(a_hat) / np.sqrt(np.abs(a_hat) ** 2 + eps), atol=1e-10)
    assert np.all(np.abs(g_hat) < 1)
    assert np.abs(np.fft.fft(normalizer_filter(a, n, eps))).max() <= eps**-0.5
    np.testing.assert_allclose(circulant(normalizer_filter(a, n, eps)), preconditioner_dense(a, n, eps), atol=1e-8)


def test_vanishing_spectrum_needs_eps():
    with pytest.raises(ValueError, match="vanishing spectrum at frequency 0"):
        normalizer_filter([1.0, -1.0], 8)
    with pytest.raises(ValueError, match="singular"):
        preconditioner_dense([1.0, -1.0], 8)
    v = normalizer_filter([1.0, -1.0], 8, eps=1e-4)
    assert np.isclose(np.fft.fft(v)[0].real, 1e-4**-0.5)


@pytest.mark.parametrize("n", [16, 17])
def test_sample_preconditioner_matches_dense_and_converges(rng, n):
    a = rng.standard_normal(3)
    z = np.stack([circular_convolve(a, x) for x in 2.0 * rng.standard_normal((5, n))])
    dense = sum(circulant(zi) @ circulant(zi).T for zi in z) / (n * 4.0 * 5)
    eigenvalues, vectors = np.linalg.eigh(dense)
    np.testing.assert_allclose(
        circulant(sample_normalizer_filter(z, variance=4.0)), (vectors * eigenvalues**-0.5) @ vectors.T, atol=1e-8
    )
    v_hat = np.fft.fft(normalizer_filter(a, n)).real
    errors = []
    for m in (10, 10_000):
        z = np.stack([circular_convolve(a, x) for x in rng.standard_normal((m, n))])
        errors.append(np.abs(np.fft.fft(sample_normalizer_filter(z)) - v_hat).max() / v_hat.max())
    assert errors[1] < 0.1 < errors[0] or errors[1] < errors[0] / 5


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: normalizer_filter(np.ones(5), 4), "larger than the signal"),
        (lambda: normalizer_filter(np.ones((2, 2, 2)), 4), "kernels must have shape"),
        (lambda: normalizer_filter([1.0, np.nan], 4), "kernels contains non-finite"),
        (lambda: normalizer_filter([1.0, 2.0], 4, eps=-1.0), "eps must be"),
        (lambda: normalizer_filter([1.0, 2.0], -4), "n must be a positive integer"),
        (lambda: allpass_filter(np.ones((2, 2)), 4), "a must have shape"),
        (lambda: preconditioner_dense([np.inf], 4), "a contains non-finite"),
        (lambda: sample_normalizer_filter(np.ones(4)), "outputs must have shape"),
        (lambda: sample_normalizer_filter(np.ones((3, 4)), variance=0.0), "variance must be"),
    ],
)
def test_bad_input_raises(call, message):
    with pytest.raises(ValueError, match=message):
        call()
