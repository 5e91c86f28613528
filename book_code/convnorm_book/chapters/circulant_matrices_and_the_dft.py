r"""The book code of Chapter 1 (``book/part1/01-circulant-matrices-and-the-dft.ipynb``): a
circulant matrix, its Fourier eigenvectors, a kernel's spectrum, and the timing of dense matrix
algebra against the FFT.

Each ``plot_*`` function returns a :class:`matplotlib.figure.Figure` whose drawn data are
the quantities the chapter defines (:func:`convnorm.circulant.circulant`,
:func:`convnorm.circulant.dft_matrix`, ``numpy.fft.fft``), so a test can read them back;
:func:`measure_fft_speedup` times the package's dense and FFT computations when called.
"""
from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np

from convnorm.allpass import normalizer_filter, preconditioner_dense
from convnorm.circulant import ArrayLike, as_real_array, circulant, circular_convolve, dft_matrix, zero_pad
from convnorm.validation import check_positive_int
from convnorm_book.layer_benchmark import best_time
from convnorm_book.phone_and_desktop import phone_and_desktop

__all__ = ["measure_fft_speedup", "phone_and_desktop", "plot_circulant", "plot_fft_speedup",
           "plot_fourier_eigenvectors", "plot_kernel_spectrum"]


def plot_circulant(a: ArrayLike, n: int) -> plt.Figure:
    r"""Heatmap of :math:`C_a` (entry :math:`(i, j)` is :math:`a_{(i - j) \bmod n}`), values written in the cells."""
    matrix = circulant(a, n)
    fig, ax = plt.subplots(figsize=(4.6, 4))
    limit = np.abs(matrix).max()
    image = ax.imshow(matrix, cmap="RdBu_r", vmin=-limit, vmax=limit)
    for (i, j), value in np.ndenumerate(matrix):
        if value != 0:
            ax.text(j, i, f"{value:g}", ha="center", va="center", fontsize=7)
    ax.set(xlabel="column $j$", ylabel="row $i$", title=f"$C_a$, $n = {n}$")
    fig.colorbar(image, ax=ax, shrink=0.8)
    return fig


def plot_fourier_eigenvectors(a: ArrayLike, n: int, frequencies: Sequence[int] = (1, 2, 3),
                              stacked: bool = False) -> plt.Figure:
    r"""For each frequency :math:`\omega`, the real parts of the Fourier vector :math:`f_\omega` and of
    :math:`C_a f_\omega = \hat a_\omega f_\omega`: the same wave, scaled by :math:`|\hat a_\omega|` and
    shifted by the phase of :math:`\hat a_\omega`. Side by side, or with ``stacked`` one under another."""
    fourier_vectors = dft_matrix(n).conj().T  # column w is f_w
    a_hat = np.fft.fft(zero_pad(a, n))
    t = np.arange(n)
    count = len(frequencies)
    fig, axes = plt.subplots(*((count, 1) if stacked else (1, count)), sharey=True,
                             figsize=(4.6, 2.5 * count) if stacked else (3.2 * count, 2.8))
    for ax, w in zip(np.atleast_1d(axes), frequencies):
        f_w = fourier_vectors[:, w]
        ax.plot(t, f_w.real, "o-", color="gray", label=r"$\mathrm{Re}\, f_\omega$")
        ax.plot(t, (circulant(a, n) @ f_w).real, "s-", color="C1", label=r"$\mathrm{Re}\, C_a f_\omega$")
        ax.set(xlabel="index $t$", title=rf"$\omega = {w}$: $|\hat a_\omega| = {abs(a_hat[w]):.2f}$")
    np.atleast_1d(axes)[0].legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig


def plot_kernel_spectrum(a: ArrayLike, n: int, stacked: bool = False) -> plt.Figure:
    r"""Left: the taps of :math:`a`. Middle: :math:`|\hat a_\omega|` over the :math:`n` frequencies.
    Right: the same moduli sorted, beside the singular values of :math:`C_a` from an SVD. With
    ``stacked``, the three panels one under another."""
    taps = as_real_array("a", a, 1, "a kernel")
    modulus = np.abs(np.fft.fft(zero_pad(taps, n)))
    singular_values = np.linalg.svd(circulant(taps, n), compute_uv=False)
    fig, (ax0, ax1, ax2) = plt.subplots(*((3, 1) if stacked else (1, 3)), figsize=(4.6, 7.5) if stacked else (10, 2.8))
    ax0.stem(np.arange(len(taps)), taps)
    ax0.set(xlabel="tap $j$", ylabel="$a_j$", title="kernel")
    ax1.plot(np.arange(n), modulus, "o-")
    ax1.set(xlabel=r"frequency $\omega$", ylabel=r"$|\hat a_\omega|$", title="magnitude spectrum", ylim=(0, None))
    ax2.plot(np.sort(modulus)[::-1], "o", label=r"$|\hat a_\omega|$, sorted")
    ax2.plot(singular_values, "x", markersize=9, label=r"singular values of $C_a$")
    ax2.set(xlabel="rank", ylim=(0, None), title="the same numbers")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    return fig


#: the timings' labels as the legend typesets them
LEGEND = {"dense C_a x": r"dense $C_a x$", "FFT a * x": r"FFT $a * x$", "dense P": r"dense $P$",
          "FFT v (P = C_v)": r"FFT $v$ ($P = C_v$)"}


def measure_fft_speedup(
    product_sizes: Sequence[int], inverse_sizes: Sequence[int], kernel_size: int = 3, repeats: int = 3, seed: int = 0
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    r"""Time dense against FFT computations of :math:`C_a x` and of :math:`P = (C_a C_a^\top)^{-1/2}`.

    * ``"dense C_a x"``: the matrix-vector product with a prebuilt :math:`C_a`, :math:`O(n^2)`;
    * ``"FFT a * x"``: :func:`~convnorm.circulant.circular_convolve`, :math:`O(n \log n)`;
    * ``"dense P"``: :func:`~convnorm.allpass.preconditioner_dense`, :math:`O(n^3)`;
    * ``"FFT v (P = C_v)"``: :func:`~convnorm.allpass.normalizer_filter`, :math:`O(n \log n)`.

    Returns:
        ``{label: (sizes, best seconds over repeats)}``.
    """
    repeats = check_positive_int("repeats", repeats)
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(check_positive_int("kernel_size", kernel_size))
    dense_product, fft_product, dense_inverse, fft_inverse = [], [], [], []
    for n in product_sizes:
        x = rng.standard_normal(n)
        c = circulant(a, n)
        dense_product.append(best_time(lambda c=c, x=x: c @ x, repeats))
        fft_product.append(best_time(lambda x=x: circular_convolve(a, x), repeats))
    for n in inverse_sizes:
        dense_inverse.append(best_time(lambda n=n: preconditioner_dense(a, n), repeats))
        fft_inverse.append(best_time(lambda n=n: normalizer_filter(a, n), repeats))
    products, inverses = np.asarray(product_sizes), np.asarray(inverse_sizes)
    return {
        "dense C_a x": (products, np.asarray(dense_product)),
        "FFT a * x": (products, np.asarray(fft_product)),
        "dense P": (inverses, np.asarray(dense_inverse)),
        "FFT v (P = C_v)": (inverses, np.asarray(fft_inverse)),
    }


def plot_fft_speedup(timings: dict[str, tuple[np.ndarray, np.ndarray]]) -> plt.Figure:
    """Log-log plot of :func:`measure_fft_speedup`'s timings, with :math:`n^2` and :math:`n^3` guide lines,
    each labelled at its left end, above the line and clear of the measured points; the legend typesets
    the labels (:data:`LEGEND`)."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    styles = {"dense C_a x": "o-", "FFT a * x": "o--", "dense P": "s-", "FFT v (P = C_v)": "s--"}
    for label, (sizes, seconds) in timings.items():
        ax.loglog(sizes, seconds, styles.get(label, "o-"), label=LEGEND.get(label, label))
    for label, power in (("dense C_a x", 2), ("dense P", 3)):
        sizes, seconds = timings[label]
        guide = seconds[-1] * (sizes / sizes[-1]) ** power
        ax.loglog(sizes, guide, ":", color="gray")
        ax.annotate(f"$\\propto n^{power}$", (sizes[0], guide[0]), xytext=(4, 6), textcoords="offset points",
                    ha="left", va="bottom", color="gray", fontsize=9)
    ax.set_xlabel("signal length $n$")
    ax.set_ylabel("time (seconds, best of repeats)")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig
