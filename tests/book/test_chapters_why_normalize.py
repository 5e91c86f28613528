"""convnorm_book.chapters.why_normalize: the deep stack's two panels, and iteration counts of gradient
descent on least squares."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from convnorm_book.chapters.why_normalize import (
    compare_stacks,
    gradient_descent_iterations,
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


@pytest.mark.parametrize("kappa", [2.0, 5.0, 20.0])
def test_diagonal_problem_needs_the_predicted_iterations(kappa):
    # singular values 1 and 1/kappa: the fast error component vanishes in one step, the slow one,
    # 1/sqrt(2) of the starting error, shrinks by 1 - 1/kappa^2 per step
    b, x_true, tol = np.diag([1.0, 1 / kappa]), np.array([1.0, 1.0]), 1e-4
    iterations = gradient_descent_iterations(b, x_true, tol)
    assert iterations == np.ceil(np.log(tol * np.sqrt(2)) / np.log(1 - 1 / kappa**2))
    assert iterations <= predicted_iterations(kappa, tol)


def test_orthogonal_matrix_takes_one_step(rng):
    q, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    assert gradient_descent_iterations(q, rng.standard_normal(6)) == 1


def test_errors():
    with pytest.raises(ValueError, match="kappa"):
        predicted_iterations(0.5, 1e-3)
    with pytest.raises(ValueError, match="tol"):
        predicted_iterations(2.0, 1.5)
    with pytest.raises(ValueError, match="x_true"):
        gradient_descent_iterations(np.eye(3), np.ones(2))
    with pytest.raises(RuntimeError, match="no convergence"):
        gradient_descent_iterations(np.diag([1.0, 1e-3]), np.ones(2), max_iterations=5)
