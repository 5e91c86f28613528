"""Conv layers "with a normalization", the building block of every model here.

``norm`` picks what follows (or replaces) each convolution:

=============== =====================================================================
``none``        plain ``nn.Conv2d`` (with bias)
``bn``          ``nn.Conv2d`` (no bias) then ``nn.BatchNorm2d``
``convnorm``    :class:`convnorm.layers.ConvNorm2d` with a bias (its affine transform on
                unless ``affine=False``)
``sn``          ``nn.Conv2d`` under ``torch.nn.utils.parametrizations.spectral_norm``
                (one power iteration, as in the paper)
``oni``         ``nn.Conv2d`` under :func:`convnorm.baselines.oni`
``ocnn``        :class:`convnorm.baselines.OCNNConv2d`: a plain conv; the trainer adds
                λ times its orthogonality penalty (:class:`~convnorm.baselines.OCNNRegularizer`)
``cayley``      :class:`convnorm.baselines.CayleyConv2d` (circular padding; run-time study)
``X+bn``        any of ``convnorm``, ``sn``, ``oni``, ``ocnn`` followed by
                ``nn.BatchNorm2d``; ``convnorm+bn`` is what the authors' code calls
                ConvNorm (its BatchNorm is built in)
=============== =====================================================================

Weights are initialised Xavier-uniform (Glorot & Bengio 2010), biases at zero, as the
paper states. (PyTorch's own default is a scaled Kaiming-uniform, not Xavier.)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn.utils import parametrize
from torch.nn.utils.parametrizations import _SpectralNorm

from .._precision import fp32_region
from .._validation import check_choice

NORMS = ("none", "bn", "convnorm", "convnorm+bn", "sn", "sn+bn", "oni", "oni+bn", "ocnn", "ocnn+bn",
         "cayley")


@dataclass(frozen=True)
class NormOptions:
    """Options of the normalizations: ConvNorm's ``affine``, ``eps`` and ``ramp_steps``
    (None: the layer's default), ONI's ``oni_iterations`` and ``oni_scale``, SN's power
    iterations."""

    affine: bool = True
    eps: float | None = None
    ramp_steps: int | None = None
    oni_iterations: int = 5
    oni_scale: float = math.sqrt(2)
    sn_iterations: int = 1


def check_norm(norm: str) -> str:
    check_choice("norm", norm, NORMS)
    return norm


def _xavier(module: nn.Module) -> nn.Module:
    nn.init.xavier_uniform_(module.weight)
    if getattr(module, "bias", None) is not None:
        nn.init.zeros_(module.bias)
    return module


def conv_block(norm: str, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
               padding: int = 0, options: NormOptions = NormOptions()) -> nn.Module:
    """A convolution with normalization ``norm`` (table in the module docstring)."""
    check_norm(norm)
    base, _, with_bn = norm.partition("+")
    conv = _conv(base, bool(with_bn), in_channels, out_channels, kernel_size, stride, padding, options)
    return nn.Sequential(conv, nn.BatchNorm2d(out_channels)) if with_bn else conv


def _conv(base: str, with_bn: bool, in_channels: int, out_channels: int, kernel_size: int, stride: int,
          padding: int, options: NormOptions) -> nn.Module:
    args = (in_channels, out_channels, kernel_size)
    kw = {"stride": stride, "padding": padding}
    if base == "convnorm":
        from ..layers import ConvNorm2d  # imported here: the layer lives in its own module

        extra = {name: value for name, value in (("eps", options.eps), ("ramp_steps", options.ramp_steps))
                 if value is not None}
        # a bias before BatchNorm is useless (BN brings one); without BN the layer keeps
        # its per-channel bias, affine or not, as the authors' affine convolution has one
        return _xavier(ConvNorm2d(*args, **kw, bias=not with_bn, affine=options.affine, **extra))
    if base == "bn":
        return nn.Sequential(_xavier(nn.Conv2d(*args, **kw, bias=False)), nn.BatchNorm2d(out_channels))
    if base == "cayley":
        from ..baselines.cayley import CayleyConv2d

        return CayleyConv2d(*args, stride=stride)
    if base == "ocnn":
        from ..baselines.ocnn import OCNNConv2d

        return _xavier(OCNNConv2d(*args, **kw, bias=not with_bn))
    conv = _xavier(nn.Conv2d(*args, **kw, bias=not with_bn))
    if base == "sn":
        parametrize.register_parametrization(conv, "weight", _Float32SpectralNorm(conv.weight, options.sn_iterations))
        return conv
    if base == "oni":
        from ..baselines.oni import oni

        return oni(conv, options.oni_iterations, options.oni_scale)
    return conv


class _Float32SpectralNorm(_SpectralNorm):
    """PyTorch's spectral normalization (``torch.nn.utils.parametrizations.spectral_norm``,
    the same state), its power iteration and division computed in float32 under autocast,
    as ConvNorm's normalizer is: under mixed precision every reparametrization of the
    compared methods then runs in the same precision."""

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        with fp32_region(weight)[0]:
            return super().forward(weight)


def linear(in_features: int, out_features: int) -> nn.Linear:
    """The classifier layer, Xavier-uniform initialised."""
    return _xavier(nn.Linear(in_features, out_features))
