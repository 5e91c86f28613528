r"""The fixed matrices both fast computations apply: dense DFT matrices of a 2D signal, and
the bases that map a small kernel to its (shifted) half spectrum. Each depends on the
layer's geometry, dtype and device only, and is cached (:mod:`convnorm._caches`).

Angles are reduced modulo :math:`2\pi` in integers and computed in float64, so the float32
matrices are the rounded exact ones.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch

from ._caches import cached
from .dft import complex_dtype, dft_angles, grid_angles


class DenseDFT(NamedTuple):
    r"""Dense DFT matrices for a 2D signal of size :math:`L = (L_0, L_1)`,
    :math:`K = L_1 // 2 + 1`, sampled on the output grid :math:`(s_0 u, s_1 v)`,
    :math:`u < O_0`, :math:`v < O_1`."""

    rfft_cols: torch.Tensor
    r"""``(L_1, 2K)`` real: ``y @ rfft_cols`` is :math:`\sum_t y[t] e^{-2\pi i k t/L_1}`
    (``rfft`` along the last axis), real and imaginary parts interleaved."""
    dft_rows: torch.Tensor
    r"""``(L_0, L_0)`` complex: :math:`e^{-2\pi i a b/L_0}` (``fft`` along the rows)."""
    idft_rows: torch.Tensor
    r"""``(O_0, L_0)`` complex: :math:`e^{2\pi i a s_0 u/L_0}/L_0`, the inverse ``fft``
    evaluated at rows :math:`s_0 u` only."""
    irfft_cols: torch.Tensor
    r"""``(2K, O_1)`` real: the inverse ``rfft`` (weights 1 at :math:`k = 0` and
    :math:`L_1/2`, 2 elsewhere) evaluated at columns :math:`s_1 v` only."""
    rfft_cols_t: torch.Tensor
    """``rfft_cols`` transposed (the backward pass's adjoint), contiguous."""
    dft_rows_h: torch.Tensor
    """``dft_rows`` conjugate-transposed, contiguous."""
    idft_rows_h: torch.Tensor
    """``idft_rows`` conjugate-transposed, contiguous."""
    irfft_cols_t: torch.Tensor
    """``irfft_cols`` transposed, contiguous."""


@cached(maxsize=32)
def dense_dft(length: tuple[int, int], stride: tuple[int, int], out_size: tuple[int, int],
              dtype: torch.dtype, device: torch.device) -> DenseDFT:
    """The :class:`DenseDFT` of normalization size ``length`` sampled with ``stride`` on
    ``out_size`` outputs, in ``dtype`` (its complex counterpart where complex)."""
    (l0, l1), (s0, s1), (o0, o1) = length, stride, out_size
    k = l1 // 2 + 1
    rows, cols, freqs = torch.arange(l0), torch.arange(l1), torch.arange(k)
    theta = dft_angles(cols, freqs, l1)
    rfft_cols = torch.stack([theta.cos(), -theta.sin()], -1).reshape(l1, 2 * k)
    dft_rows = torch.polar(torch.ones(l0, l0, dtype=torch.float64), -dft_angles(rows, rows, l0))
    idft_rows = torch.polar(torch.full((o0, l0), 1 / l0, dtype=torch.float64),
                            dft_angles(torch.arange(o0) * s0, rows, l0))
    weight = torch.full((k, 1), 2.0, dtype=torch.float64)
    weight[0] = 1
    if l1 % 2 == 0:
        weight[-1] = 1
    theta = dft_angles(freqs, torch.arange(o1) * s1, l1)
    irfft_cols = (torch.stack([theta.cos(), -theta.sin()], 1) * (weight / l1)[:, :, None]).reshape(2 * k, o1)
    rfft_cols, irfft_cols = (m.to(dtype=dtype, device=device) for m in (rfft_cols, irfft_cols))
    dft_rows, idft_rows = (m.to(dtype=complex_dtype(dtype), device=device) for m in (dft_rows, idft_rows))
    return DenseDFT(rfft_cols, dft_rows, idft_rows, irfft_cols, rfft_cols.T.contiguous(), dft_rows.mH.contiguous(),
                    idft_rows.mH.contiguous(), irfft_cols.T.contiguous())


@cached(maxsize=128)
def kernel_basis(taps: tuple[int, ...], shift: tuple[int, ...], length: tuple[int, ...],
                 dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    r"""``(Π taps, 2F)`` real: row :math:`j` is :math:`e^{2\pi i \langle\omega, j + \text{shift}\rangle / L}`
    over the ``rfftn`` grid of size ``length`` (:math:`L`, ``F`` frequencies), real and imaginary
    parts interleaved, so that ``kernel @ basis`` is the half spectrum
    :math:`\sum_j \rho[j]\, e^{2\pi i \langle\omega, j + \text{shift}\rangle / L}` of a kernel
    :math:`\rho` of ``taps``: the multiplier of the circular cross-correlation
    :math:`y[t] = \sum_j \rho[j]\, x[t + j + \text{shift}]`."""
    angle = grid_angles([torch.arange(t) + sh for t, sh in zip(taps, shift)], length, onesided=True)
    basis = torch.stack([angle.cos(), angle.sin()], -1)
    return basis.reshape(math.prod(taps), -1).to(dtype=dtype, device=device)


def shifted_kernel_spectrum(kernel: torch.Tensor, shift: tuple[int, ...], length: tuple[int, ...]) -> torch.Tensor:
    """Complex ``(C, L_0, …, L_{d-1} // 2 + 1)``: the half spectrum of each kernel of ``kernel``
    ``(C, *taps)`` as :func:`kernel_basis` defines it, by one product with the cached basis (few
    operations per call, which matters on a GPU where each is a kernel launch)."""
    c, *taps = kernel.shape
    basis = kernel_basis(tuple(taps), tuple(shift), tuple(length), kernel.dtype, kernel.device)
    half = (*length[:-1], length[-1] // 2 + 1)
    return torch.view_as_complex((kernel.reshape(c, -1) @ basis).reshape(c, *half, 2))
