r"""The book code of Chapter 5 (``book/part2/05-two-dimensions.ipynb``): the paper's Figure 2
(:func:`plot_figure2`), a photograph through random layers plain and with ConvNorm
(:func:`plot_photo_through_layer`, :func:`radial_power_gain`), and a 3x3 kernel's 2D spectrum before
and after ConvNorm with the photograph filtered by each, as numbers (:func:`kernel_filter_view`), a
figure (:func:`plot_kernel_filter`) and the chapter's explorer (:func:`kernel_filter_explorer`, which
recomputes :func:`kernel_filter_view` in the reader's browser); the numbers are the package's
(:mod:`convnorm.spectral`, :mod:`convnorm.fourier`, :mod:`convnorm.reference`). The chapter reads its
timing record with :func:`~convnorm_book.results.records.load_benchmarks`.
"""
from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from matplotlib import colormaps

from convnorm.fourier import normalizer_spectrum
from convnorm.reference import conv_norm_reference
from convnorm.spectral import LayerSpectrum
from convnorm_book.explorers.page import Explorer, encode_bytes, encode_float64
from convnorm_book.explorers.shared import EPS_DECADES
from convnorm_book.phone_and_desktop import phone_and_desktop
from convnorm_book.results.records import load_benchmarks
from convnorm_book.results.tables import Table

__all__ = ["kernel_filter_explorer", "KERNEL_PRESETS", "load_benchmarks", "load_photo", "phone_and_desktop",
           "plot_figure2", "plot_kernel_filter", "plot_photo_through_layer", "radial_power_gain", "Table"]


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


def check_photo(photo: torch.Tensor) -> torch.Tensor:
    """``photo`` if it is a grayscale ``(1, H, W)`` tensor, else ``ValueError``."""
    if not isinstance(photo, torch.Tensor) or photo.dim() != 3 or photo.shape[0] != 1:
        raise ValueError(f"photo must be a (1, H, W) tensor, got shape {tuple(getattr(photo, 'shape', ()))}")
    return photo


def kernel_filter_view(kernel: Sequence[float], photo: torch.Tensor, eps: float = 1e-6) -> dict[str, np.ndarray]:
    r"""A 3x3 kernel's 2D spectrum before and after ConvNorm, and the photograph filtered by each.

    Args:
        kernel: 9 numbers, row-major.
        photo: ``(1, H, W)`` image.
        eps: ConvNorm's :math:`\varepsilon` (needed where the spectrum vanishes, e.g. the
            Laplacian at frequency 0).

    Returns:
        ``(H, W)`` arrays, zero frequency first: ``magnitude`` :math:`|\hat a(\omega)|`,
        ``normalized`` :math:`\hat v(\omega) |\hat a(\omega)|`; the photo filtered with circular
        padding, ``filtered`` by the kernel and ``normed`` by the ConvNorm layer
        (:func:`~convnorm.reference.conv_norm_reference`, exact for circular padding).
    """
    k = torch.as_tensor(kernel, dtype=torch.float64)
    if k.numel() != 9:
        raise ValueError(f"kernel must have 9 entries (3x3), got {k.numel()}")
    check_photo(photo)
    weight = k.reshape(1, 1, 3, 3)
    size = tuple(photo.shape[1:])
    magnitude = torch.fft.fft2(weight[0, 0], s=size).abs()
    x = photo[None].double()
    return {
        "magnitude": magnitude.numpy(),
        "normalized": (magnitude * normalizer_spectrum(weight, size, eps=eps, onesided=False)[0]).numpy(),
        "filtered": F.conv2d(F.pad(x, (1, 1, 1, 1), mode="circular"), weight)[0, 0].numpy(),
        "normed": conv_norm_reference(x, weight, padding=1, padding_mode="circular", eps=eps)[0, 0].numpy(),
    }


def plot_kernel_filter(kernel: Sequence[float], photo: torch.Tensor, eps: float = 1e-6,
                       stacked: bool = False) -> plt.Figure:
    """A 3x3 kernel's 2D magnitude spectrum, its ConvNorm-normalized spectrum, and the
    grayscale ``photo`` filtered by each (circular padding, so the normalized layer is exact):
    :func:`kernel_filter_view`, drawn.

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


def kernel_filter_explorer(photo: torch.Tensor, preset: str = "gaussian blur", eps: float = 1e-6) -> Explorer:
    """Chapter 5's explorer: a preset or the nine taps and ε against the kernel's 2D spectrum
    before and after ConvNorm and the grayscale ``photo`` ``(1, H, W)`` filtered by each
    (:func:`kernel_filter_view`)."""
    check_photo(photo)
    if preset not in KERNEL_PRESETS:
        raise ValueError(f"preset must be one of {sorted(KERNEL_PRESETS)}, got {preset!r}")
    if eps not in EPS_DECADES:
        raise ValueError(f"eps must be one of {EPS_DECADES}, got {eps!r}")
    magma = np.round(colormaps["magma"](np.linspace(0, 1, 256))[:, :3] * 255)
    return Explorer("kernelFilter", "kernel_filter.js", "A 3×3 kernel, its spectrum and a photograph",
                    {"photo": encode_float64(photo[0].double().numpy()), "photo_shape": list(photo.shape[1:]),
                     "magma": encode_bytes(magma),
                     "presets": {name: list(map(float, k)) for name, k in KERNEL_PRESETS.items()},
                     "preset": preset, "eps": eps, "eps_values": EPS_DECADES})


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
