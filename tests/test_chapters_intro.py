"""convnorm_book.chapters.intro: the opening picture of a deep stack, and the spectrum explorer's numbers."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from convnorm_book.chapters.intro import (
    compare_stacks,
    kernel_spectrum_explorer,
    kernel_spectrum_view,
    plot_stack_energy,
)


@pytest.mark.parametrize("stacked", [False, True])
def test_the_opening_picture_shows_every_run_with_its_legend_beside_or_under_the_plot(stacked):
    signals = torch.randn(4, 1, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    runs = compare_stacks(signals, depth=4, taps=3, scales=(0.5, 2.0), seed=5)
    fig = plot_stack_energy(runs, stacked=stacked)
    (ax,) = fig.axes
    assert [line.get_label() for line in ax.get_lines()] == list(runs)
    assert all(np.allclose(line.get_ydata(), runs[line.get_label()][0]) for line in ax.get_lines())
    anchor = ax.get_legend().get_bbox_to_anchor().transformed(ax.transAxes.inverted())
    assert anchor.y0 < 0 if stacked else anchor.x0 > 1  # under the plot on a phone, beside it on a desktop
    plt.close(fig)


@pytest.mark.parametrize("m, n", [(3, 64), (4, 33), (2, 7)])
def test_the_view_is_the_kernels_spectrum_before_and_a_flat_one_after(rng, m, n):
    a = rng.standard_normal(m)
    before, after = kernel_spectrum_view(a, n)
    np.testing.assert_allclose(before, np.abs(np.fft.rfft(a, n)))
    np.testing.assert_allclose(after, 1)


@pytest.mark.parametrize("call, message", [
    (lambda: kernel_spectrum_view([1.0, 2.0, 3.0], 2), "larger than the signal size"),
    (lambda: kernel_spectrum_view([[1.0]], 4), "non-empty 1D"),
    (lambda: kernel_spectrum_view([1.0, np.nan], 8), "kernel"),
    (lambda: kernel_spectrum_explorer(kernel=(1, 2)), "kernel"),
])
def test_bad_settings_are_refused_by_name(call, message):
    with pytest.raises(ValueError, match=message):
        call()
