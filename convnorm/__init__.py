"""ConvNorm: Convolutional Normalization for PyTorch (Liu et al., NeurIPS 2021).

At the top level: the layer (``ConvNorm2d``, ``ConvNorm1d``) and its functional form, the one-call
model conversion (``convert``, what it did in a ``ConversionSummary``, and ``revert`` where a
convolution represents a layer exactly), the error a layer's unfitting input raises
(``InputError``, both a ``ValueError`` and a ``RuntimeError``), ``clear_caches`` (frees the cached
transform matrices) and the spectral analysis of conv layers (``conv_singular_values``,
``analyse_conv_layers``); everything else lives in submodules named after what they hold
(``convnorm.reference``, the equation in one function; ``convnorm.fourier``,
``convnorm.circulant``, ``convnorm.conversion``, ...).
"""
from __future__ import annotations

from .conversion import ConversionSummary, convert, revert
from .fourier import kernel_power_spectrum, normalizer_spectrum
from .functional import clear_caches, conv_norm1d, conv_norm2d
from .layers import ConvNorm1d, ConvNorm2d
from .spectral import analyse_conv_layers, conv_singular_values
from .validation import InputError

__version__ = "0.1.0"

__all__ = [
    "ConversionSummary", "ConvNorm1d", "ConvNorm2d", "InputError", "analyse_conv_layers", "clear_caches",
    "conv_norm1d", "conv_norm2d", "conv_singular_values", "convert", "kernel_power_spectrum", "normalizer_spectrum",
    "revert",
]
