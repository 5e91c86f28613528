r"""The book code of Chapter 4 (``book/part2/04-convolution-padding-stride.ipynb``): the four
convolutions on one small example (:func:`plot_convolution_relations`), and the chapter's explorer
of padding and stride against the tight frame (:func:`padding_stride_explorer`, on the layers of
:func:`padding_weights`, whose numbers are :func:`padding_stride_view`'s).
"""
from __future__ import annotations

import textwrap
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from convnorm.circulant import circular_convolve, cyclic_reverse, zero_pad
from convnorm.padding import (
    channel_blocks,
    linear_as_circular,
    linear_convolve,
    linear_cross_correlate,
    tight_frame_distance,
)
from convnorm.reference import conv_norm_reference
from convnorm.spectral import operator_matrix
from convnorm.validation import check_positive_int
from convnorm_book.explorers.page import Explorer, encode_float64
from convnorm_book.phone_and_desktop import phone_and_desktop
from convnorm_book.results.tables import Table

__all__ = ["padding_stride_explorer", "padding_stride_view", "padding_weights", "phone_and_desktop",
           "plot_convolution_relations", "Table"]


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


def padding_weights(kernel_sizes=range(2, 6), channels: tuple[int, int] = (2, 3),
                    seed: int = 5) -> dict[int, torch.Tensor]:
    """The random ``(C_O, C_I, m)`` float64 weights of chapter 4's explorer, one per kernel length ``m``."""
    return {m: torch.randn(*channels, m, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
            for m in kernel_sizes}


def padding_stride_view(weight: torch.Tensor, n: int, padding: int, stride: int,
                        padding_mode: str = "zeros") -> dict[str, np.ndarray]:
    r"""The Gram spectrum and tight-frame distance of every output channel of a 1D ConvNorm layer.

    The layer is :func:`~convnorm.reference.conv_norm_reference` (``eps = 0``) on ``(C_I, n)``
    inputs; its dense matrix comes from :func:`~convnorm.spectral.operator_matrix` and is cut
    into the channels :math:`Q_k` by :func:`~convnorm.padding.channel_blocks`.

    Returns:
        ``eigenvalues``: ``(C_O, outputs)``, the eigenvalues of :math:`Q_k Q_k^\top`, ascending;
        ``distances``: ``(C_O,)``, :math:`\|Q_k Q_k^\top - I\|_2`
        (:func:`~convnorm.padding.tight_frame_distance`).
    """
    if not isinstance(weight, torch.Tensor) or weight.dim() != 3:
        raise ValueError(f"weight must be a (C_O, C_I, m) tensor, got {getattr(weight, 'shape', weight)!r}")
    weight = weight.double()
    matrix = operator_matrix(lambda x: conv_norm_reference(x, weight, stride=stride, padding=padding,
                                                           padding_mode=padding_mode, eps=0.0),
                             (weight.shape[1], check_positive_int("n", n)))
    blocks = channel_blocks(matrix, weight.shape[0])
    return {"eigenvalues": np.stack([torch.linalg.eigvalsh(b @ b.T).numpy() for b in blocks]),
            "distances": np.array([tight_frame_distance(b) for b in blocks])}


def padding_stride_explorer(n: int = 32, m: int = 3, padding: int = 1, stride: int = 1, max_n: int = 64,
                            max_stride: int = 4) -> Explorer:
    """Chapter 4's explorer: padding mode, kernel length, padding :math:`p`, stride :math:`s` and
    :math:`n` against the spectrum of :math:`Q_k Q_k^\\top` and :math:`\\|Q_k Q_k^\\top - I\\|_2`
    (:func:`padding_stride_view`) for the layers of :func:`padding_weights`."""
    weights = padding_weights()
    if m not in weights or not 0 <= padding < m or not 1 <= stride <= max_stride or not 8 <= n <= max_n:
        raise ValueError(f"need m in {sorted(weights)}, 0 <= padding < m, 1 <= stride <= {max_stride}, "
                         f"8 <= n <= {max_n}; got m={m}, padding={padding}, stride={stride}, n={n}")
    return Explorer("paddingStride", "padding_stride.js", "Padding and stride against the tight frame",
                    {"weights": {str(size): encode_float64(w.numpy().ravel()) for size, w in weights.items()},
                     "shape": list(weights[m].shape[:2]), "max_m": max(weights), "mode": "zeros", "m": m,
                     "padding": padding, "stride": stride, "n": n, "max_n": max_n, "max_stride": max_stride})
