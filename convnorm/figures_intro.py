"""The intro page's first picture: a 1D kernel's magnitude spectrum before and after
ConvNorm.

For a single-channel kernel :math:`a \\in \\mathbb{R}^k` acting on signals of length
:math:`n`, ConvNorm replaces :math:`a` by the all-pass filter :math:`g` with
:math:`\\hat g = \\hat a \\odot \\hat v`, :math:`\\hat v = |\\hat a|^{-1}` (the
normalizer of :mod:`convnorm.fourier` with one input channel), so :math:`|\\hat g| = 1`
at every frequency while the phase of :math:`\\hat a` is kept.
"""
from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from ._validation import check_finite, check_kernel_fits
from .fourier import normalizer_spectrum


def normalized_kernel_spectrum(kernel: Sequence[float], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Return :math:`(|\\hat a|, |\\hat a \\odot \\hat v|)` on the ``n // 2 + 1`` rfft frequencies."""
    a = torch.as_tensor(np.asarray(kernel, dtype=np.float64))
    if a.ndim != 1 or a.numel() == 0:
        raise ValueError(f"kernel must be a non-empty 1D sequence, got shape {tuple(a.shape)}")
    check_finite("kernel", a)
    check_kernel_fits(a.shape, (n,))
    a_hat = torch.fft.rfft(a, n=n)
    v_hat = normalizer_spectrum(a.reshape(1, 1, -1), n)[0]
    return a_hat.abs().numpy(), (a_hat * v_hat).abs().numpy()


def plot_normalized_spectrum(a0: float = 1.0, a1: float = 0.5, a2: float = 0.25, n: int = 64) -> None:
    """Plot the spectrum of the kernel ``[a0, a1, a2]`` before and after normalization."""
    before, after = normalized_kernel_spectrum([a0, a1, a2], n)
    freq = np.arange(before.size) / n
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.plot(freq, before, label=r"kernel $|\hat a(\omega)|$", lw=2)
    ax.plot(freq, after, label=r"after ConvNorm $|\hat a(\omega)\,\hat v(\omega)|$", lw=2, ls="--")
    ax.set_xlabel("frequency (cycles per sample)")
    ax.set_ylabel("magnitude")
    ax.set_ylim(0, max(1.2, 1.1 * float(np.nanmax(before))))
    ax.set_title(f"kernel [{a0:.2f}, {a1:.2f}, {a2:.2f}], signal length n = {n}")
    ax.legend(loc="upper right")
    fig.tight_layout()
    plt.show()
