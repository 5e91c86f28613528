r"""Circulant matrices, the DFT and circular convolution (numpy, teaching-size dense).

Conventions (the paper's appendix A, indices from 0). For :math:`v \in \mathbb{R}^n`,
:math:`s_\ell[v]` is the cyclic shift by :math:`\ell`, :math:`(s_\ell[v])_i = v_{(i - \ell) \bmod n}`,
and the circulant matrix of :math:`v` stacks the shifts as columns,

.. math:: \begin{aligned}
          C_v &= [\, s_0[v] \;\; s_1[v] \;\; \cdots \;\; s_{n-1}[v] \,], \\
          (C_v)_{ij} &= v_{(i-j) \bmod n}.
          \end{aligned}

The DFT matrix is *unnormalised*, :math:`F_{jk} = e^{-2\pi i jk/n}` (numpy's ``fft``), so
:math:`F^{-1} = F^*/n`, :math:`\|F\| = \sqrt n`, :math:`\hat v = F v`, and

.. math:: C_v = F^{-1} \operatorname{diag}(\hat v)\, F .

A kernel shorter than the signal is zero-padded at the end to length :math:`n` first.
"""
from __future__ import annotations

import numpy as np

from .validation import ArrayLike, as_real_array, check_kernel_fits, check_non_negative, check_positive_int


def zero_pad(a: ArrayLike, n: int) -> np.ndarray:
    r"""The kernel :math:`a \in \mathbb{R}^m` zero-padded at the end to length :math:`n \ge m`."""
    a = as_real_array("a", a, 1, "(k,)")
    n = check_positive_int("n", n)
    check_kernel_fits(a.shape, (n,))
    return np.concatenate([a, np.zeros(n - a.size)])


def circulant(a: ArrayLike, n: int | None = None) -> np.ndarray:
    r"""The circulant matrix :math:`(C_a)_{ij} = a_{(i-j) \bmod n}` of ``a`` padded to length ``n``.

    Column :math:`j` is the cyclic shift :math:`s_j[a]`. ``n`` defaults to ``len(a)``.

    Returns:
        ``(n, n)`` float64 array.
    """
    a = as_real_array("a", a, 1, "(k,)")
    v = zero_pad(a, a.size if n is None else n)
    # Row i is the reversed kernel r = (v_0, v_{n-1}, ..., v_1) rolled by i:
    # (C_v)_{ij} = r_{j-i} = d_{n+j-i}, d = (r, r).
    doubled = np.tile(cyclic_reverse(v), 2)
    windows = np.lib.stride_tricks.sliding_window_view(doubled, v.size)
    return windows[v.size - np.arange(v.size)].copy()


def dft_matrix(n: int) -> np.ndarray:
    r"""The unnormalised DFT matrix :math:`F_{jk} = e^{-2\pi i\, jk/n}`, with :math:`F^{-1} = F^*/n`."""
    n = check_positive_int("n", n)
    j = np.arange(n)
    return np.exp(-2j * np.pi * np.outer(j, j) / n)


def circular_convolve(a: ArrayLike, x: ArrayLike) -> np.ndarray:
    r"""Circular convolution :math:`(a * x)_i = \sum_j a_j\, x_{(i-j) \bmod n} = (C_a x)_i`, by FFT.

    Computed as :math:`F^{-1}(\hat a \odot \hat x)` in :math:`O(n \log n)`.

    Args:
        a: kernel ``(k,)`` with ``k <= n`` (zero-padded to ``n``).
        x: signal ``(n,)``.

    Returns:
        ``(n,)`` float64 array.
    """
    x = as_real_array("x", x, 1, "(n,)")
    a_pad = zero_pad(a, x.size)
    return np.fft.ifft(np.fft.fft(a_pad) * np.fft.fft(x)).real


def cyclic_reverse(v: ArrayLike) -> np.ndarray:
    r"""The cyclic reversal :math:`\check v = (v_0, v_{n-1}, v_{n-2}, \dots, v_1)`,
    i.e. :math:`\check v_i = v_{-i \bmod n}`."""
    v = as_real_array("v", v, 1, "(n,)")
    return np.roll(v[::-1], 1)


def cross_correlate(a: ArrayLike, x: ArrayLike) -> np.ndarray:
    r"""Circular cross-correlation :math:`(a \star x)_i = \sum_j a_j\, x_{(i+j) \bmod n}`
    (what ConvNets call convolution).

    It equals the convolution with the reversed kernel, :math:`a \star x = \check a * x`
    (``a`` zero-padded to ``n`` before reversing), and that is how it is computed.

    Args:
        a: kernel ``(k,)`` with ``k <= n``.
        x: signal ``(n,)``.

    Returns:
        ``(n,)`` float64 array.
    """
    x = as_real_array("x", x, 1, "(n,)")
    return circular_convolve(cyclic_reverse(zero_pad(a, x.size)), x)


def circulant_singular_values(a: ArrayLike, n: int) -> np.ndarray:
    r"""Singular values of :math:`C_a` (``a`` padded to ``n``): the moduli :math:`|\hat a_\omega|`, sorted descending.

    Because :math:`C_a = F^{-1}\operatorname{diag}(\hat a) F` and :math:`F/\sqrt n` is unitary,
    :math:`C_a` is normal with eigenvalues :math:`\hat a_\omega`, so its singular values are :math:`|\hat a_\omega|`.
    """
    return np.sort(np.abs(np.fft.fft(zero_pad(a, n))))[::-1]


def inverse_sqrt_psd(matrix: ArrayLike, eps: float = 0.0) -> np.ndarray:
    r"""The inverse square root :math:`(M + \varepsilon I)^{-1/2}` of a symmetric positive (semi)definite ``M``.

    Dense, by the eigendecomposition :math:`M = U \Lambda U^\top`:
    :math:`(M + \varepsilon I)^{-1/2} = U (\Lambda + \varepsilon)^{-1/2} U^\top`, which costs :math:`O(n^3)`.

    Raises:
        ValueError: if ``M`` is not square and symmetric, if ``eps < 0``, or if
            :math:`M + \varepsilon I` is singular (smallest eigenvalue at most
            machine precision times the largest).
    """
    m = as_real_array("matrix", matrix, 2, "(n, n)")
    if m.shape[0] != m.shape[1]:
        raise ValueError(f"matrix must be square, got shape {m.shape}")
    if not np.allclose(m, m.T, rtol=1e-10, atol=1e-12 * max(np.abs(m).max(), 1e-300)):
        raise ValueError("matrix must be symmetric")
    eps = check_non_negative("eps", eps)
    eigenvalues, vectors = np.linalg.eigh(m)
    shifted = eigenvalues + eps
    if shifted.min() <= np.finfo(np.float64).eps * max(abs(shifted).max(), np.finfo(np.float64).tiny):
        raise ValueError(
            f"matrix + eps*I is singular (smallest eigenvalue {shifted.min():.3g}); pass eps > 0"
        )
    return (vectors * shifted**-0.5) @ vectors.T
