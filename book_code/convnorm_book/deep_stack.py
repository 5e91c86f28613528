r"""A deep stack of random circular convolutions, with and without ConvNorm: the experiment of
the intro and of Chapter 0 (each draws its own figure of it).

Each layer maps :math:`C` channels to :math:`C` channels by a circular convolution with
random kernels of :math:`m` taps; with ConvNorm every output channel is normalized by
:func:`convnorm.functional.conv_norm1d` (circular padding, :math:`\varepsilon = 0`, no affine
kernel), so each channel's operator is a tight frame. The functions return what the chapters
plot: the signal energy after every layer and the output's power spectrum, and draw the energy
curves both chapters show (:func:`draw_energies`, with :func:`legend_handles`) and the table of where
each run ends (:func:`stack_table`).
"""
from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from matplotlib.lines import Line2D

from convnorm.functional import conv_norm1d
from convnorm.validation import check_positive_int
from convnorm_book.results.tables import Table


def random_kernels(depth: int, channels: int, taps: int, scale: float, seed: int = 0,
                   positive: bool = False) -> list[torch.Tensor]:
    r"""``depth`` float64 weights ``(channels, channels, taps)`` with i.i.d. entries
    :math:`\text{scale} \cdot g / \sqrt{C m}`, :math:`g` standard normal, or uniform on
    :math:`[0, 1)` if ``positive`` (kernels that all average, i.e. share a low-pass part).
    With normal entries a plain layer multiplies the expected energy by ``scale**2``."""
    for name, value in (("depth", depth), ("channels", channels), ("taps", taps)):
        check_positive_int(name, value)
    if not scale > 0:
        raise ValueError(f"scale must be positive, got {scale!r}")
    generator = torch.Generator().manual_seed(seed)
    draw = torch.rand if positive else torch.randn
    return [scale * draw(channels, channels, taps, dtype=torch.float64, generator=generator) / np.sqrt(channels * taps)
            for _ in range(depth)]


def _layer(x: torch.Tensor, weight: torch.Tensor, normalize: bool) -> torch.Tensor:
    pad = (weight.shape[-1] - 1) // 2
    if normalize:
        return conv_norm1d(x, weight, padding=pad, padding_mode="circular", eps=0.0)
    return F.conv1d(F.pad(x, (pad, pad), mode="circular"), weight)


def propagate(x: torch.Tensor, kernels: Sequence[torch.Tensor], normalize: bool) -> tuple[np.ndarray, torch.Tensor]:
    """Send ``x`` ``(N, C, n)`` through the stack (odd kernels, "same" circular padding).

    Returns:
        The energy after each layer relative to the input's, ``(depth + 1,)`` starting at 1,
        and the output ``(N, C, n)``.
    """
    if any(w.shape[-1] % 2 == 0 for w in kernels):
        raise ValueError("kernels must have an odd number of taps (a circular 'same' layer)")
    start = x.square().sum()
    energies = [1.0]
    for weight in kernels:
        x = _layer(x, weight, normalize)
        energies.append(float(x.square().sum() / start))
    return np.asarray(energies), x


def compare_stacks(x: torch.Tensor, depth: int, taps: int, scales: Sequence[float], seed: int = 0
                   ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """For each scale, one draw of :func:`random_kernels` (as many channels as ``x`` has) sent through
    :func:`propagate` plain and with ConvNorm: ``{"plain, scale s" / "ConvNorm, scale s": (energies,
    output power spectrum)}``."""
    runs = {}
    for scale in scales:
        kernels = random_kernels(depth, x.shape[1], taps, scale, seed)
        for normalize, name in ((False, "plain"), (True, "ConvNorm")):
            energies, out = propagate(x, kernels, normalize)
            runs[f"{name}, scale {scale}"] = energies, power_spectrum(out)
    return runs


def stack_table(runs: dict[str, tuple[np.ndarray, np.ndarray]], title: str) -> Table:
    """Where each run of ``runs`` (:func:`compare_stacks`) ends: its energy after the last layer, relative to
    the input's, and the spread of its output's power spectrum, max/min (1 for white noise of infinite length).
    One row per run, four short columns, so that the table reads at a phone's width."""
    rows = [[label.rsplit("scale ", 1)[-1], label.split(",")[0], f"{energies[-1]:.1e}",
             f"{spectrum.max() / spectrum.min():.1e}"] for label, (energies, spectrum) in runs.items()]
    return Table(title, ["scale", "layer", "energy", "spectrum max/min"], rows)


def power_spectrum(x: torch.Tensor) -> np.ndarray:
    r"""Mean power :math:`|\hat x(\omega)|^2` over signals and channels, on the ``rfft`` frequencies."""
    return torch.fft.rfft(x, dim=-1).abs().square().mean(dim=(0, 1)).numpy()


def _scale(label: str) -> str:
    """The scale a run's label names: ``"0.5"`` for ``"plain, scale 0.5"``."""
    return label.rsplit("scale ", 1)[-1]


def run_style(runs: dict[str, tuple[np.ndarray, np.ndarray]], label: str) -> dict:
    """How the run ``label`` of ``runs`` is drawn: one colour per scale, solid with ConvNorm and dashed
    without, so that curves which coincide (ConvNorm at every scale) still read as one method."""
    scales = list(dict.fromkeys(_scale(name) for name in runs))
    return {"linestyle": "-" if "ConvNorm" in label else "--", "color": f"C{scales.index(_scale(label))}"}


def legend_handles(runs: dict[str, tuple[np.ndarray, np.ndarray]]) -> list[Line2D]:
    """A legend for ``runs`` with one entry per scale (its colour) and one per method (its line style):
    as many entries as there are things to tell apart, rather than one per curve."""
    scales = dict.fromkeys(_scale(name) for name in runs)
    handles = [Line2D([], [], color=f"C{i}", label=f"scale {scale}") for i, scale in enumerate(scales)]
    return handles + [Line2D([], [], color="gray", linestyle="--", label="plain"),
                      Line2D([], [], color="gray", linestyle="-", label="ConvNorm")]


def draw_energies(ax: plt.Axes, runs: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
    """Energy against depth on a log scale for ``runs``, ``{label: (energies, spectrum)}``, each labelled
    and drawn as :func:`run_style` says (one colour per scale, dashed without ConvNorm)."""
    for label, (energies, _) in runs.items():
        ax.semilogy(energies, label=label, **run_style(runs, label))
    ax.set(xlabel="layer", ylabel="energy / input energy")
