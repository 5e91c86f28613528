r"""One input channel, one output channel: ConvNorm as an all-pass reparametrisation.

For a kernel :math:`a` acting on circular signals of length :math:`n` (the paper's
section 3.1, after the blind-deconvolution preconditioner of Qu et al. 2019):

.. math::

    \begin{aligned}
    P &= (C_a C_a^\top)^{-1/2} = C_v, & \hat v &= |\hat a|^{-1}, \\
    Q(a) &= P C_a = C_g, & \hat g &= \hat a \odot |\hat a|^{-1}.
    \end{aligned}

:math:`Q(a)` is orthogonal and :math:`g` is an *all-pass* filter: :math:`|\hat g| = 1`,
and :math:`\hat g` has the phase of :math:`\hat a`. With a regulariser
:math:`\varepsilon \ge 0` every :math:`|\hat a|^{-1}` becomes
:math:`(|\hat a|^2 + \varepsilon)^{-1/2}` (the normalizer of :mod:`convnorm.fourier`).
"""
from __future__ import annotations

import numpy as np
import torch

from .circulant import circulant, circular_convolve, inverse_sqrt_psd, zero_pad
from .fourier import normalizer_spectrum
from .validation import (
    ArrayLike,
    as_real_array,
    check_kernel_fits,
    check_non_negative,
    check_positive,
    check_positive_int,
)


def preconditioner_dense(a: ArrayLike, n: int, eps: float = 0.0) -> np.ndarray:
    r"""The dense preconditioner :math:`P = (C_a C_a^\top + \varepsilon I)^{-1/2}`, ``(n, n)``, in :math:`O(n^3)`."""
    c = circulant(a, n)
    return inverse_sqrt_psd(c @ c.T, eps)


def normalizer_filter(kernels: ArrayLike, n: int, eps: float = 0.0) -> np.ndarray:
    r"""The filter :math:`v` with :math:`\hat v = \bigl(\sum_i |\hat a_i|^2 + \varepsilon\bigr)^{-1/2}`,
    so that :math:`C_v = P`.

    ``kernels`` is one kernel ``(k,)`` (then :math:`\hat v = (|\hat a|^2 + \varepsilon)^{-1/2}`
    and :math:`C_v = (C_a C_a^\top + \varepsilon I)^{-1/2}`), or the ``(C_I, k)`` kernels
    of one output channel (then :math:`C_v = (A A^\top + \varepsilon I)^{-1/2}` with
    :math:`A = [C_{a_1} \cdots C_{a_{C_I}}]`). The spectrum comes from
    :func:`convnorm.fourier.normalizer_spectrum`; :math:`v = F^{-1}\hat v` is real because
    :math:`\hat v` is real and even. Cost :math:`O(n \log n)`.

    Returns:
        ``(n,)`` float64 array.

    Raises:
        ValueError: for bad shapes or values, a kernel longer than ``n``, ``eps < 0``, or,
            when ``eps == 0``, a spectrum that vanishes numerically at some frequency,
            :math:`\min_\omega \hat v_\omega \le \sqrt{u}\, \max_\omega \hat v_\omega` with :math:`u` the
            float64 machine epsilon, i.e. a condition number :math:`\ge u^{-1/2} \approx 6.7 \cdot 10^7`
            (then :math:`C_a C_a^\top` is singular to working precision and :math:`P` does not exist).
    """
    array = as_real_array("kernels", kernels, (1, 2), "(k,) or (C_I, k)")
    n = check_positive_int("n", n)
    check_kernel_fits(array.shape[-1:], (n,))
    eps = check_non_negative("eps", eps)
    weight = torch.from_numpy(array.reshape(1, -1, array.shape[-1]))
    v_hat = normalizer_spectrum(weight, n, eps, onesided=False)[0].numpy()
    if eps == 0 and not v_hat.max() * np.sqrt(np.finfo(np.float64).eps) < v_hat.min():
        raise ValueError(
            "kernels have a (numerically) vanishing spectrum at frequency "
            f"{int(np.argmax(v_hat))} of {n}: C_a C_a^T is singular; pass eps > 0"
        )
    return np.fft.ifft(v_hat).real


def allpass_filter(a: ArrayLike, n: int, eps: float = 0.0) -> np.ndarray:
    r"""The normalised kernel :math:`g = v * a`, :math:`\hat g = \hat a \odot (|\hat a|^2 + \varepsilon)^{-1/2}`,
    so :math:`C_g = Q(a) = P C_a`.

    With ``eps = 0`` this is an all-pass filter: :math:`|\hat g_\omega| = 1` for every :math:`\omega`.

    Returns:
        ``(n,)`` float64 array.
    """
    a = as_real_array("a", a, 1, "(k,)")
    return circular_convolve(normalizer_filter(a, n, eps), zero_pad(a, n))


def sample_normalizer_filter(outputs: ArrayLike, variance: float = 1.0, eps: float = 0.0) -> np.ndarray:
    r"""The blind-deconvolution preconditioner from output samples, as a filter :math:`w` with :math:`C_w = \tilde P`.

    For outputs :math:`y_i = a * x_i` (:math:`i = 0, \dots, N-1`) of i.i.d. zero-mean inputs with
    entry variance :math:`\nu`, :math:`\mathbb{E}[C_{x_i} C_{x_i}^\top] = n\nu I`, so

    .. math:: \begin{aligned}
              \tilde P &= \Bigl(\tfrac{1}{n\nu N} \textstyle\sum_i C_{y_i} C_{y_i}^\top + \varepsilon I\Bigr)^{-1/2} \\
              &\xrightarrow{N \to \infty} (C_a C_a^\top + \varepsilon I)^{-1/2} = P.
              \end{aligned}

    :math:`\tilde P` is the multichannel normalizer of :func:`normalizer_filter` with the
    :math:`N` rescaled samples :math:`y_i / \sqrt{n\nu N}` as its "kernels", and is computed that way.

    Args:
        outputs: ``(N, n)``, one output sample per row.
        variance: :math:`\nu`, the variance of the inputs' entries.
        eps: regulariser :math:`\varepsilon \ge 0`.

    Returns:
        ``(n,)`` float64 array.
    """
    z = as_real_array("outputs", outputs, 2, "(m, n)")
    variance = check_positive("variance", variance)
    m, n = z.shape
    return normalizer_filter(z * np.sqrt(1.0 / (n * variance * m)), n, eps)
