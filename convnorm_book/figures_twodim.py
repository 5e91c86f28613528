"""Figures of Part II (chapters 4 and 5): convolution types, 2D spectra, Figure 2.

Every function draws with matplotlib and returns the figure; the numbers it shows come
from the package (:mod:`convnorm.padding`, :mod:`convnorm.spectral`, :mod:`convnorm.fourier`,
through :mod:`convnorm_book.explorers.views` for what chapter 5's explorer shows too).
"""
from __future__ import annotations

import textwrap
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F

from convnorm.circulant import circular_convolve, cyclic_reverse, zero_pad
from convnorm.padding import linear_as_circular, linear_convolve, linear_cross_correlate
from convnorm.reference import conv_norm_reference
from convnorm.spectral import LayerSpectrum

from .explorers.views import kernel_filter_view

__all__ = [
    "plot_convolution_relations",
    "load_photo",
    "KERNEL_PRESETS",
    "plot_kernel_filter",
    "radial_power_gain",
    "plot_photo_through_layer",
    "plot_figure2",
]


# ----------------------------------------------------------------------------- chapter 4


def _cells(ax, row: float, start: int, values: Sequence[float], color: str, label: str, muted=()) -> None:
    """Draw ``values`` as a row of labelled boxes starting at column ``start``."""
    for i, value in enumerate(values):
        face = "#eeeeee" if i in muted else color
        ax.add_patch(plt.Rectangle((start + i, row), 0.95, 0.8, facecolor=face, edgecolor="black", lw=0.6))
        ax.text(start + i + 0.475, row + 0.4, f"{value:g}", ha="center", va="center", fontsize=8)
    ax.text(start - 0.3, row + 0.4, label, ha="right", va="center", fontsize=8)


def plot_convolution_relations(a: Sequence[float], x: Sequence[float], stacked: bool = False) -> plt.Figure:
    """The four operations on one small example, each with the kernel placed for output 0.

    (i) linear convolution, (ii) cross-correlation without padding, (iii) circular
    convolution at length n, (iv) linear convolution as a circular one at length n + m - 1.
    Grey boxes are zeros added by padding. The outputs come from :mod:`convnorm.padding`
    and :func:`convnorm.circulant.circular_convolve`. With ``stacked``, narrower, the titles on
    two lines, for a phone's width.
    """
    a, x = np.asarray(a, dtype=float), np.asarray(x, dtype=float)
    m, n = a.size, x.size
    length = n + m - 1
    fig, axes = plt.subplots(4, 1, figsize=(5, 9.5) if stacked else (8, 7.5))
    pad = np.concatenate([np.zeros(m - 1), x, np.zeros(m - 1)])
    zeros = set(range(m - 1)) | set(range(m - 1 + n, n + 2 * (m - 1)))
    panels = [
        ("(i) linear convolution: flipped kernel slides over the zero-extended signal, length n+m-1",
         pad, -(m - 1), a[::-1], -(m - 1), linear_convolve(a, x), -(m - 1), zeros),
        ("(ii) cross-correlation (conv1d, no padding): kernel not flipped, length n-m+1",
         x, 0, a, 0, linear_cross_correlate(a, x), 0, ()),
        ("(iii) circular convolution at length n: kernel zero-padded to n and cyclically reversed",
         x, 0, cyclic_reverse(zero_pad(a, n)), 0, circular_convolve(a, x), 0, ()),
        ("(iv) linear convolution as circular: both zero-padded to n+m-1, equals (i)",
         zero_pad(x, length), 0, cyclic_reverse(zero_pad(a, length)), 0, linear_as_circular(a, x), 0,
         set(range(n, length))),
    ]
    for ax, (title, signal, s0, kernel, k0, out, o0, muted) in zip(axes, panels):
        _cells(ax, 2, s0, signal, "#cfe2f3", "x", muted)
        _cells(ax, 1, k0, kernel, "#fce5cd", "kernel, t=0")
        _cells(ax, 0, o0, out, "#d9ead3", "y")
        ax.set_title(textwrap.fill(title, 52) if stacked else title, fontsize=9, loc="left")
        ax.set_xlim(-(m - 1) - 3, n + 2 * m)
        ax.set_ylim(-0.2, 3)
        ax.axis("off")
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- chapter 5


def load_photo(size: int = 128, grayscale: bool = False) -> torch.Tensor:
    """Grace Hopper's portrait from matplotlib's sample data, centre-cropped to a square.

    Returns:
        float64 ``(C, size, size)`` in [0, 1], ``C = 1`` if ``grayscale`` else 3.
    """
    from matplotlib import cbook
    from PIL import Image

    if isinstance(size, bool) or not isinstance(size, int) or size < 4:
        raise ValueError(f"size must be an int of at least 4, got {size!r}")
    with cbook.get_sample_data("grace_hopper.jpg") as file:
        image = Image.open(file)
        image.load()
    width, height = image.size
    side = min(width, height)
    left, top = (width - side) // 2, (height - side) // 2
    image = image.crop((left, top, left + side, top + side)).resize((size, size), Image.LANCZOS)
    if grayscale:
        image = image.convert("L")
    array = np.asarray(image, dtype=np.float64) / 255.0
    return torch.from_numpy(array.reshape(size, size, -1)).permute(2, 0, 1).contiguous()


KERNEL_PRESETS: dict[str, tuple[float, ...]] = {
    "identity": (0, 0, 0, 0, 1, 0, 0, 0, 0),
    "box blur": (1 / 9,) * 9,
    "gaussian blur": (1 / 16, 2 / 16, 1 / 16, 2 / 16, 4 / 16, 2 / 16, 1 / 16, 2 / 16, 1 / 16),
    "sharpen": (0, -1, 0, -1, 5, -1, 0, -1, 0),
    "laplacian (edges)": (0, 1, 0, 1, -4, 1, 0, 1, 0),
    "sobel x": (-1, 0, 1, -2, 0, 2, -1, 0, 1),
}


def plot_kernel_filter(kernel: Sequence[float], photo: torch.Tensor, eps: float = 1e-6,
                       stacked: bool = False) -> plt.Figure:
    """A 3x3 kernel's 2D magnitude spectrum, its ConvNorm-normalized spectrum, and the
    grayscale ``photo`` filtered by each (circular padding, so the normalized layer is exact):
    :func:`~convnorm_book.explorers.views.kernel_filter_view`, drawn.

    Args:
        kernel: 9 numbers, row-major.
        photo: ``(1, H, W)`` image.
        eps: ConvNorm's epsilon (needed where the spectrum vanishes, e.g. the Laplacian at 0).
        stacked: two rows of two, for a phone's width, instead of one row of four.
    """
    view = kernel_filter_view(kernel, photo, eps)
    fig, axes = plt.subplots(*((2, 2) if stacked else (1, 4)), figsize=(6.4, 6.4) if stacked else (14, 3.4),
                             layout="constrained")
    axes = axes.ravel()
    vmax = max(float(view["magnitude"].max()), 1.0)
    for ax, name, title in [(axes[0], "magnitude", r"$|\hat a(\omega)|$"),
                            (axes[1], "normalized", r"$\hat v(\omega)\,|\hat a(\omega)|$ (ConvNorm)")]:
        shown = ax.imshow(np.fft.fftshift(view[name]), cmap="magma", vmin=0, vmax=vmax, extent=(-0.5, 0.5, 0.5, -0.5))
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(r"$\omega_2$ (cycles/pixel)")
        fig.colorbar(shown, ax=ax, shrink=0.8)
    axes[0].set_ylabel(r"$\omega_1$ (cycles/pixel)")
    for ax, name, title in [(axes[2], "filtered", "photo * kernel"), (axes[3], "normed", "photo * kernel, ConvNorm")]:
        ax.imshow(view[name], cmap="gray")
        ax.set_title(title, fontsize=9)
        ax.axis("off")
    return fig


def radial_power_gain(x: torch.Tensor, y: torch.Tensor, bins: int = 12) -> tuple[np.ndarray, np.ndarray]:
    r"""Power gain of a layer per band of spatial frequency :math:`|\omega|`.

    For each annulus :math:`B` of radial frequency, :math:`\sum_{\omega \in B} \sum_k |\hat y_k(\omega)|^2
    / \sum_{\omega \in B} \sum_i |\hat x_i(\omega)|^2` (sums over all channels).

    Args:
        x: ``(C_in, H, W)`` input, y: ``(C_out, H, W)`` output of a size-preserving layer.

    Returns:
        band centres (cycles/pixel) and gains, each ``(bins,)``.
    """
    if x.dim() != 3 or y.dim() != 3 or x.shape[1:] != y.shape[1:]:
        raise ValueError(f"x and y must be (C, H, W) with the same H, W, got {tuple(x.shape)} and {tuple(y.shape)}")
    h, w = x.shape[1:]
    radius = torch.sqrt(torch.fft.fftfreq(h)[:, None] ** 2 + torch.fft.fftfreq(w)[None, :] ** 2)
    edges = torch.linspace(0, 0.5, bins + 1)
    band = torch.bucketize(radius.clamp(max=0.5 - 1e-9), edges[1:-1])
    power_in = torch.fft.fft2(x).abs().square().sum(0)
    power_out = torch.fft.fft2(y).abs().square().sum(0)
    total_in = torch.zeros(bins, dtype=power_in.dtype).index_add_(0, band.flatten(), power_in.flatten())
    total_out = torch.zeros(bins, dtype=power_out.dtype).index_add_(0, band.flatten(), power_out.flatten())
    return ((edges[1:] + edges[:-1]) / 2).numpy(), (total_out / total_in).numpy()


def plot_photo_through_layer(photo: torch.Tensor, layers: dict[str, torch.Tensor], eps: float = 1e-8,
                             stacked: bool = False) -> plt.Figure:
    """Pass ``photo`` ``(C_in, H, W)`` through each circular 3x3 layer of ``layers``
    (name -> weight ``(C_out, C_in, 3, 3)``), plain and with ConvNorm.

    Top row: output channel 0 of the last layer, plain and with ConvNorm. Bottom: the
    power gain per frequency band (:func:`radial_power_gain`) of every layer, both ways.
    With ``stacked``, for a phone's width: the three images in a column above the gains.
    """
    x = photo[None].double()
    fig = plt.figure(figsize=(5, 13) if stacked else (12, 6.5))
    grid = fig.add_gridspec(5, 1, height_ratios=(1, 1, 1, 0.1, 1.4)) if stacked else fig.add_gridspec(2, 3)
    gain_ax = fig.add_subplot(grid[4, 0] if stacked else grid[1, :])
    image_cells = [grid[i, 0] for i in range(3)] if stacked else [grid[0, i] for i in range(3)]
    for color, (name, weight) in zip(("C0", "C3", "C2"), layers.items()):
        plain = F.conv2d(F.pad(x, (1, 1, 1, 1), mode="circular"), weight.double())[0]
        normed = conv_norm_reference(x, weight.double(), padding=1, padding_mode="circular", eps=eps)[0]
        for y, style, label in ((plain, "--", "plain"), (normed, "-", "ConvNorm")):
            centres, gain = radial_power_gain(photo.double(), y)
            gain_ax.semilogy(centres, gain, style, color=color, marker="o", ms=3, label=f"{name}, {label}")
    for ax, image, title in [(fig.add_subplot(image_cells[0]), photo.mean(0), "input (mean of channels)"),
                             (fig.add_subplot(image_cells[1]), plain[0], f"{name}: output channel 0"),
                             (fig.add_subplot(image_cells[2]), normed[0], f"{name}, ConvNorm: output channel 0")]:
        ax.imshow(image.numpy(), cmap="gray")
        ax.set_title(title, fontsize=9)
        ax.axis("off")
    gain_ax.set_xlabel(r"radial frequency $|\omega|$ (cycles/pixel)")
    gain_ax.set_ylabel("output power / input power")
    gain_ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    return fig


def plot_figure2(report: Sequence[LayerSpectrum], title: str = "", stacked: bool = False) -> plt.Figure:
    """The paper's Figure 2 from :func:`convnorm.spectral.analyse_conv_layers`: mean channel
    condition number (left) and layer spectral norm (right) per conv layer, plain vs ConvNorm;
    with ``stacked``, the spectral norm under the condition number."""
    if len(report) == 0:
        raise ValueError("report must describe at least one layer")
    index = np.arange(1, len(report) + 1)
    fig, (left, right) = plt.subplots(*((2, 1) if stacked else (1, 2)), figsize=(5, 7) if stacked else (11, 3.6))
    left.semilogy(index, [r.condition_number for r in report], "o--", label="plain conv")
    left.semilogy(index, [r.condition_number_convnorm for r in report], "s-", label="ConvNorm")
    left.set_ylabel("mean channel condition number")
    right.plot(index, [r.spectral_norm for r in report], "o--", label="plain conv")
    right.plot(index, [r.spectral_norm_convnorm for r in report], "s-", label="ConvNorm")
    right.set_ylabel("layer spectral norm")
    for ax in (left, right):
        ax.set_xlabel("conv layer (forward order)")
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
