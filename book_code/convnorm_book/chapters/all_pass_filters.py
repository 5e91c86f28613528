r"""The book code of Chapter 2 (``book/part1/02-all-pass-filters.ipynb``): a kernel :math:`a`,
its normalizer :math:`v` and its all-pass filter :math:`g`, as numbers (:func:`allpass_view`), as
a figure of six panels (:func:`plot_kernel_explorer`) and as the chapter's explorer
(:func:`allpass_explorer`, which recomputes :func:`allpass_view` in the reader's browser).
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch

from convnorm.allpass import allpass_filter, normalizer_filter
from convnorm.circulant import ArrayLike, as_real_array, zero_pad
from convnorm.fourier import normalizer_spectrum
from convnorm.validation import check_positive_int
from convnorm_book.explorers.page import Explorer
from convnorm_book.explorers.shared import EPS_DECADES, condition_number
from convnorm_book.phone_and_desktop import phone_and_desktop
from convnorm_book.results.tables import Table

__all__ = ["allpass_explorer", "KERNEL_PRESETS", "phone_and_desktop", "plot_kernel_explorer", "Table"]


#: Kernels for the chapter's explorer (``"random"`` is drawn with a fixed seed).
KERNEL_PRESETS: dict[str, np.ndarray] = {
    "box blur": np.full(3, 1 / 3),
    "edge detector": np.array([1.0, -1.0]),
    "random": np.random.default_rng(0).standard_normal(5),
}


def allpass_view(a: ArrayLike, n: int, eps: float = 0.0) -> dict[str, np.ndarray | float]:
    r"""Chapter 2's quantities for a kernel :math:`a` at signal length :math:`n`.

    ``v`` and ``g`` are :func:`~convnorm.allpass.normalizer_filter` and
    :func:`~convnorm.allpass.allpass_filter` (regulariser ``eps``); on the ``n // 2 + 1`` rfft
    frequencies, ``a_hat`` is :math:`\hat a`, ``v_hat`` is
    :math:`\hat v = (|\hat a|^2 + \varepsilon)^{-1/2}` (:func:`~convnorm.fourier.normalizer_spectrum`)
    and ``g_hat`` is :math:`\hat g = \hat a \odot \hat v`. ``kappa_a`` is
    :math:`\kappa(C_a) = \max|\hat a| / \min|\hat a|` and ``kappa_q`` is
    :math:`\kappa(Q(a)) = \kappa(C_g) = \max|\hat g| / \min|\hat g|` (the extremes of the full
    spectrum are those of the rfft half, because :math:`|\hat a_{-\omega}| = |\hat a_\omega|`).

    Raises:
        ValueError: as :func:`~convnorm.allpass.normalizer_filter`, in particular for
            ``eps = 0`` and a spectrum that vanishes at some frequency.
    """
    kernel = as_real_array("a", a, 1, "(k,)")
    v, g = normalizer_filter(kernel, n, eps), allpass_filter(kernel, n, eps)
    a_pad = zero_pad(kernel, n)
    a_hat = np.fft.rfft(a_pad)
    v_hat = normalizer_spectrum(torch.from_numpy(kernel).view(1, 1, -1), n, eps=eps)[0].numpy()
    g_hat = a_hat * v_hat
    return {"a": a_pad, "v": v, "g": g, "a_hat": a_hat, "v_hat": v_hat, "g_hat": g_hat,
            "kappa_a": condition_number(np.abs(a_hat)), "kappa_q": condition_number(np.abs(g_hat))}


def plot_kernel_explorer(a: ArrayLike, n: int = 32, eps: float = 1e-6, stacked: bool = False) -> plt.Figure:
    r"""Six panels for a kernel :math:`a`: :math:`|\hat a|` and :math:`|\hat g|`, their phases, :math:`\hat v`,
    and the impulse responses of :math:`a`, :math:`v` and :math:`g`; the title gives
    :math:`\kappa(C_a)` and :math:`\kappa(Q(a)) = \kappa(C_g)`. Two rows of three panels, or with
    ``stacked`` one panel under the other, for a phone's width.

    The numbers are :func:`allpass_view`'s (regulariser ``eps``).
    """
    view = allpass_view(a, n, eps)
    omega = np.arange(view["a_hat"].size)
    if stacked:
        fig, axes = plt.subplots(6, 1, figsize=(4.4, 13.5))
        spectra, responses = axes[:3], axes[3:]
    else:
        fig, axes = plt.subplots(2, 3, figsize=(11, 5.5))
        spectra, responses = axes[0], axes[1]
    spectra[0].plot(omega, np.abs(view["a_hat"]), "o-", label=r"$|\hat a|$")
    spectra[0].plot(omega, np.abs(view["g_hat"]), "s--", label=r"$|\hat g|$")
    spectra[0].set(xlabel=r"frequency $\omega$", ylabel="magnitude", title="magnitude spectra")
    spectra[1].plot(omega, np.angle(view["a_hat"]), "o-", label=r"$\angle\hat a$")
    spectra[1].plot(omega, np.angle(view["g_hat"]), "s--", label=r"$\angle\hat g$")
    spectra[1].set(xlabel=r"frequency $\omega$", ylabel="phase (radians)", title="phases")
    spectra[2].semilogy(omega, view["v_hat"], "o-", color="C2", label=r"$\hat v$")
    spectra[2].set(xlabel=r"frequency $\omega$", ylabel="gain", title=r"normalizer $\hat v$")
    for ax, name, title in zip(responses, "avg", ("kernel $a$", "normalizer $v$", "all-pass $g$")):
        ax.stem(np.arange(n), view[name], basefmt=" ")
        ax.set(xlabel="tap index $j$", ylabel="value", title=title)
    for ax in spectra:
        ax.legend()
    eps_text = f"{eps:.0e}" if eps else "0"
    separator = "\n" if stacked else "   "
    fig.suptitle(rf"$n={n}$, $\varepsilon={eps_text}$:{separator}$\kappa(C_a) = {view['kappa_a']:.3g}$,   "
                 rf"$\kappa(Q(a)) = {view['kappa_q']:.3g}$")
    fig.tight_layout()
    return fig


def allpass_explorer(n: int = 32, taps: int = 5, preset: str = "box blur", eps: float = 0.0) -> Explorer:
    """Chapter 2's explorer: a preset or ``taps`` sliders and ε against :math:`|\\hat a|`,
    :math:`|\\hat g|`, the phases, :math:`\\hat v`, the impulse responses of :math:`a, v, g` and
    both condition numbers (:func:`allpass_view`), at signal length ``n``."""
    n, taps = check_positive_int("n", n), check_positive_int("taps", taps)
    if preset not in KERNEL_PRESETS:
        raise ValueError(f"preset must be one of {sorted(KERNEL_PRESETS)}, got {preset!r}")
    eps_values = [0.0, *EPS_DECADES]
    if eps not in eps_values:
        raise ValueError(f"eps must be one of {eps_values}, got {eps!r}")
    presets = {name: [float(t) for t in kernel] for name, kernel in KERNEL_PRESETS.items()}
    if max(len(kernel) for kernel in presets.values()) > min(taps, n):
        raise ValueError(f"taps and n must be at least the longest preset's length, got taps={taps}, n={n}")
    return Explorer("allpass", "allpass.js", "A kernel, its normalizer and its all-pass filter",
                    {"n": n, "taps": taps, "presets": presets, "preset": preset, "eps": eps,
                     "eps_values": eps_values})
