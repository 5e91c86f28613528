"""Figures and widgets of Part I of the book (one dimension).

* :func:`measure_fft_speedup` / :func:`plot_fft_speedup`: chapter 1's timing of dense
  matrix algebra against the FFT, measured when called.
* :func:`plot_kernel_explorer` / :func:`kernel_explorer`: chapter 2's view of a kernel
  :math:`a`, its normalizer :math:`v` and its all-pass filter :math:`g`.
* :func:`plot_channel_singular_values` / :func:`singular_value_explorer`: chapter 3's
  singular values of :math:`A_k` and :math:`Q_k`.

The ``plot_*`` functions return a :class:`matplotlib.figure.Figure`; the ``*_explorer``
functions wrap them in :func:`ipywidgets.interact`.
"""
from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np

from ._validation import check_positive_int
from .allpass import allpass_filter, normalizer_filter, preconditioner_dense
from .circulant import ArrayLike, circulant, circular_convolve, zero_pad
from .layer_benchmark import best_time
from .tightframe import channel_singular_values, normalized_weight

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
        dense_product.append(best_time(lambda: c @ x, repeats))
        fft_product.append(best_time(lambda: circular_convolve(a, x), repeats))
    for n in inverse_sizes:
        dense_inverse.append(best_time(lambda: preconditioner_dense(a, n), repeats))
        fft_inverse.append(best_time(lambda: normalizer_filter(a, n), repeats))
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


def _condition_number(singular_values: np.ndarray) -> float:
    smallest = singular_values.min()
    return float(singular_values.max() / smallest) if smallest > 0 else float("inf")


def plot_kernel_explorer(a: ArrayLike, n: int = 32, eps: float = 1e-6) -> plt.Figure:
    r"""Six panels for a kernel :math:`a`: :math:`|\hat a|` and :math:`|\hat g|`, their phases, :math:`\hat v`,
    and the impulse responses of :math:`a`, :math:`v` and :math:`g`; the title gives
    :math:`\kappa(C_a)` and :math:`\kappa(Q(a)) = \kappa(C_g)`.

    ``v`` and ``g`` are :func:`~convnorm.allpass.normalizer_filter` and
    :func:`~convnorm.allpass.allpass_filter` with regulariser ``eps``.
    """
    a_pad = zero_pad(a, n)
    v, g = normalizer_filter(a_pad, n, eps), allpass_filter(a_pad, n, eps)
    a_hat, v_hat, g_hat = (np.fft.rfft(x) for x in (a_pad, v, g))
    omega = np.arange(a_hat.size)
    fig, axes = plt.subplots(2, 3, figsize=(11, 5.5))
    axes[0, 0].plot(omega, np.abs(a_hat), "o-", label=r"$|\hat a|$")
    axes[0, 0].plot(omega, np.abs(g_hat), "s--", label=r"$|\hat g|$")
    axes[0, 0].set(xlabel=r"frequency $\omega$", ylabel="magnitude", title="magnitude spectra")
    axes[0, 1].plot(omega, np.angle(a_hat), "o-", label=r"$\angle\hat a$")
    axes[0, 1].plot(omega, np.angle(g_hat), "s--", label=r"$\angle\hat g$")
    axes[0, 1].set(xlabel=r"frequency $\omega$", ylabel="phase (radians)", title="phases")
    axes[0, 2].semilogy(omega, np.abs(v_hat), "o-", color="C2", label=r"$\hat v$")
    axes[0, 2].set(xlabel=r"frequency $\omega$", ylabel="gain", title=r"normalizer $\hat v$")
    for ax, signal, name in zip(axes[1], (a_pad, v, g), ("kernel $a$", "normalizer $v$", "all-pass $g$")):
        ax.stem(np.arange(n), signal, basefmt=" ")
        ax.set(xlabel="tap index $t$", ylabel="value", title=name)
    for ax in axes[0]:
        ax.legend()
    kappa_a = _condition_number(np.abs(np.fft.fft(a_pad)))
    kappa_q = _condition_number(np.abs(np.fft.fft(g)))
    eps_text = f"{eps:.0e}" if eps else "0"
    fig.suptitle(rf"$n={n}$, $\varepsilon={eps_text}$:   $\kappa(C_a) = {kappa_a:.3g}$,   $\kappa(Q(a)) = {kappa_q:.3g}$")
    fig.tight_layout()
    return fig


def kernel_explorer(n: int = 32, taps: int = 5):
    """An :func:`ipywidgets.interact` around :func:`plot_kernel_explorer`: a preset, or ``taps`` sliders, and ``eps``."""
    import ipywidgets as widgets

    n, taps = check_positive_int("n", n), check_positive_int("taps", taps)
    defaults = KERNEL_PRESETS["random"][:taps]
    sliders = {
        f"a{t}": widgets.FloatSlider(value=float(defaults[t]) if t < defaults.size else 0.0, min=-2, max=2, step=0.05)
        for t in range(taps)
    }

    def show(preset: str, eps: float, **tap_values: float) -> None:
        kernel = KERNEL_PRESETS[preset] if preset in KERNEL_PRESETS else [tap_values[f"a{t}"] for t in range(taps)]
        plot_kernel_explorer(kernel, n, eps)
        plt.show()

    return widgets.interact(
        show,
        preset=widgets.Dropdown(options=["sliders", *KERNEL_PRESETS], value="sliders"),
        eps=widgets.FloatLogSlider(value=1e-6, base=10, min=-12, max=0),
        **sliders,
    )


def plot_channel_singular_values(c_in: int, k: int, n: int = 32, seed: int = 0) -> plt.Figure:
    r"""Sorted singular values of :math:`A_k` and of :math:`Q_k = P_k A_k` for ``c_in`` random kernels of length ``k``.

    The kernels are i.i.d. standard normal with variance :math:`1/(C_I k)`; the values come from
    :func:`~convnorm.tightframe.channel_singular_values` (:math:`\sqrt{s_k(\omega)}`).
    """
    c_in, k = check_positive_int("c_in", c_in), check_positive_int("k", k)
    kernels = np.random.default_rng(seed).standard_normal((c_in, k)) / np.sqrt(c_in * k)
    sigma_a = channel_singular_values(kernels, n)
    sigma_q = channel_singular_values(normalized_weight(kernels[None], n)[0], n)
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    ax.plot(np.arange(1, n + 1), sigma_a, "o-", label=rf"$A_k$: $\kappa = {_condition_number(sigma_a):.3g}$")
    ax.plot(np.arange(1, n + 1), sigma_q, "s--", label=rf"$Q_k$: $\kappa = {_condition_number(sigma_q):.3g}$")
    ax.set(xlabel="index $j$ (descending order)", ylabel=r"singular value $\sigma_j$")
    ax.set_title(rf"$C_I = {c_in}$ random kernels of length $k = {k}$, $n = {n}$")
    ax.set_ylim(bottom=0)
    ax.legend()
    fig.tight_layout()
    return fig


def singular_value_explorer(n: int = 32, max_channels: int = 8):
    """An :func:`ipywidgets.interact` around :func:`plot_channel_singular_values` over ``C_I``, ``k`` and the seed."""
    import ipywidgets as widgets

    n = check_positive_int("n", n)

    def show(c_in: int, k: int, seed: int) -> None:
        plot_channel_singular_values(c_in, k, n, seed)
        plt.show()

    return widgets.interact(
        show,
        c_in=widgets.IntSlider(value=3, min=1, max=check_positive_int("max_channels", max_channels)),
        k=widgets.IntSlider(value=3, min=1, max=n),
        seed=widgets.IntSlider(value=0, min=0, max=20),
    )
