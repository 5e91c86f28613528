r"""The paper's Algorithm 1: ConvNorm of the outputs of a circular 2D conv layer.

Where it differs from the appendix procedure (:func:`convnorm.reference.conv_norm_reference`,
which starts from the layer's input): it takes the conv outputs
:math:`y \in \mathbb{R}^{N \times C_O \times H \times W}` as given (the paper's :math:`z`) and
normalizes them at *their* size, and its affine transform is a circular *convolution* with a
kernel :math:`\check\rho_k` placed at the corner (the paper's :math:`\mathbf r_k`; the book's
:math:`r_k` is the summed autocorrelation), where the layer applies a centred cross-correlation
:math:`\rho_k` (:func:`centred_affine_as_convolution` turns one into the other). For every output
channel :math:`k`, with 2D DFTs of size :math:`H \times W`:

.. math::

    \begin{aligned}
    \hat v_k &= \Bigl(\sum_i |\mathcal F a_{ki}|^2 + \varepsilon\Bigr)^{-1/2} \ (\text{stop-gradient}), \\
    \tilde y_k &= \mathcal{F}^{-1}(\hat v_k \odot \mathcal F y_k), \\
    \bar y_k &= \check\rho_k * \tilde y_k .
    \end{aligned}

The paper's pseudocode has :math:`\varepsilon = 0`.
"""
from __future__ import annotations

import torch

from .fourier import normalizer_spectrum
from .validation import check_finite, check_kernel_fits, check_ndim, check_non_negative, check_weight

__all__ = ["algorithm1", "centred_affine_as_convolution"]


def algorithm1(z_out: torch.Tensor, weight: torch.Tensor, affine_weight: torch.Tensor | None = None,
               eps: float = 0.0) -> torch.Tensor:
    """Algorithm 1 on the conv outputs ``z_out`` ``(N, C_O, H, W)`` (:math:`y`; the argument keeps
    the paper's name) of ``weight`` ``(C_O, C_I, m_1, m_2)``, with the affine kernels ``affine_weight``
    ``(C_O, m_1, m_2)`` as corner-placed convolution kernels :math:`\\check\\rho_k` (or None);
    returns :math:`\\bar y` ``(N, C_O, H, W)``. Differentiable in ``z_out`` and ``affine_weight``;
    :math:`\\hat v` is a constant (from ``weight.detach()``)."""
    check_ndim("z_out", z_out, 4, "(N, C_O, H, W)")
    check_weight(weight, (2,))
    if z_out.shape[1] != weight.shape[0]:
        raise ValueError(f"z_out has {z_out.shape[1]} channels but weight has C_O = {weight.shape[0]}")
    size = tuple(z_out.shape[2:])
    check_kernel_fits(weight.shape[2:], size, "output")
    if affine_weight is not None and (affine_weight.dim() != 3 or affine_weight.shape[0] != weight.shape[0]):
        raise ValueError(f"affine_weight must have shape (C_O, m_1, m_2) with C_O = {weight.shape[0]}, "
                         f"got {tuple(affine_weight.shape)}")
    if affine_weight is not None:
        check_kernel_fits(affine_weight.shape[1:], size, "output")
    eps = check_non_negative("eps", eps)
    check_finite("weight", weight)
    spectrum = torch.fft.fft2(z_out) * normalizer_spectrum(weight.detach(), size, eps, onesided=False)
    if affine_weight is not None:
        spectrum = spectrum * torch.fft.fft2(affine_weight, s=size)
    return torch.fft.ifft2(spectrum).real


def centred_affine_as_convolution(rho: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    r"""Rewrite a centred affine cross-correlation as Algorithm 1's circular convolution.

    :class:`convnorm.layers.ConvNorm2d` applies its affine kernel :math:`\rho_k` of :math:`m` taps
    per axis as :math:`\bar y[t] = \sum_j \rho_k[j]\, \tilde y[t + j - c]` with
    :math:`c = \lfloor (m - 1)/2 \rfloor` per axis, so that a centred delta is the identity. That is
    the circular convolution :math:`\check\rho_k * \tilde y` with
    :math:`\check\rho_k[(c - j) \bmod n] = \rho_k[j]`.

    Args:
        rho: ``(C_O, m_1, m_2)``.
        size: the circular size :math:`(n_1, n_2)`, at least the taps.

    Returns:
        ``(C_O, n_1, n_2)``.
    """
    if rho.dim() != 3 or any(t > n for t, n in zip(rho.shape[1:], size)):
        raise ValueError(f"rho must have shape (C_O, m_1, m_2) with taps at most {tuple(size)}, got {tuple(rho.shape)}")
    rows = [((t - 1) // 2 - torch.arange(t)) % n for t, n in zip(rho.shape[1:], size)]
    r = rho.new_zeros(rho.shape[0], *size)
    r[:, rows[0][:, None], rows[1][None, :]] = rho
    return r

