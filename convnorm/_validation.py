"""Argument checks shared by the whole package.

Every public function validates its input with these helpers so that bad input
raises a :class:`ValueError` whose message names the offending argument, instead
of failing deep inside an FFT or returning something silently wrong.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

ArrayLike = np.ndarray | torch.Tensor


def check_finite(name: str, value: ArrayLike) -> None:
    """Raise ``ValueError`` if ``value`` contains NaN or infinity."""
    finite = torch.isfinite(value).all() if isinstance(value, torch.Tensor) else np.isfinite(value).all()
    if not bool(finite):
        raise ValueError(f"{name} contains non-finite values (NaN or inf)")


def check_ndim(name: str, value: ArrayLike, ndim: int | Sequence[int], meaning: str) -> None:
    """Raise ``ValueError`` unless ``value.ndim`` is ``ndim`` (or one of them).

    ``meaning`` describes the expected layout, e.g. ``"(C_out, C_in, k)"``.
    """
    allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    if value.ndim not in allowed:
        raise ValueError(f"{name} must have shape {meaning}, got {tuple(value.shape)}")


def check_positive_int(name: str, value: int) -> int:
    """Return ``value`` if it is a positive integer, else raise ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def as_size(name: str, size: int | Sequence[int], ndim: int) -> tuple[int, ...]:
    """Normalise a signal size to a tuple of ``ndim`` positive integers."""
    sizes = (size,) * ndim if isinstance(size, (int, np.integer)) else tuple(size)
    if len(sizes) != ndim:
        raise ValueError(f"{name} must have {ndim} entries, got {size!r}")
    return tuple(check_positive_int(name, s) for s in sizes)


def check_kernel_fits(kernel_size: Sequence[int], size: Sequence[int], what: str = "signal") -> None:
    """Raise ``ValueError`` if a kernel is longer than the signal it acts on."""
    for k, n in zip(kernel_size, size):
        if k > n:
            raise ValueError(f"kernel size {tuple(kernel_size)} is larger than the {what} size {tuple(size)}")
