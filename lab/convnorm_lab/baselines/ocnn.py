r"""OCNN: the kernel orthogonality penalty of Wang et al. (2020, "Orthogonal
convolutional neural networks").

For a kernel :math:`K \in \mathbb R^{M \times C \times k \times k}` and stride :math:`S`
the penalty is

.. math:: L_{orth}(K) = \bigl\| \operatorname{Conv}(K, K, \text{padding}=P, \text{stride}=S) - I_{r_0} \bigr\|_F^2,
   \qquad P = \lfloor (k-1)/S \rfloor S,

where :math:`\operatorname{Conv}(K, K)` correlates every filter with every other
(an :math:`M \times M` map of size :math:`2P/S + 1` squared) and :math:`I_{r_0}` is
the identity at the centre tap and zero elsewhere. It vanishes exactly when the
filters and all their shifts by multiples of the stride are orthonormal, i.e. when
the convolution is an (orthogonal) isometry of its rows. The trainer adds
:math:`\lambda \sum_\ell L_{orth}(K_\ell)` over the network's :class:`OCNNConv2d`
layers (every conv of an ``"ocnn"`` model).
"""
from __future__ import annotations

import contextlib

import torch
import torch.nn as nn
import torch.nn.functional as F

from convnorm.precision import fp32_region
from convnorm.validation import check_ndim, check_non_negative, check_positive_int


def kernel_orthogonality_penalty(weight: torch.Tensor, stride: int = 1) -> torch.Tensor:
    """:math:`L_{orth}(K)` of a 2-D conv weight ``(M, C, k_h, k_w)`` at ``stride``."""
    check_ndim("weight", weight, 4, "(C_out, C_in, k_h, k_w)")
    stride = check_positive_int("stride", stride)
    m, _, kh, kw = weight.shape
    padding = ((kh - 1) // stride * stride, (kw - 1) // stride * stride)
    auto = F.conv2d(weight, weight, stride=stride, padding=padding)  # (M, M, h, w)
    target = torch.zeros_like(auto)
    target[:, :, auto.shape[2] // 2, auto.shape[3] // 2] = torch.eye(m, dtype=weight.dtype, device=weight.device)
    return (auto - target).pow(2).sum()


class OCNNConv2d(nn.Conv2d):
    """A plain ``nn.Conv2d`` marked for the OCNN penalty."""

    def orthogonality_penalty(self) -> torch.Tensor:
        return kernel_orthogonality_penalty(self.weight, self.stride[0])


def ocnn_penalty(model: nn.Module) -> torch.Tensor:
    """:math:`\\sum_\\ell L_{orth}(K_\\ell)` over the :class:`OCNNConv2d` layers of ``model``
    (a zero tensor if it has none)."""
    convs = [m for m in model.modules() if isinstance(m, OCNNConv2d)]
    with fp32_region(convs[0].weight)[0] if convs else contextlib.nullcontext():  # float32, as ConvNorm's normalizer
        terms = [m.orthogonality_penalty() for m in convs]
    if not terms:
        return torch.zeros((), device=next(model.parameters()).device)
    return torch.stack(terms).sum()


class OCNNRegularizer:
    """``model -> λ · ocnn_penalty(model)``, the trainer's ``regularizer`` for OCNN."""

    def __init__(self, weight: float = 1e-3):
        self.weight = check_non_negative("weight (lambda)", weight)

    def __call__(self, model: nn.Module) -> torch.Tensor:
        return self.weight * ocnn_penalty(model)
