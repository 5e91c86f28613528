r"""The book code of the intro (``book/intro.ipynb``): the opening picture of a deep stack
(:func:`plot_stack_energy`, on :func:`~convnorm_book.deep_stack.compare_stacks`), the explorer
of a kernel's spectrum before and after ConvNorm (:func:`kernel_spectrum_explorer`, whose
numbers are :func:`kernel_spectrum_view`'s), and the reading path (:func:`plot_reading_path`).

The reading path draws the three ways through the book (the mathematics, the layer, the
replication of the paper), each a column of its pages in reading order, and dashed arrows where
a page builds on a page of another way. A page is named by its file (``part1/00-why-normalize``);
the number drawn is the one the book prints, read from the file name (chapters count from 0, as
the files do) or, for an appendix, its letter in the order of :data:`APPENDICES`, so the figure
renumbers itself with the files; ``tests/book/test_chapters_intro.py`` checks every file against
``_toc.yml``.
"""
from __future__ import annotations

import textwrap
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.patches import FancyBboxPatch

from convnorm.fourier import normalizer_spectrum
from convnorm.validation import check_finite, check_kernel_fits, check_positive_int
from convnorm_book.deep_stack import compare_stacks, draw_energies, legend_handles, stack_table
from convnorm_book.explorers.page import Explorer
from convnorm_book.phone_and_desktop import phone_and_desktop

__all__ = ["compare_stacks", "kernel_spectrum_explorer", "kernel_spectrum_view", "phone_and_desktop",
           "plot_reading_path", "plot_stack_energy", "stack_table"]


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


#: The appendices in the order of the table of contents: lettered A, B.
APPENDICES = ("appendix/engineering-notes", "appendix/how-results-were-produced")

#: The three ways through the book: a reader's aim, then its pages in reading order, each with a
#: short name. Solid arrows join a column's pages.
PATHS: dict[str, list[tuple[str, str]]] = {
    "the mathematics": [
        ("part1/00-why-normalize", "why normalize?"),
        ("part1/01-circulant-matrices-and-the-dft", "circulant matrices"),
        ("part1/02-all-pass-filters", "all-pass filters"),
        ("part1/03-multichannel-tight-frames", "tight frames"),
        ("part2/04-convolution-padding-stride", "padding, stride"),
        ("part2/05-two-dimensions", "two dimensions"),
    ],
    "the layer": [
        ("part3/06-convnorm-in-pytorch", "the layer"),
        ("practitioner", "ConvNorm in practice"),
        ("part3/07-baselines", "the baselines"),
        ("appendix/engineering-notes", "computing it fast"),
    ],
    "the replication": [
        ("part4/results-at-a-glance", "results at a glance"),
        ("part4/08-training-and-generalization", "training"),
        ("part4/09-robustness", "robustness"),
        ("part4/10-conditioning-lipschitz-and-cost", "conditioning, cost"),
        ("appendix/how-results-were-produced", "how the results were made"),
    ],
}

#: Dashed arrows: a page that builds on a page of another way through the book.
BUILDS_ON: list[tuple[str, str]] = [
    ("part2/05-two-dimensions", "part3/06-convnorm-in-pytorch"),
    ("part3/07-baselines", "part4/08-training-and-generalization"),
]

_COLOURS = ("C0", "C2", "C1")


def chapter_number(page: str) -> str:
    """The number the book prints for ``page``: a chapter's from its file name (``"part1/03-..."`` is 3), an
    appendix's letter, and ``""`` for the back matter."""
    if page in APPENDICES:
        return "ABCDEFGH"[APPENDICES.index(page)]
    stem = page.rsplit("/", 1)[-1]
    return str(int(stem[:2])) if stem[:2].isdigit() else ""


def plot_reading_path(stacked: bool = False) -> plt.Figure:
    """The three ways through the book (:data:`PATHS`), a column each with its pages in reading order, and the
    dashed arrows of :data:`BUILDS_ON`; with ``stacked``, narrower and taller, for a phone."""
    fig, ax = plt.subplots(figsize=(5.2, 5.6) if stacked else (9.0, 4.2))
    ax.set_axis_off()
    width, height, gap = (0.86, 0.66, 1.0) if stacked else (0.8, 0.5, 0.78)
    size = 10.5 if stacked else 10
    where = {}
    for column, (aim, pages) in enumerate(PATHS.items()):
        colour = _COLOURS[column]
        ax.text(column, 0.75, aim, ha="center", va="bottom", fontsize=size + 0.5, fontweight="bold", color=colour)
        for row, (page, name) in enumerate(pages):
            y = -row * gap
            where[page] = (column, y)
            number = chapter_number(page)
            ax.add_patch(FancyBboxPatch((column - width / 2, y - height / 2), width, height,
                                        boxstyle="round,pad=0.02,rounding_size=0.08", facecolor="white",
                                        edgecolor=colour, linewidth=1.6))
            label = textwrap.fill(f"{number}  {name}" if number else name, 15 if stacked else 28)
            ax.text(column, y, label, ha="center", va="center", fontsize=size, linespacing=1.1)
            if row:
                ax.annotate("", (column, y + height / 2), (column, y + gap - height / 2),
                            arrowprops=dict(arrowstyle="-|>", color=colour, lw=1.4))
    for source, target in BUILDS_ON:
        (x0, y0), (x1, y1) = where[source], where[target]
        ax.annotate("", (x1 - width / 2, y1), (x0 + width / 2, y0),
                    arrowprops=dict(arrowstyle="-|>", color="0.35", lw=1.2, linestyle="--",
                                    shrinkA=1, shrinkB=1))
    rows = max(len(pages) for pages in PATHS.values())
    ax.set_xlim(-0.5 - 0.02, len(PATHS) - 0.5 + 0.02)
    ax.set_ylim(-(rows - 1) * gap - height / 2 - 0.05, 1.1)
    fig.tight_layout()
    return fig
