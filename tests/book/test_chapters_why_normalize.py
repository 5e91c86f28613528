"""convnorm_book.chapters.why_normalize: the deep stack's two panels, and the bound on the iterations of
gradient descent on least squares (the chapter counts the iterations themselves in a cell, and checks them
against the bound)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from convnorm_book.chapters.why_normalize import (
    compare_stacks,
    plot_stack,
    predicted_iterations,
)


@pytest.mark.parametrize("stacked", [False, True])
def test_the_second_panel_is_each_runs_output_spectrum_under_the_energies_on_a_phone(stacked):
    x = torch.randn(4, 2, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    runs = compare_stacks(x, depth=4, taps=3, scales=(0.5, 2.0), seed=5)
    fig = plot_stack(runs, "two channels", stacked=stacked)
    energy, spectrum = fig.axes
    assert all(np.allclose(line.get_ydata(), power) for (_, power), line in zip(runs.values(), spectrum.get_lines()))
    assert len(energy.get_lines()) == len(runs)  # the energies (drawn by deep_stack.draw_energies)
    assert (spectrum.get_position().y1 < energy.get_position().y0) == stacked
    plt.close(fig)


def test_prediction_is_the_rate_bound():
    assert predicted_iterations(1.0, 1e-6) == 1
    kappa, tol = 10.0, 1e-3
    t = predicted_iterations(kappa, tol)
    assert (1 - 1 / kappa**2) ** t <= tol < (1 - 1 / kappa**2) ** (t - 1)


def test_errors():
    with pytest.raises(ValueError, match="kappa"):
        predicted_iterations(0.5, 1e-3)
    with pytest.raises(ValueError, match="tol"):
        predicted_iterations(2.0, 1.5)
