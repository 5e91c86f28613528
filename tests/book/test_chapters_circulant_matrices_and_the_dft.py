"""convnorm_book.chapters.circulant_matrices_and_the_dft draws the quantities Chapter 1 defines, side by side
or stacked for a phone."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

from convnorm.circulant import circulant
from convnorm_book.chapters.circulant_matrices_and_the_dft import (
    LEGEND,
    plot_circulant,
    plot_fft_speedup,
    plot_fourier_eigenvectors,
    plot_kernel_spectrum,
)

KERNEL = [1.0, 2.0, 3.0, -1.0]


def test_heatmap_shows_the_circulant_matrix():
    fig = plot_circulant(KERNEL, 9)
    shown = fig.axes[0].images[0].get_array()
    assert np.array_equal(np.asarray(shown), circulant(KERNEL, 9))
    plt.close(fig)


@pytest.mark.parametrize("stacked", [False, True])
@pytest.mark.parametrize("n", [7, 12])
def test_eigenvector_panels_show_a_scaled_shifted_copy(n, stacked):
    frequencies = (1, 2)
    fig = plot_fourier_eigenvectors(KERNEL, n, frequencies, stacked=stacked)
    a_hat = np.fft.fft(KERNEL, n)
    t = np.arange(n)
    for ax, w in zip(fig.axes, frequencies):
        wave, image = (line.get_ydata() for line in ax.get_lines())
        assert np.allclose(wave, np.cos(2 * np.pi * w * t / n))
        assert np.allclose(image, np.abs(a_hat[w]) * np.cos(2 * np.pi * w * t / n + np.angle(a_hat[w])))
    plt.close(fig)


@pytest.mark.parametrize("stacked", [False, True])
def test_spectrum_panels_agree_with_the_svd(stacked):
    fig = plot_kernel_spectrum(KERNEL, 10, stacked=stacked)
    modulus = fig.axes[1].get_lines()[0].get_ydata()
    sorted_modulus, singular_values = (line.get_ydata() for line in fig.axes[2].get_lines())
    assert np.allclose(modulus, np.abs(np.fft.fft(KERNEL, 10)))
    assert np.allclose(sorted_modulus, singular_values)
    plt.close(fig)


def test_bad_kernel_is_refused():
    with pytest.raises(ValueError, match="a"):
        plot_kernel_spectrum(np.ones((2, 2)), 8)


def test_the_timing_plot_typesets_its_legend_and_labels_each_guide_at_its_left_end():
    sizes = np.array([16, 64, 256])
    timings = {label: (sizes, 1e-6 * sizes ** (1 + i % 2)) for i, label in enumerate(LEGEND)}
    fig = plot_fft_speedup(timings)
    ax = fig.axes[0]
    assert [text.get_text() for text in ax.get_legend().get_texts()] == list(LEGEND.values())
    assert all("$" in label for label in LEGEND.values())
    guides = [text for text in ax.texts if "propto" in text.get_text()]
    assert len(guides) == 2 and all(text.xy[0] == sizes[0] for text in guides)
    plt.close(fig)
