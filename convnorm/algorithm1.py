r"""The paper's Algorithm 1 (ConvNorm of a circular 2D conv layer), step by step.

A teaching reference, written twice: with numpy, one output channel at a time exactly
as the pseudocode reads, and with torch, all channels at once. The package's layer
(:class:`convnorm.layers.ConvNorm2d`) computes the same map by a faster route.

Input: the conv outputs :math:`z \in \mathbb{R}^{B \times C_O \times H \times W}`, the
kernels :math:`a \in \mathbb{R}^{C_O \times C_I \times k_1 \times k_2}` and optionally the
affine kernels :math:`r \in \mathbb{R}^{C_O \times t_1 \times t_2}`. For every output
channel :math:`k`, with 2D DFTs of size :math:`H \times W`:

.. math::

    \hat z_k = \mathcal{F} z_k, \quad
    \hat a_{ki} = \mathcal{F} a_{ki} \ (\text{stop-gradient}), \quad
    \hat v_k = \Bigl(\sum_i |\hat a_{ki}|^2 + \varepsilon\Bigr)^{-1/2}, \quad
    \tilde z_k = \mathcal{F}^{-1}(\hat z_k \odot \hat v_k), \quad
    \bar z_k = r_k * \tilde z_k ,

where :math:`*` is circular convolution at size :math:`H \times W` (:math:`r_k`
zero-padded at the top-left corner). The paper's pseudocode has :math:`\varepsilon = 0`.
"""
from __future__ import annotations

import numpy as np
import torch

from ._validation import check_finite

__all__ = ["algorithm1_numpy", "algorithm1_torch", "centred_affine_as_convolution"]


def _check(z_shape: tuple[int, ...], a_shape: tuple[int, ...], r_shape: tuple[int, ...] | None, eps: float) -> None:
    if len(z_shape) != 4:
        raise ValueError(f"z_out must have shape (B, C_O, H, W), got {z_shape}")
    if len(a_shape) != 4:
        raise ValueError(f"weight must have shape (C_O, C_I, k_1, k_2), got {a_shape}")
    if z_shape[1] != a_shape[0]:
        raise ValueError(f"z_out has {z_shape[1]} channels but weight has C_O = {a_shape[0]}")
    if any(k > n for k, n in zip(a_shape[2:], z_shape[2:])):
        raise ValueError(f"kernel size {a_shape[2:]} is larger than the output size {z_shape[2:]}")
    if r_shape is not None and (len(r_shape) != 3 or r_shape[0] != a_shape[0]
                                or any(t > n for t, n in zip(r_shape[1:], z_shape[2:]))):
        raise ValueError(f"affine must have shape (C_O, t_1, t_2) with C_O = {a_shape[0]} and taps "
                         f"no larger than {z_shape[2:]}, got {r_shape}")
    if not eps >= 0:
        raise ValueError(f"eps must be non-negative, got {eps}")


def algorithm1_numpy(z_out: np.ndarray, weight: np.ndarray, affine: np.ndarray | None = None,
                     eps: float = 0.0) -> np.ndarray:
    """Algorithm 1 with ``numpy.fft``, one output channel per loop iteration (float64)."""
    z_out, weight = np.asarray(z_out, dtype=np.float64), np.asarray(weight, dtype=np.float64)
    r = None if affine is None else np.asarray(affine, dtype=np.float64)
    _check(z_out.shape, weight.shape, None if r is None else r.shape, eps)
    check_finite("z_out", z_out)
    check_finite("weight", weight)
    size = z_out.shape[2:]
    result = np.empty_like(z_out)
    for k in range(weight.shape[0]):
        z_hat = np.fft.fft2(z_out[:, k])                       # FFT of the conv output
        a_hat = np.fft.fft2(weight[k], s=size)                 # FFT of the C_I kernels
        v_hat = (np.sum(np.abs(a_hat) ** 2, axis=0) + eps) ** -0.5
        z_tilde = np.fft.ifft2(z_hat * v_hat).real             # circular convolution with v_k
        if r is not None:
            z_tilde = np.fft.ifft2(np.fft.fft2(r[k], s=size) * np.fft.fft2(z_tilde)).real
        result[:, k] = z_tilde
    return result


def algorithm1_torch(z_out: torch.Tensor, weight: torch.Tensor, affine: torch.Tensor | None = None,
                     eps: float = 0.0) -> torch.Tensor:
    """Algorithm 1 with ``torch.fft``, all channels at once; differentiable, with
    :math:`\\hat a` detached (stop-gradient) as in the paper."""
    _check(tuple(z_out.shape), tuple(weight.shape), None if affine is None else tuple(affine.shape), eps)
    check_finite("weight", weight)
    size = tuple(z_out.shape[2:])
    a_hat = torch.fft.fft2(weight.detach(), s=size)            # (C_O, C_I, H, W)
    v_hat = (a_hat.abs().square().sum(1) + eps).rsqrt()        # (C_O, H, W)
    spectrum = torch.fft.fft2(z_out) * v_hat
    if affine is not None:
        spectrum = spectrum * torch.fft.fft2(affine, s=size)
    return torch.fft.ifft2(spectrum).real


def centred_affine_as_convolution(rho: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    r"""Rewrite a centred affine cross-correlation as Algorithm 1's circular convolution.

    :class:`convnorm.layers.ConvNorm2d` applies its affine kernel :math:`\rho_k` as
    :math:`y[t] = \sum_j \rho_k[j]\, x[t + j - c]` with :math:`c = \lfloor (t - 1)/2 \rfloor`
    per axis (:math:`t` taps), so that a centred delta is the identity. That is the
    circular convolution :math:`r_k * x` with :math:`r_k[(c - j) \bmod n] = \rho_k[j]`.

    Args:
        rho: ``(C_O, t_1, t_2)``.
        size: the circular size :math:`(n_1, n_2)`, at least the taps.

    Returns:
        ``(C_O, n_1, n_2)``.
    """
    if rho.dim() != 3 or any(t > n for t, n in zip(rho.shape[1:], size)):
        raise ValueError(f"rho must have shape (C_O, t_1, t_2) with taps at most {tuple(size)}, got {tuple(rho.shape)}")
    rows = [((t - 1) // 2 - torch.arange(t)) % n for t, n in zip(rho.shape[1:], size)]
    r = rho.new_zeros(rho.shape[0], *size)
    r[:, rows[0][:, None], rows[1][None, :]] = rho
    return r
