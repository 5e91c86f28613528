r"""What each explorer shows, computed with the package: the reference for every number.

The explorers recompute these quantities in the reader's browser (``js/*.js``); the book's
static figures and the parity tests (``tests/test_explorers_parity.py``) use these
functions, so a number on the page is the package's number.

* :func:`kernel_spectrum_view` (intro): :math:`|\hat a|` and :math:`|\hat a \odot \hat v|`.
* :func:`allpass_view` (chapter 2): :math:`\hat a, \hat v, \hat g = \hat a \odot \hat v`, the
  impulse responses :math:`a, v, g` and both condition numbers.
* :func:`channel_singular_value_pair` (chapter 3): singular values of :math:`A_k` and :math:`Q_k`.
* :func:`padding_stride_view` (chapter 4): the spectrum of :math:`Q_k Q_k^\top` and
  :math:`\|Q_k Q_k^\top - I\|_2` for a zero- or circularly padded, strided layer.
* :func:`kernel_filter_view` (chapter 5): a 3x3 kernel's 2D spectrum before and after
  ConvNorm and a photograph filtered by each.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from convnorm._validation import check_finite, check_kernel_fits, check_positive_int
from convnorm.allpass import allpass_filter, normalizer_filter
from convnorm.circulant import ArrayLike, as_real_array, zero_pad
from convnorm.fourier import normalizer_spectrum
from convnorm.padding import channel_blocks, tight_frame_distance
from convnorm.reference import conv_norm_reference
from convnorm.spectral import operator_matrix
from convnorm.tightframe import channel_singular_values, normalized_weight


def condition_number(values: np.ndarray) -> float:
    """``max / min`` of non-negative ``values`` (singular values), ``inf`` when the smallest is 0."""
    smallest = values.min()
    return float(values.max() / smallest) if smallest > 0 else float("inf")


def kernel_spectrum_view(kernel: Sequence[float], n: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Return :math:`(|\hat a|, |\hat a \odot \hat v|)` on the ``n // 2 + 1`` rfft frequencies.

    For a single-channel kernel :math:`a \in \mathbb{R}^m` on signals of length :math:`n`,
    ConvNorm replaces :math:`a` by the all-pass filter :math:`g` with
    :math:`\hat g = \hat a \odot \hat v`, :math:`\hat v = |\hat a|^{-1}` (the normalizer of
    :mod:`convnorm.fourier` with one input channel, :math:`\varepsilon = 0`), so
    :math:`|\hat g| = 1` at every frequency while the phase of :math:`\hat a` is kept.
    """
    a = torch.as_tensor(np.asarray(kernel, dtype=np.float64))
    if a.ndim != 1 or a.numel() == 0:
        raise ValueError(f"kernel must be a non-empty 1D sequence, got shape {tuple(a.shape)}")
    check_finite("kernel", a)
    check_kernel_fits(a.shape, (n,))
    a_hat = torch.fft.rfft(a, n=n)
    v_hat = normalizer_spectrum(a.reshape(1, 1, -1), n)[0]
    return a_hat.abs().numpy(), (a_hat * v_hat).abs().numpy()


def allpass_view(a: ArrayLike, n: int, eps: float = 0.0) -> dict[str, np.ndarray | float]:
    r"""Chapter 2's quantities for a kernel :math:`a` at signal length :math:`n`.

    ``v`` and ``g`` are :func:`~convnorm.allpass.normalizer_filter` and
    :func:`~convnorm.allpass.allpass_filter` (regulariser ``eps``); on the ``n // 2 + 1`` rfft
    frequencies, ``a_hat`` is :math:`\hat a`, ``v_hat`` is
    :math:`\hat v = (|\hat a|^2 + \varepsilon)^{-1/2}` (:func:`~convnorm.fourier.normalizer_spectrum`)
    and ``g_hat`` is :math:`\hat g = \hat a \odot \hat v`. ``kappa_a`` is
    :math:`\kappa(C_a) = \max|\hat a| / \min|\hat a|` and ``kappa_q`` is
    :math:`\kappa(Q(a)) = \kappa(C_g) = \max|\hat g| / \min|\hat g|` (the extremes of the full
    spectrum are those of the rfft half, because :math:`|\hat a_{-\omega}| = |\hat a_\omega|`).

    Raises:
        ValueError: as :func:`~convnorm.allpass.normalizer_filter`, in particular for
            ``eps = 0`` and a spectrum that vanishes at some frequency.
    """
    kernel = as_real_array("a", a, 1, "(k,)")
    v, g = normalizer_filter(kernel, n, eps), allpass_filter(kernel, n, eps)
    a_pad = zero_pad(kernel, n)
    a_hat = np.fft.rfft(a_pad)
    v_hat = normalizer_spectrum(torch.from_numpy(kernel).view(1, 1, -1), n, eps=eps)[0].numpy()
    g_hat = a_hat * v_hat
    return {"a": a_pad, "v": v, "g": g, "a_hat": a_hat, "v_hat": v_hat, "g_hat": g_hat,
            "kappa_a": condition_number(np.abs(a_hat)), "kappa_q": condition_number(np.abs(g_hat))}


def random_channel_kernels(c_in: int, m: int, seed: int) -> np.ndarray:
    r"""``c_in`` i.i.d. normal kernels of length ``m`` with variance :math:`1/(C_I m)`, ``(c_in, m)``.

    They are the first ``c_in * m`` draws of ``numpy.random.default_rng(seed).standard_normal``,
    so the explorer draws every setting of :math:`(C_I, m)` from one stored stream per seed.
    """
    c_in, m = check_positive_int("c_in", c_in), check_positive_int("m", m)
    draws = np.random.default_rng(seed).standard_normal(c_in * m)
    return draws.reshape(c_in, m) / np.sqrt(c_in * m)


def channel_singular_value_pair(c_in: int, m: int, n: int = 32, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    r"""Sorted singular values of :math:`A_k` and of :math:`Q_k = P_k A_k` for :func:`random_channel_kernels`.

    Both from :func:`~convnorm.tightframe.channel_singular_values` (:math:`\sqrt{s_k(\omega)}`),
    :math:`Q_k`'s kernels from :func:`~convnorm.tightframe.normalized_weight`.
    """
    kernels = random_channel_kernels(c_in, m, seed)
    sigma_a = channel_singular_values(kernels, n)
    sigma_q = channel_singular_values(normalized_weight(kernels[None], n)[0], n)
    return sigma_a, sigma_q


def padding_stride_view(weight: torch.Tensor, n: int, padding: int, stride: int,
                        padding_mode: str = "zeros") -> dict[str, np.ndarray]:
    r"""The Gram spectrum and tight-frame distance of every output channel of a 1D ConvNorm layer.

    The layer is :func:`~convnorm.reference.conv_norm_reference` (``eps = 0``) on ``(C_I, n)``
    inputs; its dense matrix comes from :func:`~convnorm.spectral.operator_matrix` and is cut
    into the channels :math:`Q_k` by :func:`~convnorm.padding.channel_blocks`.

    Returns:
        ``eigenvalues``: ``(C_O, outputs)``, the eigenvalues of :math:`Q_k Q_k^\top`, ascending;
        ``distances``: ``(C_O,)``, :math:`\|Q_k Q_k^\top - I\|_2`
        (:func:`~convnorm.padding.tight_frame_distance`).
    """
    if not isinstance(weight, torch.Tensor) or weight.dim() != 3:
        raise ValueError(f"weight must be a (C_O, C_I, m) tensor, got {getattr(weight, 'shape', weight)!r}")
    weight = weight.double()
    matrix = operator_matrix(lambda x: conv_norm_reference(x, weight, stride=stride, padding=padding,
                                                           padding_mode=padding_mode, eps=0.0),
                             (weight.shape[1], check_positive_int("n", n)))
    blocks = channel_blocks(matrix, weight.shape[0])
    return {"eigenvalues": np.stack([torch.linalg.eigvalsh(b @ b.T).numpy() for b in blocks]),
            "distances": np.array([tight_frame_distance(b) for b in blocks])}


def check_photo(photo: torch.Tensor) -> torch.Tensor:
    """``photo`` if it is a grayscale ``(1, H, W)`` tensor, else ``ValueError``."""
    if not isinstance(photo, torch.Tensor) or photo.dim() != 3 or photo.shape[0] != 1:
        raise ValueError(f"photo must be a (1, H, W) tensor, got shape {tuple(getattr(photo, 'shape', ()))}")
    return photo


def kernel_filter_view(kernel: Sequence[float], photo: torch.Tensor, eps: float = 1e-6) -> dict[str, np.ndarray]:
    r"""A 3x3 kernel's 2D spectrum before and after ConvNorm, and the photograph filtered by each.

    Args:
        kernel: 9 numbers, row-major.
        photo: ``(1, H, W)`` image.
        eps: ConvNorm's :math:`\varepsilon` (needed where the spectrum vanishes, e.g. the
            Laplacian at frequency 0).

    Returns:
        ``(H, W)`` arrays, zero frequency first: ``magnitude`` :math:`|\hat a(\omega)|`,
        ``normalized`` :math:`\hat v(\omega) |\hat a(\omega)|`; the photo filtered with circular
        padding, ``filtered`` by the kernel and ``normed`` by the ConvNorm layer
        (:func:`~convnorm.reference.conv_norm_reference`, exact for circular padding).
    """
    k = torch.as_tensor(kernel, dtype=torch.float64)
    if k.numel() != 9:
        raise ValueError(f"kernel must have 9 entries (3x3), got {k.numel()}")
    check_photo(photo)
    weight = k.reshape(1, 1, 3, 3)
    size = tuple(photo.shape[1:])
    magnitude = torch.fft.fft2(weight[0, 0], s=size).abs()
    x = photo[None].double()
    return {
        "magnitude": magnitude.numpy(),
        "normalized": (magnitude * normalizer_spectrum(weight, size, eps=eps, onesided=False)[0]).numpy(),
        "filtered": F.conv2d(F.pad(x, (1, 1, 1, 1), mode="circular"), weight)[0, 0].numpy(),
        "normed": conv_norm_reference(x, weight, padding=1, padding_mode="circular", eps=eps)[0, 0].numpy(),
    }
