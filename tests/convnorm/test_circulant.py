"""Identities of convnorm.circulant on random inputs, odd and even sizes, and its input checks."""
import numpy as np
import pytest

from convnorm.circulant import (
    circulant,
    circulant_singular_values,
    circular_convolve,
    cross_correlate,
    cyclic_reverse,
    dft_matrix,
    inverse_sqrt_psd,
    zero_pad,
)

SIZES = [(1, 1), (2, 5), (3, 8), (4, 9), (7, 16)]  # (kernel length k, signal length n)


@pytest.mark.parametrize("k,n", SIZES)
def test_circulant_columns_are_cyclic_shifts(rng, k, n):
    a = rng.standard_normal(k)
    c = circulant(a, n)
    for j in range(n):
        np.testing.assert_array_equal(c[:, j], np.roll(zero_pad(a, n), j))


@pytest.mark.parametrize("k,n", SIZES)
def test_convolution_matches_definition_and_matrix(rng, k, n):
    a, x = rng.standard_normal(k), rng.standard_normal(n)
    direct = [sum(a[j] * x[(i - j) % n] for j in range(k)) for i in range(n)]
    np.testing.assert_allclose(circular_convolve(a, x), direct, atol=1e-12)
    np.testing.assert_allclose(circulant(a, n) @ x, direct, atol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 7, 8, 15])
def test_convolution_commutes(rng, n):
    u, v = rng.standard_normal(n), rng.standard_normal(n)
    np.testing.assert_allclose(circular_convolve(u, v), circular_convolve(v, u), atol=1e-12)
    np.testing.assert_allclose(circulant(u) @ v, circulant(v) @ u, atol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 7, 8, 15])
def test_dft_matrix_convention(rng, n):
    f = dft_matrix(n)
    x = rng.standard_normal(n)
    np.testing.assert_allclose(f @ x, np.fft.fft(x), atol=1e-10)
    np.testing.assert_allclose(np.linalg.inv(f), f.conj().T / n, atol=1e-10)
    assert np.isclose(np.linalg.norm(f, 2), np.sqrt(n))


@pytest.mark.parametrize("k,n", SIZES)
def test_diagonalisation(rng, k, n):
    a = rng.standard_normal(k)
    f = dft_matrix(n)
    a_hat = f @ zero_pad(a, n)
    np.testing.assert_allclose(circulant(a, n), (f.conj().T / n) @ np.diag(a_hat) @ f, atol=1e-10)


@pytest.mark.parametrize("k,n", SIZES)
def test_cross_correlation_is_convolution_with_reversed_kernel(rng, k, n):
    a, x = rng.standard_normal(k), rng.standard_normal(n)
    direct = [sum(a[j] * x[(i + j) % n] for j in range(k)) for i in range(n)]
    np.testing.assert_allclose(cross_correlate(a, x), direct, atol=1e-12)
    np.testing.assert_allclose(cross_correlate(a, x), circulant(a, n).T @ x, atol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 7, 8])
def test_cyclic_reverse(rng, n):
    v = rng.standard_normal(n)
    r = cyclic_reverse(v)
    np.testing.assert_array_equal(r, [v[-i % n] for i in range(n)])
    np.testing.assert_array_equal(cyclic_reverse(r), v)
    np.testing.assert_allclose(np.fft.fft(r), np.conj(np.fft.fft(v)), atol=1e-10)
    np.testing.assert_allclose(circulant(r), circulant(v).T)


@pytest.mark.parametrize("k,n", SIZES)
def test_singular_values_are_spectrum_moduli(rng, k, n):
    a = rng.standard_normal(k)
    np.testing.assert_allclose(
        circulant_singular_values(a, n), np.linalg.svd(circulant(a, n), compute_uv=False), atol=1e-10
    )


@pytest.mark.parametrize("n", [1, 4, 9])
def test_inverse_sqrt_psd(rng, n):
    b = rng.standard_normal((n, n))
    m = b @ b.T + 0.1 * np.eye(n)
    root = inverse_sqrt_psd(m)
    np.testing.assert_allclose(root @ m @ root, np.eye(n), atol=1e-8)
    np.testing.assert_allclose(root, root.T, atol=1e-10)
    shifted = inverse_sqrt_psd(m, eps=0.5)
    np.testing.assert_allclose(shifted @ (m + 0.5 * np.eye(n)) @ shifted, np.eye(n), atol=1e-8)


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: circulant(np.ones(5), 3), "larger than the signal"),
        (lambda: circulant(np.ones((2, 2))), "a must have shape"),
        (lambda: circulant([], 3), "a must not be empty"),
        (lambda: circulant([1.0, np.nan], 3), "a contains non-finite"),
        (lambda: circulant([1.0, 2.0], 0), "n must be a positive integer"),
        (lambda: circulant([1j, 2.0], 3), "a must be real"),
        (lambda: dft_matrix(2.5), "n must be a positive integer"),
        (lambda: circular_convolve(np.ones(4), np.ones(3)), "larger than the signal"),
        (lambda: circular_convolve(np.ones(2), [1.0, np.inf]), "x contains non-finite"),
        (lambda: cross_correlate(np.ones(2), np.ones((3, 3))), "x must have shape"),
        (lambda: cyclic_reverse(np.ones((2, 2))), "v must have shape"),
        (lambda: inverse_sqrt_psd(np.ones((2, 3))), "matrix must be square"),
        (lambda: inverse_sqrt_psd([[1.0, 2.0], [0.0, 1.0]]), "matrix must be symmetric"),
        (lambda: inverse_sqrt_psd(np.ones((2, 2))), "singular"),
        (lambda: inverse_sqrt_psd(np.eye(2), eps=-1.0), "eps must be"),
    ],
)
def test_bad_input_raises(call, message):
    with pytest.raises(ValueError, match=message):
        call()
