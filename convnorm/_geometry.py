"""A ConvNorm layer's arguments, checked, and the sizes of its normalization.

:func:`layer_geometry` turns the arguments of :func:`convnorm.functional.conv_norm` into one
:class:`LayerGeometry`, raising ``ValueError`` (naming the argument) for anything the
appendix procedure cannot honour exactly; every computation takes that structure.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch
import torch.nn.functional as F

from .validation import InputError, check_input_tensor, check_weight, int_tuple, is_int

PADDING_MODES = ("zeros", "circular")

CONV = {1: F.conv1d, 2: F.conv2d}
"""The convolution of each number of spatial dimensions."""


class LayerGeometry(NamedTuple):
    """The checked arguments of one layer on one input size, and its normalization sizes."""

    stride: tuple[int, ...]
    padding: tuple[int, ...]
    """The zero (or circular) padding before the input per axis (``'same'`` with an even kernel
    pads one more after)."""
    dilation: tuple[int, ...]
    groups: int
    padding_mode: str
    kernel: tuple[int, ...]
    """The effective (dilated) kernel size :math:`d (m - 1) + 1` per axis, for :math:`m` taps."""
    size: tuple[int, ...]
    """The input size :math:`n` per axis."""
    length: tuple[int, ...]
    """The normalization size :math:`L`: :math:`n + m - 1` (zeros) or :math:`n` (circular)."""
    offset: tuple[int, ...]
    """The crop :math:`c`: the output starts at sample :math:`m - 1 - p` of the full
    convolution (zeros), at 0 (circular)."""
    out_size: tuple[int, ...]
    """The output size :math:`\\lfloor (n + 2p - m)/s \\rfloor + 1` per axis."""


def plane_sizes(sizes: tuple[int, ...]) -> tuple[int, int]:
    """``sizes`` of a plane, two of them (a 1D signal is one row of a plane), as the dense DFTs take them."""
    if len(sizes) != 2:
        raise ValueError(f"the dense DFT is of a plane: two sizes, got {sizes}")
    return sizes[0], sizes[1]


def resolve_padding(kernel_size: Sequence[int], stride: Sequence[int], padding: Sequence[int] | str,
                    dilation: Sequence[int], padding_mode: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Check that the appendix procedure is defined for these arguments; return the zero padding
    before and after the input along each axis.

    Resolves ``padding='same'``/``'valid'`` to integers as ``nn.Conv2d`` does (``'same'`` with an
    even effective kernel pads one sample more after than before) and raises ``ValueError``
    (naming the argument) for anything ConvNorm cannot honour exactly: other padding modes,
    zeros padding larger than ``dilation * (kernel_size - 1)`` (the full output would not contain
    the requested one), circular padding other than half the (odd) effective kernel (the
    operator would not be a circulant on the input; ``'valid'`` is padding 0, so it is refused
    with circular padding unless the kernel has one tap), ``'same'`` with a stride.
    """
    if padding_mode not in PADDING_MODES:
        raise ValueError(
            f"padding_mode must be one of {PADDING_MODES} (ConvNorm is defined for zero and "
            f"circular padding only), got padding_mode={padding_mode!r}"
        )
    span = tuple(dl * (k - 1) + 1 for k, dl in zip(kernel_size, dilation))
    if padding == "valid":
        before = after = (0,) * len(span)
    elif isinstance(padding, str):
        if padding != "same":
            raise ValueError(f"padding must be an int, a tuple, 'same' or 'valid', got {padding!r}")
        if any(s != 1 for s in stride):
            raise ValueError(f"padding='same' requires stride 1, got stride={tuple(stride)}")
        before = tuple((m - 1) // 2 for m in span)
        after = tuple(m - 1 - b for m, b in zip(span, before))
    else:
        before = after = tuple(padding)
    if padding_mode == "zeros" and any(p > m - 1 for p, m in zip(after, span)):
        raise ValueError(
            f"padding must be at most dilation * (kernel_size - 1) = {tuple(m - 1 for m in span)} "
            f"with padding_mode='zeros', got padding={padding if isinstance(padding, str) else tuple(padding)}"
        )
    if padding_mode == "circular" and any(b + a != m - 1 or b != a for b, a, m in zip(before, after, span)):
        raise ValueError(
            "padding must equal (dilation * (kernel_size - 1)) / 2 with padding_mode='circular' "
            f"(an odd effective kernel {span}), got padding={padding if isinstance(padding, str) else tuple(padding)}"
        )
    return before, after


def conv_arguments(d: int, stride, padding, dilation) -> tuple[tuple[int, ...], tuple[int, ...] | str, tuple[int, ...]]:
    """``stride``, ``padding`` (unless a string) and ``dilation`` as tuples of ``d`` ints
    (NumPy integers accepted, as ``nn.Conv2d`` does), ``ValueError`` naming the argument."""
    if not isinstance(padding, str):
        padding = int_tuple("padding", padding, d, 0)
    return int_tuple("stride", stride, d, 1), padding, int_tuple("dilation", dilation, d, 1)


def layer_geometry(input: torch.Tensor, weight: torch.Tensor, stride, padding, dilation, groups, padding_mode: str,
                   bias: torch.Tensor | None = None, affine_weight: torch.Tensor | None = None) -> LayerGeometry:
    """Check the tensors and convolution arguments of :func:`convnorm.functional.conv_norm`
    (``ValueError`` naming the argument) and return the layer's :class:`LayerGeometry`. What
    does not fit in ``input`` raises :class:`~convnorm.validation.InputError` (also the
    ``RuntimeError`` of a convolution), a non-tensor ``input`` ``TypeError``."""
    check_input_tensor(input)
    d = check_weight(weight)
    if not weight.is_floating_point():
        raise ValueError(f"weight must be a floating-point tensor, got dtype {weight.dtype}")
    if not input.is_floating_point():
        raise InputError(f"input must be a floating-point tensor, got dtype {input.dtype}")
    if input.dim() != d + 2:
        layout = "(N, C_in, n)" if d == 1 else "(N, C_in, H, W)"
        raise InputError(f"input must have shape {layout}, got {tuple(input.shape)}")
    c_out = weight.shape[0]
    if not is_int(groups) or groups < 1 or c_out % groups:
        raise ValueError(f"groups must be a positive int dividing C_out = {c_out}, got {groups!r}")
    groups = int(groups)
    if input.shape[1] != weight.shape[1] * groups:
        raise InputError(
            f"input has {input.shape[1]} channels, expected C_in = {weight.shape[1] * groups} "
            f"(weight {tuple(weight.shape)}, groups={groups})"
        )
    if bias is not None and (not isinstance(bias, torch.Tensor) or tuple(bias.shape) != (c_out,)):
        raise ValueError(f"bias must have shape ({c_out},) or be None, got {getattr(bias, 'shape', bias)!r}")
    stride, padding, dilation = conv_arguments(d, stride, padding, dilation)
    padding, after = resolve_padding(tuple(weight.shape[2:]), stride, padding, dilation, padding_mode)
    kernel = tuple(dl * (k - 1) + 1 for k, dl in zip(weight.shape[2:], dilation))
    size = tuple(input.shape[2:])
    if padding_mode == "circular":
        if any(m > n for m, n in zip(kernel, size)):
            raise InputError(f"kernel size {kernel} (with dilation) is larger than the input size {size}")
        length, offset = size, (0,) * d
    else:
        length = tuple(n + m - 1 for n, m in zip(size, kernel))
        offset = tuple(m - 1 - p for m, p in zip(kernel, padding))
    out_size = tuple((n + p + q - m) // s + 1 for n, p, q, m, s in zip(size, padding, after, kernel, stride))
    if any(o < 1 for o in out_size):
        raise InputError(f"input size {size} is too small for kernel {kernel} with padding {padding}")
    if affine_weight is not None:
        _check_affine_weight(affine_weight, c_out, kernel, length)
    return LayerGeometry(stride, padding, dilation, groups, padding_mode, kernel, size, length, offset, out_size)


def check_dtypes(input: torch.Tensor, weight: torch.Tensor, autocast: torch.dtype | None) -> None:
    """:class:`~convnorm.validation.InputError` naming both dtypes when ``input`` and ``weight``
    differ outside ``torch.autocast`` (``autocast`` None), as a convolution refuses them; under
    autocast both are computed in its dtypes."""
    if autocast is None and input.dtype != weight.dtype:
        raise InputError(f"input is {input.dtype} but weight is {weight.dtype}: give the layer and its input one "
                         "dtype (layer.to(dtype), or input.to(layer.weight.dtype)), or run under torch.autocast")


def _check_affine_weight(affine_weight, c_out: int, kernel: tuple[int, ...], length: tuple[int, ...]) -> None:
    """``ValueError`` unless ``affine_weight`` is ``(C_out, *taps)`` with taps that fit the
    normalization size ``length`` (one tap for a 1x1 kernel)."""
    if not isinstance(affine_weight, torch.Tensor) or affine_weight.dim() != len(kernel) + 1 \
            or affine_weight.shape[0] != c_out:
        raise ValueError(f"affine_weight must have shape (C_out, *taps) with C_out = {c_out}, "
                         f"got {tuple(getattr(affine_weight, 'shape', ()))}")
    taps = tuple(affine_weight.shape[1:])
    if all(m == 1 for m in kernel) and any(t != 1 for t in taps):
        raise ValueError(f"affine_weight of a 1x1 layer must have one tap per channel, "
                         f"got {tuple(affine_weight.shape)}")
    if any(t > n for t, n in zip(taps, length)):
        raise ValueError(f"affine kernel {taps} is larger than the normalization size {length}")
