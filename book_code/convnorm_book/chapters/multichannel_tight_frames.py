r"""The book code of Chapter 3 (``book/part1/03-multichannel-tight-frames.ipynb``): the singular
values of one output channel :math:`A_k` and of its normalized :math:`Q_k = P_k A_k`, for random
kernels, as numbers (:func:`channel_singular_value_pair`), as a figure
(:func:`plot_channel_singular_values`) and as the chapter's explorer (:func:`singular_value_explorer`,
which recomputes them in the reader's browser).
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from convnorm.tightframe import channel_singular_values, normalized_weight
from convnorm.validation import check_positive_int
from convnorm_book.explorers.page import Explorer, encode_float64
from convnorm_book.explorers.shared import condition_number
from convnorm_book.results.tables import Table

__all__ = ["plot_channel_singular_values", "singular_value_explorer", "Table"]


def random_channel_kernels(c_in: int, m: int, seed: int) -> np.ndarray:
    r"""``c_in`` i.i.d. normal kernels of length ``m`` with variance :math:`1/(C_I m)`, ``(c_in, m)``.

    They are the first ``c_in * m`` draws of ``numpy.random.default_rng(seed).standard_normal``,
    so the explorer draws every setting of :math:`(C_I, m)` from one stored stream per seed.
    """
    c_in, m = check_positive_int("c_in", c_in), check_positive_int("m", m)
    draws = np.random.default_rng(seed).standard_normal(c_in * m)
    return draws.reshape(c_in, m) / np.sqrt(c_in * m)


def channel_singular_value_pair(c_in: int, m: int, n: int = 32, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    r"""Sorted singular values of :math:`A_k` and of :math:`Q_k = P_k A_k` for :func:`random_channel_kernels`.

    Both from :func:`~convnorm.tightframe.channel_singular_values` (:math:`\sqrt{s_k(\omega)}`),
    :math:`Q_k`'s kernels from :func:`~convnorm.tightframe.normalized_weight`.
    """
    kernels = random_channel_kernels(c_in, m, seed)
    sigma_a = channel_singular_values(kernels, n)
    sigma_q = channel_singular_values(normalized_weight(kernels[None], n)[0], n)
    return sigma_a, sigma_q


def plot_channel_singular_values(c_in: int, m: int, n: int = 32, seed: int = 0) -> plt.Figure:
    r"""Sorted singular values of :math:`A_k` and of :math:`Q_k = P_k A_k` for ``c_in`` random kernels of length ``m``.

    The kernels are :func:`random_channel_kernels`, the values
    :func:`channel_singular_value_pair`'s (:math:`\sqrt{s_k(\omega)}`).
    """
    sigma_a, sigma_q = channel_singular_value_pair(c_in, m, n, seed)
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    ax.plot(np.arange(n), sigma_a, "o-", label=rf"$A_k$: $\kappa = {condition_number(sigma_a):.3g}$")
    ax.plot(np.arange(n), sigma_q, "s--", label=rf"$Q_k$: $\kappa = {condition_number(sigma_q):.3g}$")
    ax.set(xlabel="index $i$ (descending order)", ylabel=r"singular value $\sigma_i$")
    ax.set_title(rf"$C_I = {c_in}$ random kernels of length $m = {m}$, $n = {n}$")
    ax.set_ylim(bottom=0)
    ax.legend()
    fig.tight_layout()
    return fig


def singular_value_explorer(n: int = 32, max_channels: int = 8, seeds: int = 21,
                            c_in: int = 1, m: int = 8, seed: int = 0) -> Explorer:
    """Chapter 3's explorer: :math:`C_I`, the kernel length and the seed against the singular
    values of :math:`A_k` and :math:`Q_k` (:func:`channel_singular_value_pair`).

    It carries, per seed, the first ``max_channels * n`` normal draws, from which
    :func:`random_channel_kernels` takes every setting's kernels.
    """
    n, max_channels = check_positive_int("n", n), check_positive_int("max_channels", max_channels)
    seeds = check_positive_int("seeds", seeds)
    if not (1 <= c_in <= max_channels and 1 <= m <= n and 0 <= seed < seeds):
        raise ValueError(f"need 1 <= c_in <= {max_channels}, 1 <= m <= {n}, 0 <= seed < {seeds}; "
                         f"got {c_in}, {m}, {seed}")
    draws = [encode_float64(np.random.default_rng(s).standard_normal(max_channels * n)) for s in range(seeds)]
    return Explorer("channelSingularValues", "channel_singular_values.js", "Singular values of one output channel",
                    {"n": n, "max_c_in": max_channels, "draws": draws, "c_in": c_in, "m": m, "seed": seed})
