r"""How ConvNorm without BatchNorm trains, read from the records: how long each seed's
training loss stays at :math:`\ln K` (the loss of a network that ignores its input, on
balanced classes), and what the trained layers apply (from the
conditioning records, whose ConvNorm trainings are the same as those of the standard
protocol: the same settings, rate and seed).

A network's gain is bounded by the product of its layers' spectral norms (ReLU and
pooling do not raise it): :math:`\|f\|_{\mathrm{Lip}} \le \prod_l \|W_l\|_2`. ConvNorm bounds each
layer's normalized kernels by :math:`\sqrt{C_O}` (Part I), and its affine kernel can raise
or lower that; a network whose product stays small maps every image to nearly the same
logits, whose loss is :math:`\ln K`, and learns slowly until its layers grow.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

#: a training loss above this share of ln K counts as not yet learning
PLATEAU_SHARE = 0.95


def plateau(history: dict, k: int = 10) -> int:
    """Epochs from the start whose training loss stays above :data:`PLATEAU_SHARE` of
    :math:`\\ln K`: how long the network takes to start learning (all its epochs if it
    never does)."""
    losses = history["train_loss"]
    return next((i for i, loss in enumerate(losses) if loss < PLATEAU_SHARE * math.log(k)), len(losses))


def gain(layers: Sequence[dict]) -> float:
    """The product of a trained network's layer spectral norms: a bound on its gain."""
    return math.prod(layer["spectral_norm"] for layer in layers)


def above_bound(layers: Sequence[dict]) -> int:
    """How many layers apply an operator of norm above :math:`\\sqrt{C_O}`, the bound of
    ConvNorm's normalized kernels (the affine kernel or the running normalizer lift it)."""
    return sum(layer["spectral_norm"] > math.sqrt(layer["shape"][0]) for layer in layers)
