r"""ConvNorm of a 1x1 kernel: one convolution with the kernel scaled by its normalizer.

For a kernel of one tap the summed autocorrelation :math:`r_k` is the squared norm
:math:`\sum_i a_{ki}^2`, so :math:`\hat v_k = (\sum_i a_{ki}^2 + \varepsilon)^{-1/2}` is the same
at every frequency and the affine kernel :math:`\rho_k` has one tap: the layer divides each
output channel by its kernel's norm and multiplies it by :math:`\rho_k`. Both scales are
folded into the weight of one direct convolution (no transform).
"""
from __future__ import annotations

import torch

from ._geometry import CONV, LayerGeometry


def pointwise_conv_norm(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, geometry: LayerGeometry,
                        gain: torch.Tensor, affine_weight: torch.Tensor | None) -> torch.Tensor:
    """The layer's output for a 1x1 ``weight`` ``(C_out, C_in/g, 1[, 1])`` with normalizer
    ``gain`` (:math:`\\hat v`, one value per channel, ``(C_out, 1[, 1])``) and one-tap
    ``affine_weight`` (or None)."""
    c_out, d = weight.shape[0], weight.dim() - 2
    scale = gain.reshape(c_out)
    if affine_weight is not None:
        scale = scale * affine_weight.reshape(c_out)
    weight = weight * scale.reshape(c_out, *([1] * (d + 1)))
    return CONV[d](input, weight, bias, geometry.stride, 0, geometry.dilation, geometry.groups)
