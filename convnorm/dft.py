r"""The discrete Fourier transform's fixed matrices, shared by the maths (:mod:`convnorm.fourier`) and
the layer's fast computations (its engine): the angles :math:`2\pi\,ab/n` of a DFT, over a 1D or
2D grid, and the cosine basis that takes a symmetric autocorrelation to its spectrum.

Angles are reduced modulo :math:`2\pi` in integers and computed in float64, so a float32 matrix
built from them is the rounded exact one.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from ._caches import cached


def complex_dtype(dtype: torch.dtype) -> torch.dtype:
    """The complex dtype holding a spectrum of real ``dtype`` data: complex128 for float64,
    complex64 otherwise."""
    return torch.complex128 if dtype == torch.float64 else torch.complex64


@cached(maxsize=64)
def cosine_basis(lags: tuple[int, ...], dilation: tuple[int, ...], size: tuple[int, ...], onesided: bool,
                 dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    r"""``(Π lags, F)``: row :math:`\tau` is :math:`\cos(2\pi \sum_a \omega_a d_a \tau_a / n_a)`
    over the DFT grid of size :math:`n` (``F`` points; last axis halved if ``onesided``),
    for lags :math:`\tau_a` from :math:`-(k_a - 1)` to :math:`k_a - 1`. Angles are reduced
    modulo :math:`2\pi` in integers and computed in float64; cached per geometry."""
    taus = [(torch.arange(lag) - (lag - 1) // 2) * dl for lag, dl in zip(lags, dilation)]
    return grid_angles(taus, size, onesided).cos().to(dtype=dtype, device=device)


def dft_angles(a: torch.Tensor, b: torch.Tensor, n: int) -> torch.Tensor:
    r""":math:`2\pi (a b \bmod n)/n` for every pair, in float64."""
    return 2 * math.pi * (torch.outer(a, b) % n).double() / n


def grid_angles(positions: Sequence[torch.Tensor], size: Sequence[int], onesided: bool) -> torch.Tensor:
    r"""``(Π len(positions), F)`` float64: row :math:`\tau` (over the product of the integer
    ``positions`` of each axis) is :math:`2\pi \sum_a \omega_a \tau_a / n_a` over the DFT grid of
    ``size`` (``F`` points; last axis halved if ``onesided``), 1D or 2D, each axis's angle reduced
    modulo :math:`2\pi` in integers."""
    d = len(size)
    angles = [dft_angles(tau, torch.arange(n // 2 + 1 if onesided and axis == d - 1 else n), n)
              for axis, (tau, n) in enumerate(zip(positions, size))]
    angle = angles[0] if d == 1 else angles[0][:, None, :, None] + angles[1][None, :, None, :]
    return angle if d == 1 else angle.flatten(0, 1).flatten(1)  # the lag pairs by the frequency pairs
