r"""The book code of Chapter 0 (``book/part1/00-why-normalize.ipynb``): the deep stack's two
panels (:func:`plot_stack`) and table (:func:`stack_table`), on the experiment of
:mod:`convnorm_book.deep_stack`, and the number of iterations gradient descent needs on a least-squares problem.

For :math:`f(x) = \tfrac12\|B x - y\|^2` with step :math:`1/\sigma_{\max}(B)^2`, the error
:math:`e_t = x_t - x^\star` evolves as :math:`e_{t+1} = (I - B^\top B/\sigma_{\max}^2)\, e_t`,
so every component along a right singular vector shrinks by :math:`1 - \sigma_i^2/\sigma_{\max}^2
\le 1 - 1/\kappa^2` per step, :math:`\kappa = \sigma_{\max}/\sigma_{\min}`. Hence
:math:`\|e_t\| \le (1 - 1/\kappa^2)^t \|e_0\|`, and reaching a relative error ``tol`` takes at
most :func:`predicted_iterations` steps. The chapter counts them with gradient descent written out in a cell,
where it is the point.
"""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np

from convnorm_book.deep_stack import (
    compare_stacks,
    draw_energies,
    legend_handles,
    power_spectrum,
    propagate,
    random_kernels,
    run_style,
    stack_table,
)
from convnorm_book.phone_and_desktop import phone_and_desktop
from convnorm_book.results.tables import Table

__all__ = ["compare_stacks", "phone_and_desktop", "plot_stack", "power_spectrum", "predicted_iterations",
           "propagate", "random_kernels", "stack_table", "Table"]


def plot_stack(runs: dict[str, tuple[np.ndarray, np.ndarray]], title: str, stacked: bool = False) -> plt.Figure:
    """Energy against depth (left) and output power spectrum (right) for ``runs``,
    ``{label: (energies, spectrum)}`` (:func:`~convnorm_book.deep_stack.compare_stacks`); one colour per
    scale, ConvNorm solid and plain dashed, one legend for both panels below them (off the curves). With
    ``stacked``, the spectrum under the energy, for a phone's width."""
    fig, (ax_energy, ax_spectrum) = plt.subplots(*((2, 1) if stacked else (1, 2)),
                                                 figsize=(5, 7) if stacked else (10, 3.8))
    draw_energies(ax_energy, runs)
    for label, (_, spectrum) in runs.items():
        ax_spectrum.semilogy(spectrum, **run_style(runs, label))
    ax_energy.set(title=title)
    ax_spectrum.set(xlabel=r"frequency $\omega$", ylabel=r"output power $|\hat x(\omega)|^2$", title=title)
    handles = legend_handles(runs)
    fig.legend(handles=handles, fontsize=8, loc="lower center", ncol=3 if stacked else len(handles), frameon=False)
    fig.tight_layout(rect=(0, 0.07 if stacked else 0.1, 1, 1))  # room for the legend; no label overlaps a panel
    return fig


def predicted_iterations(kappa: float, tol: float) -> int:
    r"""The bound :math:`\lceil \ln(\text{tol}) / \ln(1 - 1/\kappa^2) \rceil` (1 when :math:`\kappa = 1`)."""
    if not kappa >= 1:
        raise ValueError(f"kappa must be at least 1, got {kappa!r}")
    if not 0 < tol < 1:
        raise ValueError(f"tol must be in (0, 1), got {tol!r}")
    rate = 1 - 1 / kappa**2
    return 1 if rate <= 1e-12 else math.ceil(math.log(tol) / math.log(rate))
