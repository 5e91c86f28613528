"""Argument checks shared by the whole package.

Every public function validates its input with these helpers so that bad input
raises a :class:`ValueError` whose message names the offending argument, instead
of failing deep inside an FFT or returning something silently wrong. An input a layer is called
with that does not fit it raises :class:`InputError`, a ``ValueError`` that is also the
``RuntimeError`` a convolution raises; a non-tensor input raises ``TypeError``, as it does there.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from typing import TypeGuard

import numpy as np
import torch

ArrayLike = np.ndarray | Sequence[float]
"""What the NumPy teaching functions accept: anything ``numpy.asarray`` makes a real array of."""

WEIGHT_LAYOUTS = {1: "(C_out, C_in, m)", 2: "(C_out, C_in, m_1, m_2)"}
"""The layout of a conv weight with one or two kernel dimensions, as error messages state it."""


class InputError(ValueError, RuntimeError):
    """A layer's input that does not fit it: its shape, channels, size or dtype.

    Both a ``ValueError`` (as every argument error of the package) and a ``RuntimeError`` (what
    ``nn.Conv2d`` raises for the same input), so code written for either catches it; the message
    names the argument and says what was expected."""


def check_input_tensor(value) -> None:
    """``TypeError`` naming the type unless the input ``value`` is a ``torch.Tensor`` (as a
    convolution refuses a list or an array)."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"input must be a torch.Tensor, got {type(value).__name__}")


def check_finite(name: str, value: np.ndarray | torch.Tensor) -> None:
    """Raise ``ValueError`` if ``value`` contains NaN or infinity."""
    finite = torch.isfinite(value).all() if isinstance(value, torch.Tensor) else np.isfinite(value).all()
    if not bool(finite):
        raise ValueError(f"{name} contains non-finite values (NaN or inf)")


def check_ndim(name: str, value: np.ndarray | torch.Tensor, ndim: int | Sequence[int], meaning: str) -> None:
    """Raise ``ValueError`` unless ``value.ndim`` is ``ndim`` (or one of them).

    ``meaning`` describes the expected layout, e.g. ``"(C_out, C_in, m)"``.
    """
    allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    if value.ndim not in allowed:
        raise ValueError(f"{name} must have shape {meaning}, got {tuple(value.shape)}")


def check_tensor(name: str, value) -> None:
    """Raise ``ValueError`` unless ``value`` is a ``torch.Tensor``."""
    if not isinstance(value, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(value).__name__}")


def check_weight(weight, kernel_dims: Sequence[int] = (1, 2)) -> int:
    """The number of kernel dimensions of a conv ``weight`` ``(C_out, C_in, *kernel)``, one of
    ``kernel_dims``; ``ValueError`` stating the expected layout otherwise."""
    check_tensor("weight", weight)
    d = weight.dim() - 2
    if d not in kernel_dims:
        layouts = " or ".join(WEIGHT_LAYOUTS[k] for k in kernel_dims)
        raise ValueError(f"weight must have shape {layouts}, got {tuple(weight.shape)}")
    return d


def as_real_array(name: str, value: ArrayLike, ndim: int | Sequence[int], meaning: str) -> np.ndarray:
    """``value`` as a non-empty, finite float64 array with ``ndim`` dimensions, else ``ValueError``."""
    array = np.asarray(value)
    if np.iscomplexobj(array):
        raise ValueError(f"{name} must be real, got dtype {array.dtype}")
    try:
        array = array.astype(np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be numeric, got dtype {array.dtype}") from error
    check_ndim(name, array, ndim, meaning)
    if array.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {array.shape}")
    check_finite(name, array)
    return array


def is_int(value) -> TypeGuard[int | np.integer]:
    """An integer that is not a bool: a Python or NumPy integer (as ``nn.Conv2d`` accepts)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_positive_int(name: str, value: int) -> int:
    """Return ``value`` if it is a positive integer, else raise ``ValueError``."""
    if not is_int(value) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def check_non_negative_int(name: str, value: int) -> int:
    """Return ``value`` if it is an integer ``>= 0``, else raise ``ValueError``."""
    if not is_int(value) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return int(value)


def check_choice(name: str, value, choices: Sequence) -> None:
    """Raise ``ValueError`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")


def check_divisible(name: str, value: int, divisor_name: str, divisor: int) -> None:
    """Raise ``ValueError`` unless ``divisor`` divides ``value``."""
    if value % divisor:
        raise ValueError(f"{name} must be divisible by {divisor_name}, got {value} and {divisor_name}={divisor}")


def int_tuple(name: str, value: int | Iterable[int], ndim: int, minimum: int = 1) -> tuple[int, ...]:
    """``value``, an integer or ``ndim`` of them, as a tuple of ``ndim`` Python ints of at least
    ``minimum``; ``ValueError`` naming ``name`` otherwise (a float too: a size is a count)."""
    if is_int(value):
        values: tuple = (int(value),) * ndim
    elif isinstance(value, Iterable) and not isinstance(value, str):
        values = tuple(value)
    else:
        values = ()
    if len(values) != ndim or not all(is_int(v) and v >= minimum for v in values):
        kind = "positive" if minimum == 1 else "non-negative"
        raise ValueError(f"{name} must be a {kind} int or a tuple of {ndim} such ints, got {value!r}")
    return tuple(int(v) for v in values)


def check_non_negative(name: str, value: float) -> float:
    """``value`` as a float if it is a finite real number ``>= 0``, else ``ValueError`` (an
    infinite :math:`\\varepsilon` would silently zero a normalized output)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) or not math.isfinite(value) \
            or value < 0:
        raise ValueError(f"{name} must be a finite non-negative number, got {value!r}")
    return float(value)


def check_positive(name: str, value: float) -> float:
    """``value`` as a float if it is a finite real number ``> 0``, else ``ValueError``."""
    if check_non_negative(name, value) == 0:
        raise ValueError(f"{name} must be a finite positive number, got {value!r}")
    return float(value)


def check_fraction(name: str, value: float, *, open_low: bool = False, open_high: bool = False) -> float:
    """``value`` as a float if it is a real number in [0, 1] (without 0 if ``open_low``, without
    1 if ``open_high``), else ``ValueError`` naming ``name`` (NaN and strings included)."""
    interval = f"{'(' if open_low else '['}0, 1{')' if open_high else ']'}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) or not (
            (0 < value if open_low else 0 <= value) and (value < 1 if open_high else value <= 1)):
        raise ValueError(f"{name} must lie in {interval}, got {value!r}")
    return float(value)


def as_size(name: str, size: int | Sequence[int], ndim: int) -> tuple[int, ...]:
    """Normalise a signal size to a tuple of ``ndim`` positive integers."""
    sizes = tuple(size) if isinstance(size, Iterable) and not isinstance(size, str) else (size,) * ndim
    if len(sizes) != ndim:
        raise ValueError(f"{name} must have {ndim} entries, got {size!r}")
    return tuple(check_positive_int(name, s) for s in sizes)


def check_kernel_fits(kernel_size: Sequence[int], size: Sequence[int], what: str = "signal") -> None:
    """Raise ``ValueError`` if a kernel is longer than the signal it acts on."""
    for k, n in zip(kernel_size, size):
        if k > n:
            raise ValueError(f"kernel size {tuple(kernel_size)} is larger than the {what} size {tuple(size)}")
