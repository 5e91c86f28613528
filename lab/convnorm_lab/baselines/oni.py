r"""ONI: orthogonalization by Newton's iteration (Huang et al. 2020).

A conv weight is reshaped to :math:`Z \in \mathbb R^{C_O \times C_I k_h k_w}`, its rows
are centred, :math:`Z_c = Z - \tfrac1d Z \mathbf 1 \mathbf 1^\top`, and with
:math:`S = Z_c Z_c^\top / \|Z_c Z_c^\top\|_F` Newton's iteration

.. math:: B_0 = I, \qquad B_{t+1} = \tfrac32 B_t - \tfrac12 B_t^3 S

approaches :math:`S^{-1/2}`. The layer uses
:math:`\hat W = g\, B_T Z_c / \|Z_c Z_c^\top\|_F^{1/2}`, whose rows are orthonormal
(times the scale :math:`g`) as :math:`T` grows, provided :math:`C_O < C_I k_h k_w`
(centred rows span at most :math:`C_I k_h k_w - 1` dimensions). Gradients flow
through the whole iteration. In floating point this non-symmetric form of the
iteration is stable for about ten steps only (rounding errors grow again after
that), which is why ONI uses small :math:`T`.

Settings: the paper reports :math:`T = 5`; the authors' code uses :math:`T = 3`; both
multiply by :math:`g = \sqrt 2`. :data:`ONI_SETTINGS` holds the two.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
from torch.nn.utils import parametrize

from convnorm.precision import fp32_region
from convnorm.validation import check_positive_int

ONI_SETTINGS = {
    "paper": {"iterations": 5, "scale": math.sqrt(2)},
    "authors-code": {"iterations": 3, "scale": math.sqrt(2)},
}


def oni_orthogonalize(weight: torch.Tensor, iterations: int = 5, scale: float = math.sqrt(2),
                      eps: float = 1e-12) -> torch.Tensor:
    """The ONI weight :math:`g B_T Z_c / \\|S\\|_F^{1/2}` of ``weight`` (any shape
    ``(C_out, ...)``), returned in the same shape."""
    check_positive_int("iterations", iterations)
    z = weight.reshape(weight.shape[0], -1)
    zc = z - z.mean(dim=1, keepdim=True)
    s = zc @ zc.T
    norm = s.norm() + eps
    s = s / norm
    b = torch.eye(s.shape[0], dtype=s.dtype, device=s.device)
    for _ in range(iterations):
        b = 1.5 * b - 0.5 * torch.linalg.matrix_power(b, 3) @ s
    return (scale * b @ zc / norm.sqrt()).reshape(weight.shape)


class ONI(nn.Module):
    """Parametrization computing :func:`oni_orthogonalize` of the raw weight."""

    def __init__(self, iterations: int = 5, scale: float = math.sqrt(2)):
        super().__init__()
        self.iterations = check_positive_int("iterations", iterations)
        self.scale = float(scale)

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        with fp32_region(weight)[0]:  # in the weight's float32 under autocast, as ConvNorm's normalizer
            return oni_orthogonalize(weight, self.iterations, self.scale)


def oni(module: nn.Module, iterations: int = 5, scale: float = math.sqrt(2)) -> nn.Module:
    """Register ONI on ``module.weight`` (in place, like ``spectral_norm``); return it."""
    parametrize.register_parametrization(module, "weight", ONI(iterations, scale))
    return module
