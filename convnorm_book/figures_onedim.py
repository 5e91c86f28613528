"""Figures of Part I of the book (one dimension).

* :func:`measure_fft_speedup` / :func:`plot_fft_speedup`: chapter 1's timing of dense
  matrix algebra against the FFT, measured when called.
* :func:`plot_kernel_explorer`: chapter 2's view of a kernel :math:`a`, its normalizer
  :math:`v` and its all-pass filter :math:`g`, in six panels side by side or stacked;
  :func:`phone_and_desktop` shows the first on a desktop and the second on a phone
  (:class:`PhoneAndDesktopFigure`), as it does for every ``plot_*`` function of the book that
  takes ``stacked``.
* :func:`plot_channel_singular_values`: chapter 3's singular values of :math:`A_k` and :math:`Q_k`.

The ``plot_*`` functions return a :class:`matplotlib.figure.Figure`; their numbers come from
:mod:`convnorm_book.explorers.views`, as do those of the chapters' live explorers.
"""
from __future__ import annotations

import base64
import io
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np

from convnorm._validation import check_positive_int
from convnorm.allpass import normalizer_filter, preconditioner_dense
from convnorm.circulant import ArrayLike, circulant, circular_convolve
from convnorm_book.layer_benchmark import best_time

from .explorers.views import allpass_view, channel_singular_value_pair, condition_number

#: Kernels for the chapter 2 explorer (``"random"`` is drawn with a fixed seed).
KERNEL_PRESETS: dict[str, np.ndarray] = {
    "box blur": np.full(3, 1 / 3),
    "edge detector": np.array([1.0, -1.0]),
    "random": np.random.default_rng(0).standard_normal(5),
}


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
    """Log-log plot of :func:`measure_fft_speedup`'s timings, with :math:`n^2` and :math:`n^3` guide lines."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    styles = {"dense C_a x": "o-", "FFT a * x": "o--", "dense P": "s-", "FFT v (P = C_v)": "s--"}
    for label, (sizes, seconds) in timings.items():
        ax.loglog(sizes, seconds, styles.get(label, "o-"), label=label)
    for label, power in (("dense C_a x", 2), ("dense P", 3)):
        sizes, seconds = timings[label]
        guide = seconds[-1] * (sizes / sizes[-1]) ** power
        ax.loglog(sizes, guide, ":", color="gray")
        ax.annotate(f"$\\propto n^{power}$", (sizes[len(sizes) // 2], guide[len(sizes) // 2]), color="gray")
    ax.set_xlabel("signal length $n$")
    ax.set_ylabel("time (seconds, best of repeats)")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig


def plot_kernel_explorer(a: ArrayLike, n: int = 32, eps: float = 1e-6, stacked: bool = False) -> plt.Figure:
    r"""Six panels for a kernel :math:`a`: :math:`|\hat a|` and :math:`|\hat g|`, their phases, :math:`\hat v`,
    and the impulse responses of :math:`a`, :math:`v` and :math:`g`; the title gives
    :math:`\kappa(C_a)` and :math:`\kappa(Q(a)) = \kappa(C_g)`. Two rows of three panels, or with
    ``stacked`` one panel under the other, for a phone's width.

    The numbers are :func:`~convnorm_book.explorers.views.allpass_view`'s (regulariser ``eps``).
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


class PhoneAndDesktopFigure:
    """One figure drawn twice: ``desktop`` (panels side by side) and ``phone`` (the same panels
    stacked, each readable at a phone's width). In a notebook and on the website (HTML) a screen
    narrower than 600 CSS pixels shows ``phone``, any other ``desktop``; elsewhere (a PNG) it is
    ``desktop``. The image's alt text is left empty here: the book's build writes the figure's
    caption into it (``book/_ext/figure_alt_text.py``). Both figures are closed.
    """

    PHONE_WIDTH = 600  # CSS pixels: below it, the phone drawing

    def __init__(self, desktop: plt.Figure, phone: plt.Figure, dpi: int = 100):
        self.desktop, self.phone = (_png(figure, dpi) for figure in (desktop, phone))
        plt.close(desktop)
        plt.close(phone)

    def _repr_png_(self) -> bytes:
        return self.desktop

    def _repr_html_(self) -> str:
        desktop, phone = (base64.b64encode(png).decode("ascii") for png in (self.desktop, self.phone))
        return (f'<picture class="cx-phone-and-desktop"><source media="(max-width: {self.PHONE_WIDTH - 0.02}px)" '
                f'srcset="data:image/png;base64,{phone}"><img src="data:image/png;base64,{desktop}" alt=""></picture>')


def _png(figure: plt.Figure, dpi: int) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


def phone_and_desktop(plot, *args, **kwargs) -> PhoneAndDesktopFigure:
    """``plot(*args, **kwargs)`` on a desktop and ``plot(*args, stacked=True, **kwargs)`` on a phone: any of
    the book's ``plot_*`` functions that take ``stacked`` (its panels one under another, or the figure
    narrower), as one :class:`PhoneAndDesktopFigure`."""
    return PhoneAndDesktopFigure(plot(*args, **kwargs), plot(*args, stacked=True, **kwargs))


def plot_channel_singular_values(c_in: int, m: int, n: int = 32, seed: int = 0) -> plt.Figure:
    r"""Sorted singular values of :math:`A_k` and of :math:`Q_k = P_k A_k` for ``c_in`` random kernels of length ``m``.

    The kernels are :func:`~convnorm_book.explorers.views.random_channel_kernels`, the values
    :func:`~convnorm_book.explorers.views.channel_singular_value_pair`'s (:math:`\sqrt{s_k(\omega)}`).
    """
    sigma_a, sigma_q = channel_singular_value_pair(c_in, m, n, seed)
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    ax.plot(np.arange(n), sigma_a, "o-", label=rf"$A_k$: $\kappa = {condition_number(sigma_a):.3g}$")
    ax.plot(np.arange(n), sigma_q, "s--", label=rf"$Q_k$: $\kappa = {condition_number(sigma_q):.3g}$")
    ax.set(xlabel="index $i$ (descending order)", ylabel=r"singular value $\sigma_i$")
    ax.set_title(rf"$C_I = {c_in}$ random kernels of length $m = {m}$, $n = {n}$")
    ax.set_ylim(bottom=0)
    ax.legend()
    fig.tight_layout()
    return fig
