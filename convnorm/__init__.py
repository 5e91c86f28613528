"""ConvNorm: Convolutional Normalization for PyTorch (Liu et al., NeurIPS 2021).

The layer (``ConvNorm2d``, ``ConvNorm1d``), the one-call model conversion
(``convert``) and the spectral analysis of conv layers (``conv_singular_values``) are
available at the top level; everything else lives in submodules named after what they
hold (``convnorm.fourier``, ``convnorm.circulant``, ``convnorm.data``, ...).
Submodules load on first use, so ``import convnorm`` stays cheap.
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name -> submodule that defines it
_EXPORTS = {
    "kernel_power_spectrum": "convnorm.fourier",
    "normalizer_spectrum": "convnorm.fourier",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'convnorm' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
