r"""ConvNorm, the equation: the paper's appendix procedure (Liu et al. 2021, appendix B), plainly.

A layer has weight :math:`a \in \mathbb{R}^{C_O \times C_I/g \times m}` (kernel size :math:`m`,
one or two axes; a dilated kernel is its zero-stuffed version), input :math:`x` of size
:math:`n`, padding :math:`p`, stride :math:`s`, affine kernels :math:`\rho_k` and bias :math:`b`.
Per output channel :math:`k`:

1. **Convolve.** Zero-pad :math:`x` by :math:`m - 1` and cross-correlate: the full output
   :math:`y_k = \sum_i a_{ki} \star x_i` of size :math:`L = n + m - 1`. (Circular padding,
   :math:`p = (m - 1)/2`: the circular cross-correlation, :math:`L = n`.)
2. **Normalize** circularly at size :math:`L`, with the kernels' spectra treated as constants
   (stop-gradient):

   .. math:: \begin{aligned}
             \tilde y_k &= \mathcal F_L^{-1}\bigl[\hat v_k \odot \mathcal F_L y_k\bigr], \\
             \hat v_k &= \Bigl(\sum_i |\mathcal F_L a_{ki}|^2 + \varepsilon\Bigr)^{-1/2}.
             \end{aligned}

3. **Affine**: :math:`\bar y_k[t] = \sum_j \rho_k[j]\, \tilde y_k[t + j - \lfloor (m_\rho - 1)/2 \rfloor]`,
   a circular cross-correlation at size :math:`L` centred so that a centred delta is the identity.
4. **Crop and stride**: :math:`z_k[t] = \bar y_k[m - 1 - p + s t]` (circular: :math:`\bar y_k[s t]`),
   :math:`0 \le t < \lfloor (n + 2p - m)/s \rfloor + 1`: the size ``conv2d`` gives.
5. **Bias**: :math:`z_k + b_k`.

:func:`conv_norm_reference` is these steps and nothing else: one FFT per kernel and per output
channel at the full size, no cache, no choice of computation. It is what
:func:`convnorm.functional.conv_norm` computes, faster, and what its tests compare it with.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ._geometry import CONV, layer_geometry
from .padding import dilate_kernel
from .precision import FLOAT_DTYPES, without_autocast
from .validation import check_non_negative

__all__ = ["conv_norm_reference"]


@without_autocast  # every step in the input's dtype
def conv_norm_reference(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, stride=1,
                        padding=0, dilation=1, groups: int = 1, padding_mode: str = "zeros", eps: float = 1e-5,
                        affine_weight: torch.Tensor | None = None, stop_gradient: bool = True) -> torch.Tensor:
    """ConvNorm by the five steps of the module docstring: ``input`` ``(N, C_in, *n)`` and
    ``weight`` ``(C_out, C_in / groups, *m)`` (one or two axes) give ``(N, C_out, *out)``, the
    shape of the convolution with the same arguments. Same arguments, checks and result as
    :func:`convnorm.functional.conv_norm` (without a running average), except that it takes
    float32 and float64 tensors only (``ValueError`` naming the argument otherwise) and
    computes in their dtype (use float64 for checks) with ``torch.autocast`` off."""
    geometry = layer_geometry(input, weight, stride, padding, dilation, groups, padding_mode, bias, affine_weight)
    eps = check_non_negative("eps", eps)
    for name, tensor in (("input", input), ("weight", weight), ("bias", bias), ("affine_weight", affine_weight)):
        if tensor is not None and tensor.dtype not in FLOAT_DTYPES:
            raise ValueError(f"{name} must be float32 or float64, got {tensor.dtype}")
    d = len(geometry.size)
    axes = tuple(range(2, 2 + d))
    kernel = dilate_kernel(weight, geometry.dilation)
    # 1. convolve: the full output of size L (zero padding m - 1), or the circular one (L = n)
    if geometry.padding_mode == "zeros":
        y = CONV[d](input, kernel, None, 1, [m - 1 for m in geometry.kernel], 1, geometry.groups)
    else:
        y = CONV[d](F.pad(input, [p for p in reversed(geometry.padding) for _ in range(2)], mode="circular"), kernel,
                    groups=geometry.groups)
    # 2. normalize: v-hat from the spectra of the kernels zero-padded to L (|a-hat|^2 as re^2 + im^2,
    #    whose gradient is defined where a-hat vanishes)
    a_hat = torch.fft.fftn(kernel.detach() if stop_gradient else kernel, s=geometry.length, dim=axes)
    v_hat = ((a_hat.real ** 2 + a_hat.imag ** 2).sum(1) + eps) ** -0.5
    y = torch.fft.ifftn(v_hat * torch.fft.fftn(y, dim=axes), dim=axes).real
    # 3. affine: a circular cross-correlation, tap (taps - 1) // 2 at lag 0
    if affine_weight is not None:
        taps = affine_weight.shape[1:]
        y = F.pad(y, [q for t in reversed(taps) for q in ((t - 1) // 2, t // 2)], mode="circular")
        y = CONV[d](y, affine_weight.unsqueeze(1), groups=y.shape[1])
    # 4. crop m - 1 - p samples and keep every s-th
    z = y[(...,) + tuple(slice(c, c + s * (o - 1) + 1, s) for c, o, s in zip(geometry.offset, geometry.out_size,
                                                                              geometry.stride))]
    # 5. bias
    return z if bias is None else z + bias.reshape(-1, *[1] * d)
