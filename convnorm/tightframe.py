r"""Many channels: ConvNorm normalises each output channel to a tight frame.

For a 1D layer with weight :math:`a \in \mathbb{R}^{C_O \times C_I \times m}` on circular
signals of length :math:`n` (the paper's section 3.2 and appendix A):

.. math::

    \begin{aligned}
    A_k &= [C_{a_{k0}} \cdots C_{a_{k,C_I-1}}] \in \mathbb{R}^{n \times C_I n}, \\
    P_k &= (A_k A_k^\top)^{-1/2} = C_{v_k}, \\
    \hat v_k &= \Bigl(\sum_{i=0}^{C_I-1} |\hat a_{ki}|^2\Bigr)^{-1/2},
    \end{aligned}

    \begin{aligned}
    Q_k &= P_k A_k = [C_{v_k * a_{k0}} \cdots C_{v_k * a_{k,C_I-1}}], \\
    Q_k Q_k^\top &= I, \qquad Q = \begin{bmatrix} Q_0 \\ \vdots \\ Q_{C_O-1} \end{bmatrix}.
    \end{aligned}

Proposition 3.1: :math:`\|Q\| \le \sqrt{\sum_k \|Q_k\|^2}`. The condition numbers of the
channels and the layer's spectral norm, by the DFT, are
:func:`convnorm.spectral.channel_condition_numbers` and :func:`convnorm.spectral.layer_spectral_norm`,
for 1D layers as for 2D ones.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from .allpass import normalizer_filter
from .circulant import circulant, circular_convolve, inverse_sqrt_psd, zero_pad
from .fourier import kernel_power_spectrum
from .validation import ArrayLike, as_real_array, check_kernel_fits, check_positive_int


def _weight(weight: ArrayLike, n: int) -> tuple[np.ndarray, int]:
    w = as_real_array("weight", weight, 3, "(C_O, C_I, k)")
    n = check_positive_int("n", n)
    check_kernel_fits(w.shape[-1:], (n,))
    return w, n


def _kernels(kernels: ArrayLike, n: int) -> tuple[np.ndarray, int]:
    k = as_real_array("kernels", kernels, 2, "(C_I, k)")
    n = check_positive_int("n", n)
    check_kernel_fits(k.shape[-1:], (n,))
    return k, n


def channel_matrix(kernels: ArrayLike, n: int) -> np.ndarray:
    r"""The matrix :math:`A_k = [C_{a_{k0}} \cdots C_{a_{k,C_I-1}}]` of one output channel, ``(n, C_I * n)``.

    :math:`y_k = A_k x` for the input channels stacked as one vector :math:`x` of length :math:`C_I n`.
    """
    k, n = _kernels(kernels, n)
    return np.hstack([circulant(a, n) for a in k])


def layer_matrix(weight: ArrayLike, n: int) -> np.ndarray:
    r"""The whole layer :math:`A = [A_1; \dots; A_{C_O}]`, ``(C_O * n, C_I * n)``, from a ``(C_O, C_I, k)`` weight."""
    w, n = _weight(weight, n)
    return np.vstack([channel_matrix(w_k, n) for w_k in w])


def channel_preconditioner_dense(kernels: ArrayLike, n: int, eps: float = 0.0) -> np.ndarray:
    r"""The dense :math:`P_k = (A_k A_k^\top + \varepsilon I)^{-1/2}`, ``(n, n)``, in :math:`O(C_I n^2 + n^3)`."""
    a = channel_matrix(kernels, n)
    return inverse_sqrt_psd(a @ a.T, eps)


def normalizer_filters(weight: ArrayLike, n: int, eps: float = 0.0) -> np.ndarray:
    r"""The filters :math:`v_k` of all output channels,
    :math:`\hat v_k = (\sum_i |\hat a_{ki}|^2 + \varepsilon)^{-1/2}`, ``(C_O, n)``."""
    w, n = _weight(weight, n)
    return np.stack([normalizer_filter(w_k, n, eps) for w_k in w])


def normalized_weight(weight: ArrayLike, n: int, eps: float = 0.0) -> np.ndarray:
    r"""The kernels :math:`v_k * a_{ki}` of the normalised layer, ``(C_O, C_I, n)``.

    ``channel_matrix(normalized_weight(a, n)[k], n)`` is :math:`Q_k = P_k A_k`, and
    ``layer_matrix(normalized_weight(a, n), n)`` is :math:`Q`.
    """
    w, n = _weight(weight, n)
    v = normalizer_filters(w, n, eps)
    return np.stack([[circular_convolve(v_k, zero_pad(a, n)) for a in w_k] for v_k, w_k in zip(v, w)])


def channel_singular_values(kernels: ArrayLike, n: int) -> np.ndarray:
    r"""Singular values of :math:`A_k`: :math:`\sqrt{s_k(\omega)} = \bigl(\sum_i |\hat a_{ki}(\omega)|^2\bigr)^{1/2}`,
    sorted descending, ``(n,)``.

    Because :math:`A_k A_k^\top = F^{-1} \operatorname{diag}(s_k) F`; the power spectrum
    :math:`s_k` comes from :func:`convnorm.fourier.kernel_power_spectrum`.
    """
    k, n = _kernels(kernels, n)
    s = kernel_power_spectrum(torch.from_numpy(k[None]), n, onesided=False)[0].numpy()
    return np.sort(np.sqrt(s))[::-1]


def stacked_norm_bound(blocks: Sequence[ArrayLike]) -> float:
    r"""Proposition 3.1's bound :math:`\sqrt{\sum_k \|Q_k\|^2}` on the spectral norm of :math:`[Q_1; \dots; Q_{C_O}]`.

    Args:
        blocks: the matrices :math:`Q_k`, all with the same number of columns.
    """
    if len(blocks) == 0:
        raise ValueError("blocks must contain at least one matrix")
    arrays = [as_real_array(f"blocks[{k}]", b, 2, "(rows, cols)") for k, b in enumerate(blocks)]
    if len({b.shape[1] for b in arrays}) != 1:
        raise ValueError(f"blocks must have the same number of columns, got {[b.shape for b in arrays]}")
    return float(np.sqrt(sum(np.linalg.norm(b, 2) ** 2 for b in arrays)))

