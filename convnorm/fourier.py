r"""The kernel power spectrum and the ConvNorm normalizer, for 1D and 2D layers.

Notation (the paper's section 3.2 and appendix B). A layer's weight is
:math:`a \in \mathbb{R}^{C_O \times C_I \times m_1 \times \dots \times m_d}` with
:math:`d \in \{1, 2\}`. For a circular signal of size :math:`n = (n_1, \dots, n_d)`
let :math:`\hat a_{ki} = \mathcal{F}_n(a_{ki})` be the (unnormalised) DFT of the kernel
zero-padded to size :math:`n`. The *power spectrum* of output channel :math:`k` is

.. math:: s_k(\omega) = \sum_{i=0}^{C_I-1} |\hat a_{ki}(\omega)|^2,

and the ConvNorm *normalizer* is the filter :math:`v_k` with

.. math:: \hat v_k(\omega) = \bigl(s_k(\omega) + \varepsilon\bigr)^{-1/2},

so that :math:`P_k = (A_k A_k^\top)^{-1/2} = C_{v_k}` (exactly so when
:math:`\varepsilon = 0`).

Instead of :math:`C_O C_I` FFTs of size :math:`n`, :math:`s_k` is obtained from the
*summed autocorrelation* :math:`r_k = \sum_i a_{ki} \star a_{ki}`, which has only
:math:`(2m_1 - 1) \times \dots` lags: :math:`s_k = \mathcal{F}_n(r_k)` once the lags of
:math:`r_k` are wrapped circularly onto size :math:`n`; since :math:`r_k` is symmetric this is
one product with a (cached) cosine matrix for all output channels.
:func:`normalizer_from_autocorrelation` is the one function that computes :math:`\hat v`:
the layer, its functional form and the spectral analysis all take it from there (or from its
body without the check of :math:`\varepsilon`, once they have checked it).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from ._caches import cached
from ._geometry import CONV
from .dft import cosine_basis
from .validation import as_size, check_finite, check_non_negative, check_weight

LAG_MAP_MAX_ENTRIES = 2**20
r"""Largest lag map (:math:`m^2 \prod_a (2m_a - 1)` entries for kernels of :math:`m` taps) by which
:func:`kernel_autocorrelation` computes from the Gram matrices; larger kernels take a grouped
convolution, whose cost grows more slowly with the kernel size. Small kernels take the Gram
matrices: :math:`m^2` products per pair of channels, where the grouped convolution slides the
kernels over each other at :math:`\prod_a (2m_a - 1)` lags of :math:`m` products each."""


def autocorrelation_by_convolution(kernel: Sequence[int]) -> bool:
    """Whether :func:`kernel_autocorrelation` takes the grouped convolution for kernels of size
    ``kernel`` (its lag map would exceed ``LAG_MAP_MAX_ENTRIES``, :math:`2^{20}` entries)."""
    taps = math.prod(kernel)
    return taps * taps * math.prod([2 * k - 1 for k in kernel]) > LAG_MAP_MAX_ENTRIES


def kernel_autocorrelation(weight: torch.Tensor, by_convolution: bool | None = None) -> torch.Tensor:
    r"""Summed autocorrelation :math:`r_k[\tau] = \sum_i \sum_t a_{ki}[t]\, a_{ki}[t + \tau]`.

    Computed from the per-channel Gram matrices :math:`G_k[s, t] = \sum_i a_{ki}[s]\, a_{ki}[t]`
    (one small batched matmul) by summing each :math:`G_k` along its lag :math:`\tau = t - s`,
    or, for large kernels, by a grouped convolution of the kernels with themselves.

    Args:
        weight: ``(C_out, C_in, *kernel)`` with one or two kernel dimensions.
        by_convolution: take the grouped convolution; None: by the kernel's size
            (:func:`autocorrelation_by_convolution`).

    Returns:
        ``(C_out, *(2 * kernel - 1))``; lag :math:`\tau` is stored at index
        :math:`\tau + m - 1`, so the zero lag sits in the middle.
    """
    d = check_weight(weight)
    c_out, c_in, *kernel = weight.shape
    taps = math.prod(kernel)
    lags = [2 * k - 1 for k in kernel]
    if by_convolution is None:
        by_convolution = autocorrelation_by_convolution(kernel)
    if by_convolution:
        signal = weight.reshape(1, c_out * c_in, *kernel)
        # Group k correlates the C_in kernels of output channel k with themselves, summed over i.
        return CONV[d](signal, weight, padding=[k - 1 for k in kernel], groups=c_out)[0]
    flat = weight.reshape(c_out, c_in, taps)
    gram = flat.transpose(1, 2) @ flat  # (C_out, taps, taps)
    return (gram.reshape(c_out, taps * taps)
            @ lag_map(tuple(kernel), weight.dtype, weight.device)).reshape(c_out, *lags)


@cached(maxsize=64)
def lag_map(kernel: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """The cached 0/1 matrix ``(m², Π(2m - 1))`` sending Gram entry ``(t, t')`` to lag ``t' - t``
    (shifted by ``m - 1``): how :func:`kernel_autocorrelation` and the layer sum the Gram matrices by lag."""
    lags = [2 * k - 1 for k in kernel]
    position = torch.stack(torch.meshgrid(*[torch.arange(k, device=device) for k in kernel], indexing="ij"), -1)
    position = position.reshape(-1, len(kernel))  # (taps, d)
    lag = position[None, :, :] - position[:, None, :] + torch.tensor(kernel, device=device) - 1  # (taps, taps, d)
    index = torch.zeros(lag.shape[:2], dtype=torch.long, device=device)
    for axis, k in enumerate(kernel):
        index = index * (2 * k - 1) + lag[..., axis]
    matrix = torch.zeros(index.numel(), math.prod(lags), dtype=dtype, device=device)
    matrix[torch.arange(index.numel(), device=device), index.flatten()] = 1
    return matrix


def autocorrelation_power_spectrum(
    autocorrelation: torch.Tensor, size: int | Sequence[int], onesided: bool = True,
    dilation: int | Sequence[int] = 1,
) -> torch.Tensor:
    r""":math:`s_k = \mathcal{F}_n(r_k)`: the power spectrum from a summed autocorrelation.

    :math:`r_k` is symmetric (:math:`r_k[-\tau] = r_k[\tau]`), so its DFT at size :math:`n`,
    lags wrapped circularly, is the real sum
    :math:`s_k(\omega) = \sum_\tau r_k[\tau] \cos(2\pi \langle\omega, d\,\tau\rangle / n)`: one
    product with a cached cosine matrix (few operations per call, which matters on a GPU
    where each is a kernel launch), clamped at 0 against rounding.

    Args:
        autocorrelation: ``(C_out, *(2 * kernel - 1))`` as returned by
            :func:`kernel_autocorrelation` (or an average of such arrays: the map is
            linear, which is why the ConvNorm layer keeps its running average in this
            size-independent form).
        size: the circular signal size :math:`n`, one int per kernel dimension.
        onesided: ``rfft`` half-spectrum (True) or full spectrum.
        dilation: :math:`d`, the spectrum of the kernels dilated by ``dilation`` (whose
            autocorrelation is :math:`r_k` zero-stuffed).

    Returns:
        A real, non-negative tensor ``(C_out, n_1, …)`` (last axis halved if ``onesided``).
    """
    d = autocorrelation.dim() - 1
    if d not in (1, 2) or any(length % 2 == 0 for length in autocorrelation.shape[1:]):
        raise ValueError(
            "autocorrelation must have shape (C_out, 2m-1) or (C_out, 2m_1-1, 2m_2-1), "
            f"got {tuple(autocorrelation.shape)}"
        )
    n = as_size("size", size, d)
    c, *lags = autocorrelation.shape
    basis = cosine_basis(tuple(lags), as_size("dilation", dilation, d), n, onesided,
                          autocorrelation.dtype, autocorrelation.device)
    shape = (*n[:-1], n[-1] // 2 + 1) if onesided else n
    return (autocorrelation.reshape(c, -1) @ basis).reshape(c, *shape).clamp_min(0)


def kernel_power_spectrum(
    weight: torch.Tensor, size: int | Sequence[int], onesided: bool = True
) -> torch.Tensor:
    r""":math:`s_k(\omega) = \sum_i |\hat a_{ki}(\omega)|^2` at signal size ``size``.

    Args:
        weight: ``(C_out, C_in, *kernel)``, one or two kernel dimensions.
        size: the circular signal size :math:`n` (an int, or one int per kernel dim).
            It may be smaller than the kernel: the spectrum is then that of the
            kernel wrapped circularly, as for a DFT of that size.
        onesided: if True return the ``rfft`` half-spectrum (last axis ``n_d // 2 + 1``),
            else the full spectrum.

    Returns:
        A real, non-negative tensor ``(C_out, n_1, …)`` (last axis halved if ``onesided``).
    """
    size = _checked_size(weight, size)
    return autocorrelation_power_spectrum(_weight_autocorrelation(weight), size, onesided)


def normalizer_spectrum(
    weight: torch.Tensor, size: int | Sequence[int], eps: float = 0.0, onesided: bool = True
) -> torch.Tensor:
    r"""The ConvNorm normalizer :math:`\hat v_k(\omega) = (s_k(\omega) + \varepsilon)^{-1/2}` of ``weight``
    (``(C_out, C_in, *kernel)``) at signal size ``size``, shaped as :func:`kernel_power_spectrum`.

    With ``eps = 0`` a frequency where every kernel of a channel vanishes gives
    ``inf``; pass ``eps > 0`` to bound the gain by :math:`\varepsilon^{-1/2}`.
    """
    eps = check_non_negative("eps", eps)
    size = _checked_size(weight, size)
    return _normalizer(_weight_autocorrelation(weight), size, eps, onesided)


def _checked_size(weight: torch.Tensor, size: int | Sequence[int]) -> tuple[int, ...]:
    """``size`` as one int per kernel axis of ``weight``, once ``weight`` is checked to be a
    finite ``(C_out, C_in, *kernel)`` tensor and ``size`` to fit it; ``ValueError`` naming the
    argument otherwise."""
    size = as_size("size", size, check_weight(weight))
    check_finite("weight", weight)
    return size


def _weight_autocorrelation(weight: torch.Tensor) -> torch.Tensor:
    """:func:`kernel_autocorrelation` of a checked ``weight``, integer weights in float64."""
    return kernel_autocorrelation(weight if weight.is_floating_point() else weight.double())


def normalizer_from_autocorrelation(
    autocorrelation: torch.Tensor, size: int | Sequence[int], eps: float = 0.0, onesided: bool = True,
    dilation: int | Sequence[int] = 1,
) -> torch.Tensor:
    r""":math:`\hat v_k = (\mathcal F_n r_k + \varepsilon)^{-1/2}`: the normalizer from a summed
    autocorrelation (:func:`kernel_autocorrelation`, or a running average of it), at signal size
    ``size``, for the kernels dilated by ``dilation``; arguments and shape as
    :func:`autocorrelation_power_spectrum`. Where the layer, its functional form and the spectral
    analysis all compute :math:`\hat v`."""
    return _normalizer(autocorrelation, size, check_non_negative("eps", eps), onesided, dilation)


def _normalizer(autocorrelation: torch.Tensor, size: int | Sequence[int], eps: float, onesided: bool = True,
                dilation: int | Sequence[int] = 1) -> torch.Tensor:
    """:func:`normalizer_from_autocorrelation` with ``eps`` already checked (a float ``>= 0``)."""
    return (autocorrelation_power_spectrum(autocorrelation, size, onesided, dilation) + eps).rsqrt()
