r"""The book code of the intro (``book/intro.ipynb``): the opening picture of a deep stack
(:func:`plot_stack_energy`, on :func:`~convnorm_book.deep_stack.compare_stacks`) and the explorer
of a kernel's spectrum before and after ConvNorm (:func:`kernel_spectrum_explorer`, whose
numbers are :func:`kernel_spectrum_view`'s).
"""
from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from convnorm.fourier import normalizer_spectrum
from convnorm.validation import check_finite, check_kernel_fits, check_positive_int
from convnorm_book.deep_stack import compare_stacks, draw_energies, legend_handles, stack_table
from convnorm_book.explorers.page import Explorer
from convnorm_book.phone_and_desktop import phone_and_desktop

__all__ = ["compare_stacks", "kernel_spectrum_explorer", "kernel_spectrum_view", "phone_and_desktop",
           "plot_stack_energy", "stack_table"]


def plot_stack_energy(runs: dict[str, tuple[np.ndarray, np.ndarray]], stacked: bool = False) -> plt.Figure:
    """The energy of ``runs`` (:func:`~convnorm_book.deep_stack.compare_stacks`) against depth, with the
    legend (a colour per scale, a line style per method) beside the plot (the book's opening picture); with
    ``stacked``, narrower, the legend under the plot."""
    fig, ax = plt.subplots(figsize=(5, 4.6) if stacked else (7.5, 3.2))
    draw_energies(ax, runs)
    handles = legend_handles(runs)  # one entry per scale and one per method, not one per curve
    if stacked:
        ax.legend(handles=handles, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=3)
    else:
        ax.legend(handles=handles, fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.tight_layout()
    return fig


def kernel_spectrum_view(kernel: Sequence[float], n: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Return :math:`(|\hat a|, |\hat a \odot \hat v|)` on the ``n // 2 + 1`` rfft frequencies.

    For a single-channel kernel :math:`a \in \mathbb{R}^m` on signals of length :math:`n`,
    ConvNorm replaces :math:`a` by the all-pass filter :math:`g` with
    :math:`\hat g = \hat a \odot \hat v`, :math:`\hat v = |\hat a|^{-1}` (the normalizer of
    :mod:`convnorm.fourier` with one input channel, :math:`\varepsilon = 0`), so
    :math:`|\hat g| = 1` at every frequency while the phase of :math:`\hat a` is kept. The explorer
    (``explorers/js/kernel_spectrum.js``) computes the same numbers in the reader's browser.
    """
    a = torch.as_tensor(np.asarray(kernel, dtype=np.float64))
    if a.ndim != 1 or a.numel() == 0:
        raise ValueError(f"kernel must be a non-empty 1D sequence, got shape {tuple(a.shape)}")
    check_finite("kernel", a)
    check_kernel_fits(a.shape, (n,))
    a_hat = torch.fft.rfft(a, n=n)
    v_hat = normalizer_spectrum(a.reshape(1, 1, -1), n)[0]
    return a_hat.abs().numpy(), (a_hat * v_hat).abs().numpy()


def kernel_spectrum_explorer(kernel=(1.0, 0.5, 0.25), n: int = 64) -> Explorer:
    """The intro's explorer: three taps and the signal length ``n`` (8 to 256) against the
    spectrum before and after normalization (:func:`kernel_spectrum_view`)."""
    taps = [float(t) for t in kernel]
    if len(taps) != 3:
        raise ValueError(f"kernel must have 3 taps, got {len(taps)}")
    n = check_positive_int("n", n)
    return Explorer("kernelSpectrum", "kernel_spectrum.js", "A kernel's spectrum before and after ConvNorm",
                    {"kernel": taps, "n": n})
