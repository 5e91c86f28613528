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
def test_the_opening_picture_has_its_legend_beside_the_curves_or_under_them_on_a_phone(stacked):
    runs = compare_stacks(torch.ones(1, 1, 8, dtype=torch.float64), depth=2, taps=3, scales=(0.5, 2.0))
    fig = plot_stack_energy(runs, stacked=stacked)
    (ax,) = fig.axes
    assert len(ax.get_lines()) == len(runs)  # the energies of every run (drawn by deep_stack.draw_energies)
    anchor = ax.get_legend().get_bbox_to_anchor().transformed(ax.transAxes.inverted())
    assert anchor.y0 < 0 if stacked else anchor.x0 > 1
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
