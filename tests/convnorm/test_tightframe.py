"""Identities of the multichannel tight-frame normalisation (convnorm.tightframe) and its input
checks; the 1D condition numbers and spectral norm of convnorm.spectral against its dense matrices."""
import numpy as np
import pytest
import torch

from convnorm.circulant import circulant
from convnorm.spectral import channel_condition_numbers, layer_spectral_norm
from convnorm.tightframe import (
    channel_matrix,
    channel_preconditioner_dense,
    channel_singular_values,
    layer_matrix,
    normalized_weight,
    normalizer_filters,
    stacked_norm_bound,
)

SHAPES = [(1, 1, 1, 4), (2, 3, 3, 7), (3, 2, 4, 8), (4, 4, 2, 9)]  # (C_O, C_I, k, n)


@pytest.mark.parametrize("c_o,c_i,k,n", SHAPES)
def test_channel_matrix_applies_multichannel_convolution(rng, c_o, c_i, k, n):
    w, x = rng.standard_normal((c_o, c_i, k)), rng.standard_normal((c_i, n))
    a = layer_matrix(w, n)
    assert a.shape == (c_o * n, c_i * n)
    expected = [sum(circulant(w[o, i], n) @ x[i] for i in range(c_i)) for o in range(c_o)]
    np.testing.assert_allclose(a @ x.ravel(), np.concatenate(expected), atol=1e-10)
    np.testing.assert_allclose(a[:n], channel_matrix(w[0], n))


@pytest.mark.parametrize("c_o,c_i,k,n", SHAPES)
def test_preconditioner_is_circulant_and_normalizes_to_tight_frame(rng, c_o, c_i, k, n):
    w = rng.standard_normal((c_o, c_i, k))
    v = normalizer_filters(w, n)
    s = (np.abs(np.fft.fft(w, n=n, axis=-1)) ** 2).sum(axis=1)
    np.testing.assert_allclose(np.fft.fft(v, axis=-1), s**-0.5, rtol=1e-8, atol=1e-10)
    q_kernels = normalized_weight(w, n)
    for o in range(c_o):
        p = channel_preconditioner_dense(w[o], n)
        np.testing.assert_allclose(circulant(v[o]), p, atol=1e-8)
        q = channel_matrix(q_kernels[o], n)
        np.testing.assert_allclose(q, p @ channel_matrix(w[o], n), atol=1e-8)
        np.testing.assert_allclose(q @ q.T, np.eye(n), atol=1e-8)
        np.testing.assert_allclose(np.linalg.svd(q, compute_uv=False), 1.0, atol=1e-8)


@pytest.mark.parametrize("c_o,c_i,k,n", SHAPES)
def test_singular_values_and_spectral_norm_by_fft(rng, c_o, c_i, k, n):
    w = rng.standard_normal((c_o, c_i, k))
    np.testing.assert_allclose(
        channel_singular_values(w[0], n), np.linalg.svd(channel_matrix(w[0], n), compute_uv=False), atol=1e-8
    )
    assert np.isclose(layer_spectral_norm(torch.from_numpy(w), n), np.linalg.norm(layer_matrix(w, n), 2))


@pytest.mark.parametrize("c_o,c_i,k,n", SHAPES)
def test_proposition_3_1(rng, c_o, c_i, k, n):
    w = rng.standard_normal((c_o, c_i, k))
    for weight in (w, normalized_weight(w, n)):
        blocks = [channel_matrix(w_k, n) for w_k in weight]
        assert np.linalg.norm(np.vstack(blocks), 2) <= stacked_norm_bound(blocks) + 1e-10
    blocks = [channel_matrix(q, n) for q in normalized_weight(w, n)]
    assert np.isclose(stacked_norm_bound(blocks), np.sqrt(c_o))


def test_proposition_3_1_tight_and_loose(rng):
    n, c = 8, 4
    same = normalized_weight(np.repeat(rng.standard_normal((1, c, 3)), c, axis=0), n)
    tight = [channel_matrix(q, n) for q in same]
    assert np.isclose(np.linalg.norm(np.vstack(tight), 2), stacked_norm_bound(tight))
    diagonal = np.zeros((c, c, 3))
    diagonal[np.arange(c), np.arange(c)] = rng.standard_normal((c, 3))
    loose = [channel_matrix(q, n) for q in normalized_weight(diagonal, n)]
    assert np.isclose(np.linalg.norm(np.vstack(loose), 2), 1.0)
    assert np.isclose(stacked_norm_bound(loose), np.sqrt(c))


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: layer_matrix(np.ones((2, 2)), 4), "weight must have shape"),
        (lambda: normalized_weight(np.ones((1, 1, 5)), 4), "larger than the signal"),
        (lambda: normalizer_filters(np.full((1, 1, 2), np.nan), 4), "weight contains non-finite"),
        (lambda: channel_matrix(np.ones(3), 4), "kernels must have shape"),
        (lambda: channel_singular_values(np.ones((2, 6)), 4), "larger than the signal"),
        (lambda: normalized_weight(np.ones((1, 1, 2)), 0), "n must be a positive integer"),
        (lambda: stacked_norm_bound([]), "at least one matrix"),
        (lambda: stacked_norm_bound([np.ones((2, 3)), np.ones((2, 4))]), "same number of columns"),
        (lambda: stacked_norm_bound([np.ones((2, 3)), np.full((2, 3), np.inf)]), r"blocks\[1\] contains non-finite"),
    ],
)
def test_bad_input_raises(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("c_o, c_i, k, n", SHAPES)
def test_channel_condition_numbers_are_those_of_the_channel_matrices(rng, c_o, c_i, k, n):
    w = rng.standard_normal((c_o, c_i, k))
    dense = [np.linalg.cond(channel_matrix(w_k, n)) for w_k in w]  # sigma_max / sigma_min of (n, C_I n)
    np.testing.assert_allclose(channel_condition_numbers(torch.from_numpy(w), n), dense, rtol=1e-8)
    normalized = torch.from_numpy(normalized_weight(w, n))
    np.testing.assert_allclose(channel_condition_numbers(normalized, n), 1, atol=1e-8)
