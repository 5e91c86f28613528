r"""Linear convolution, cross-correlation, padding, cropping and stride (the book's chapter 4).

Signals and kernels are indexed from 0; :math:`x \in \mathbb{R}^n`, :math:`a \in \mathbb{R}^m`.

* Linear convolution, length :math:`n + m - 1`:
  :math:`(a \circledast x)[t] = \sum_j a[j]\, x[t - j]`, with :math:`x` zero outside :math:`0..n-1`.
* Cross-correlation with zero padding :math:`p` (PyTorch's ``conv1d``), length
  :math:`n + 2p - m + 1`: :math:`(a \star_p x)[t] = \sum_j a[j]\, x[t + j - p]`.
* Cross-correlation is a flipped, cropped linear convolution:
  :math:`(a \star_p x)[t] = (\operatorname{flip}(a) \circledast x)[t + m - 1 - p]`.
* Linear convolution is circular convolution after zero padding both to :math:`n + m - 1`.

These are the pieces of the ConvNorm procedure for a zero-padded, strided layer (the paper's
appendix B), which :func:`convnorm.reference.conv_norm_reference` puts together.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from .circulant import circular_convolve, zero_pad
from .validation import ArrayLike, as_real_array, check_non_negative_int, check_weight, int_tuple

__all__ = [
    "linear_convolve",
    "linear_cross_correlate",
    "linear_as_circular",
    "crop",
    "downsample",
    "dilate_kernel",
    "channel_blocks",
    "tight_frame_distance",
]



def _signal_and_kernel(a: ArrayLike, x: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    return as_real_array("a", a, 1, "(m,)"), as_real_array("x", x, 1, "(n,)")


def linear_convolve(a: ArrayLike, x: ArrayLike) -> np.ndarray:
    r"""Linear convolution :math:`y[t] = \sum_{j=0}^{m-1} a[j]\, x[t-j]`, :math:`0 \le t < n + m - 1`.

    Computed from the definition: the sum of the shifted copies :math:`a[j]\, x[\cdot - j]`.
    """
    a, x = _signal_and_kernel(a, x)
    y = np.zeros(x.size + a.size - 1)
    for j, tap in enumerate(a):
        y[j : j + x.size] += tap * x
    return y


def linear_cross_correlate(a: ArrayLike, x: ArrayLike, padding: int = 0) -> np.ndarray:
    r"""Cross-correlation with zero padding :math:`p`: :math:`y[t] = \sum_j a[j]\, x[t + j - p]`.

    Output length :math:`n + 2p - m + 1` (what ``torch.nn.functional.conv1d`` returns).
    Computed from the definition, one shifted window per kernel tap.
    """
    a, x = _signal_and_kernel(a, x)
    padding = check_non_negative_int("padding", padding)
    padded = np.concatenate([np.zeros(padding), x, np.zeros(padding)])
    length = padded.size - a.size + 1
    if length < 1:
        raise ValueError(f"kernel of length {a.size} is longer than the padded signal ({padded.size})")
    y = np.zeros(length)
    for j, tap in enumerate(a):
        y += tap * padded[j : j + length]
    return y


def linear_as_circular(a: ArrayLike, x: ArrayLike) -> np.ndarray:
    r"""Linear convolution computed as a circular one: zero-pad ``a`` and ``x`` to :math:`L = n + m - 1`,
    then :math:`y = a * x` at length :math:`L` (no wrap-around can occur)."""
    a, x = _signal_and_kernel(a, x)
    length = a.size + x.size - 1
    return circular_convolve(zero_pad(a, length), zero_pad(x, length))


def _last_axes(name: str, y, amounts: Sequence[int], minimum: int) -> tuple[int, ...]:
    values = tuple(amounts)
    if not values or len(values) > y.ndim:
        raise ValueError(f"{name} needs between 1 and {y.ndim} entries, got {amounts!r}")
    if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < minimum for v in values):
        raise ValueError(f"{name} must contain ints >= {minimum}, got {amounts!r}")
    return tuple(int(v) for v in values)


def crop(y, amount: int | Sequence[int]):
    r"""Drop ``amount`` samples at both ends of each of the last ``len(amount)`` axes.

    ``crop(y, c)[t] = y[c + t]`` for :math:`0 \le t < L - 2c`. Works on numpy arrays and torch tensors.
    """
    amounts = _last_axes("amount", y, (amount,) if isinstance(amount, (int, np.integer)) else amount, 0)
    shape = y.shape[y.ndim - len(amounts) :]
    if any(2 * c >= length for c, length in zip(amounts, shape)):
        raise ValueError(f"cannot crop {amounts} from both ends of size {tuple(shape)}")
    return y[(...,) + tuple(slice(c, length - c) for c, length in zip(amounts, shape))]


def downsample(y, stride: int | Sequence[int]):
    r"""The downsampling operator :math:`D_s`: ``downsample(y, s)[t] = y[s t]`` on the last ``len(stride)`` axes."""
    strides = _last_axes("stride", y, (stride,) if isinstance(stride, (int, np.integer)) else stride, 1)
    return y[(...,) + tuple(slice(None, None, s) for s in strides)]


def dilate_kernel(weight: torch.Tensor, dilation: int | Sequence[int]) -> torch.Tensor:
    r"""The zero-stuffed kernel of a dilated convolution: ``out[..., d * j] = weight[..., j]``, size :math:`d(m-1)+1`.

    A convolution with dilation :math:`d` equals an undilated one with this kernel.
    """
    dil = int_tuple("dilation", dilation, check_weight(weight), 1)
    out = weight.new_zeros(*weight.shape[:2], *((k - 1) * v + 1 for k, v in zip(weight.shape[2:], dil)))
    out[(...,) + tuple(slice(None, None, v) for v in dil)] = weight
    return out


def channel_blocks(matrix: torch.Tensor, channels: int) -> list[torch.Tensor]:
    r"""Split a layer matrix :math:`Q = [Q_1; \dots; Q_{C_O}]` into its ``channels`` row blocks :math:`Q_k`."""
    if matrix.dim() != 2 or matrix.shape[0] % channels:
        raise ValueError(f"matrix must be 2D with a multiple of channels={channels} rows, got {tuple(matrix.shape)}")
    return list(matrix.reshape(channels, -1, matrix.shape[1]).unbind(0))


def tight_frame_distance(block: torch.Tensor, ord: int | str = 2) -> float:
    r"""How far the rows of :math:`Q_k` are from a tight frame: :math:`\|Q_k Q_k^\top - I\|`.

    ``ord=2`` (spectral norm) is zero exactly when :math:`Q_k Q_k^\top = I` and bounds how
    far every squared singular value of :math:`Q_k` is from 1; ``ord='fro'`` sums the
    errors of all entries (so it grows with the size when the error is spread out, and
    does not when it sits at a few boundary samples).
    """
    if block.dim() != 2:
        raise ValueError(f"block must be a matrix, got shape {tuple(block.shape)}")
    if ord not in (2, "fro"):
        raise ValueError(f"ord must be 2 or 'fro', got {ord!r}")
    gram = block @ block.T
    return float(torch.linalg.matrix_norm(gram - torch.eye(gram.shape[0], dtype=gram.dtype), ord=ord))

