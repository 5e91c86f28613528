r"""The book code of Chapter 6 (``book/part3/06-convnorm-in-pytorch.ipynb``): the data flow of
``ConvNorm2d`` as a diagram (:func:`plot_layer_dataflow`), and the timing records the chapter
reads (:func:`~convnorm_book.results.records.load_benchmarks`). The chapter trains one layer by gradient
descent in a few lines of its own, where the computation is the point.

The diagram is in the spirit of Figure 1 of Liu et al. (2021). Its top row is the signal path of one
output channel :math:`k` (zero padding :math:`p`, stride :math:`s`, kernel size :math:`m`,
:math:`L = n + m - 1`); the bottom row computes the normalizer from the weight alone. Everything
drawn is a step of :func:`convnorm.functional.conv_norm` and :class:`convnorm.layers.ConvNorm2d`.
For a phone's width (``stacked``) the two paths are columns read from top to bottom, the signal path
on the right (:data:`STACKED`).
"""
from __future__ import annotations

import matplotlib.pyplot as plt

from convnorm_book.phone_and_desktop import phone_and_desktop
from convnorm_book.results.records import load_benchmarks
from convnorm_book.results.tables import Table
from convnorm_book.results.words import device_name

__all__ = ["device_name", "load_benchmarks", "phone_and_desktop", "plot_layer_dataflow", "Table"]


#: (label, x, y) of every box; the signal path at y = 1, the weight path at y = 0.
BOXES = {
    "input": (r"input $x$" "\n" r"$C_I \times n \times n$", 0.0, 1.0),
    "conv": (r"full cross-correlation" "\n" r"$y = a \star x$, size $L$", 1.75, 1.0),
    "fft": (r"DFT at size $L$" "\n" r"$\hat y_k(\omega)$", 3.45, 1.0),
    "multiply": (r"$\hat v_k(\omega)\, \hat\rho_k(\omega)\, \hat y_k(\omega)$" "\n" "normalize, affine", 5.15, 1.0),
    "ifft": (r"inverse DFT" "\n" r"$\bar y_k$, size $L$", 6.85, 1.0),
    "crop": (r"crop $m - 1 - p$, every" "\n" r"$s$-th sample; $+\, b_k$", 8.55, 1.0),
    "output": ("output\n" r"$z_k$", 10.05, 1.0),
    "weight": (r"weight $a$" "\n" r"$C_O \times C_I \times m \times m$", 0.0, 0.0),
    "autocorrelation": ("stop-gradient;\n" r"$r_k = \sum_i a_{ki} \star a_{ki}$", 1.75, 0.0),
    "average": ("training: $r_k$; update\n" r"$\bar r \leftarrow \mu_u r + (1 - \mu_u) \bar r$" "\n"
                r"evaluation: $\bar r$", 3.45, 0.0),
    "normalizer": (r"$s_k = \mathcal{F}_L r_k$" "\n" r"$\hat v_k = (s_k + \varepsilon)^{-1/2}$", 5.15, 0.0),
    "affine": (r"affine kernel $\rho_k$" "\n" r"$\to \hat\rho_k(\omega)$", 6.85, 0.0),
}
#: (x, y) of every box when the paths are columns: the weight path at x = 0, the signal path at x = 1.3.
STACKED = {"input": (1.3, 6.0), "conv": (1.3, 5.0), "fft": (1.3, 4.0), "multiply": (1.3, 3.0), "ifft": (1.3, 2.0),
           "crop": (1.3, 1.0), "output": (1.3, 0.0), "weight": (0.0, 6.0), "autocorrelation": (0.0, 5.0),
           "average": (0.0, 4.0), "normalizer": (0.0, 3.0), "affine": (0.0, 2.0)}
ARROWS = [("input", "conv"), ("conv", "fft"), ("fft", "multiply"), ("multiply", "ifft"), ("ifft", "crop"),
          ("crop", "output"), ("weight", "conv"), ("weight", "autocorrelation"), ("autocorrelation", "average"),
          ("average", "normalizer"), ("normalizer", "multiply"), ("affine", "multiply")]


def plot_layer_dataflow(stacked: bool = False) -> plt.Figure:
    """Boxes for :data:`BOXES`, arrows for :data:`ARROWS`; signal path blue, weight path orange. Two rows,
    or with ``stacked`` two columns (:data:`STACKED`)."""
    fig, ax = plt.subplots(figsize=(5, 9.5) if stacked else (12.5, 3.2))
    ax.set(xlim=(-0.62, 1.92), ylim=(-0.5, 6.5)) if stacked else ax.set(xlim=(-0.9, 10.6), ylim=(-0.5, 1.4))
    ax.axis("off")
    places = STACKED if stacked else {name: (x, y) for name, (_, x, y) in BOXES.items()}
    texts = {}
    for name, (label, _, row) in BOXES.items():
        color = "#dbe9f6" if row == 1.0 else "#fde7cf"
        texts[name] = ax.text(*places[name], label, ha="center", va="center", fontsize=10 if stacked else 8.5, gid=name,
                              bbox=dict(boxstyle="round,pad=0.4", facecolor=color, edgecolor="gray"))
    for start, end in ARROWS:
        (x0, y0), (x1, y1) = places[start], places[end]
        if (y0 == y1) if not stacked else (x0 != x1):  # across: from the side of one box to the other's
            anchors = ((1, 0.5), (0, 0.5)) if x1 > x0 else ((0, 0.5), (1, 0.5))
        else:  # along a path: from the top or bottom of one box to the other's
            anchors = ((0.5, 1), (0.5, 0)) if y1 > y0 else ((0.5, 0), (0.5, 1))
        ax.annotate("", xy=anchors[1], xycoords=texts[end], xytext=anchors[0], textcoords=texts[start],
                    arrowprops=dict(arrowstyle="->", color="gray", shrinkA=4, shrinkB=4))
    return fig
