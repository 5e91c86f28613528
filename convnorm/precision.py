"""The precision ConvNorm computes in: float32 for half-precision data and under autocast.

The transforms of half-precision data lose too much (and ``torch.fft`` takes no
``bfloat16``), so such layers compute in float32 and return the dtype a convolution would:
the autocast dtype under ``torch.autocast``, else the input's.
"""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable

import torch

HALF_DTYPES = (torch.float16, torch.bfloat16)
"""Dtypes computed in float32 and cast back."""

FLOAT_DTYPES = (torch.float32, torch.float64)
"""Dtypes computed in themselves."""


def fp32_region(input: torch.Tensor) -> tuple[contextlib.AbstractContextManager, torch.dtype | None]:
    """A context that disables autocast (if on), and the dtype to return after computing in
    float32: under autocast the dtype a conv would return; otherwise the input's dtype if it
    is one of ``HALF_DTYPES`` (a ``model.half()``), else None (computed in the input's dtype;
    also on device types without autocast, such as ``meta``)."""
    device_type = input.device.type
    if torch.amp.is_autocast_available(device_type) and torch.is_autocast_enabled(device_type):
        return torch.autocast(device_type, enabled=False), torch.get_autocast_dtype(device_type)
    return contextlib.nullcontext(), input.dtype if input.dtype in HALF_DTYPES else None


def as_float(t: torch.Tensor | None, dtype: torch.dtype | None) -> torch.Tensor | None:
    """``t`` in float32 if it is a floating-point tensor and ``dtype`` (from :func:`fp32_region`)
    is set, else ``t`` unchanged."""
    return t if t is None or dtype is None or not t.is_floating_point() else t.float()


def without_autocast(function: Callable) -> Callable:
    """``function(input, ...)`` with ``torch.autocast`` off on ``input``'s device, so that it
    computes in its arguments' own dtype (a decorator: the function's body stays as written)."""
    @functools.wraps(function)
    def wrapper(input: torch.Tensor, *args, **kwargs):
        with fp32_region(input)[0]:
            return function(input, *args, **kwargs)

    return wrapper
