"""The normalizations a network can have, each declared once.

A :class:`Normalization` is a method applied to every convolution of a network. Its
declaration holds everything about it: its key, as records, run keys and presets name it
(``"oni"``); its label, as a reader reads it (``"ONI"``, the paper's name); the convolution
it builds; whether a BatchNorm may follow it; the penalty a training adds to the loss
(OCNN's orthogonality penalty, with its weights); the divisor of its learning rate
(ONI's); what of it computes in float32 under mixed precision; whether its network keeps
channels-last images; and which measured networks stand in for its step time where its
own was not measured. The models, the experiments, the GPU queue and the book read these
declarations (:data:`NORMALIZATIONS`) and nothing else: adding a method is one declaration
here, and its layer in :mod:`convnorm_lab.baselines`.

A network's normalization is a :class:`Norm`: a declared method alone, or followed by
BatchNorm, written as its key (``Norm("oni+bn")``). A :class:`Norm` is the string of its
key, so it is stored in records, hashed into run keys and compared as that key; its
attributes read the declaration. The module's constants (:data:`NONE`, :data:`BN`,
:data:`CONVNORM`, :data:`CONVNORM_BN`, ...) name every network the experiments compare.

Every convolution is initialised Xavier-uniform (Glorot & Bengio 2010), its bias at zero,
as the paper states (PyTorch's own default is a scaled Kaiming-uniform, not Xavier).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn.utils import parametrize
from torch.nn.utils.parametrizations import _SpectralNorm

from convnorm.functional import current_policy
from convnorm.layers import ConvNorm2d
from convnorm.precision import fp32_region
from convnorm.validation import check_choice

from ..baselines.cayley import CayleyConv2d
from ..baselines.ocnn import OCNNConv2d, OCNNRegularizer
from ..baselines.oni import oni


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


@dataclass(frozen=True)
class ConvShape:
    """What a convolution of a network is asked to be: its channels, kernel, stride and
    zero padding, and whether a BatchNorm follows it (which makes its bias useless)."""

    in_channels: int
    out_channels: int
    kernel_size: int
    stride: int
    padding: int
    batchnorm_follows: bool

    @property
    def conv_args(self) -> tuple[tuple[int, int, int], dict]:
        """``nn.Conv2d``'s positional and stride/padding arguments."""
        return ((self.in_channels, self.out_channels, self.kernel_size),
                {"stride": self.stride, "padding": self.padding})


@dataclass(frozen=True)
class Penalty:
    r"""A penalty :math:`\lambda L(\text{model})` a training adds to its loss: ``weight``
    :math:`\lambda` in a standard training, ``adversarial_weight`` under free adversarial
    training, and ``regularizer``, which makes the trainer's ``model -> λ L(model)`` of a
    weight."""

    weight: float
    adversarial_weight: float
    regularizer: Callable[[float], Callable[[nn.Module], torch.Tensor]]

    def weight_for(self, adversarial: bool) -> float:
        return self.adversarial_weight if adversarial else self.weight


def xavier(module: nn.Module) -> nn.Module:
    """``module``'s weight Xavier-uniform and its bias (if any) zero, in place."""
    nn.init.xavier_uniform_(module.weight)
    if getattr(module, "bias", None) is not None:
        nn.init.zeros_(module.bias)
    return module


def _on_every_device(device_type: str) -> bool:
    return True


@dataclass(frozen=True)
class Normalization:
    """One method applied to every convolution of a network (see the module).

    ``key``: its name in records, run keys and presets; ``label``: its name for a reader;
    ``build``: the convolution of a :class:`~convnorm_lab.models.normalizations.ConvShape`,
    with the :class:`NormOptions`;
    ``followable``: a BatchNorm may follow it (``key + "+bn"``); ``penalty``: what a
    training adds to the loss (None: nothing); ``lr_divisor``: its learning rate is the
    base rate divided by this; ``float32``: what of it computes in float32 under mixed
    precision (None: nothing of its own); ``keeps_channels_last``: whether its network keeps
    channels-last images on a device type (a layer that would convert them at every call
    does not); ``stand_ins``: the keys of the measured networks whose step time stands in
    for an unmeasured one of it, in order of preference (a key never stands in for itself).
    """

    key: str
    label: str
    build: Callable[[ConvShape, NormOptions], nn.Module]
    followable: bool = False
    penalty: Penalty | None = None
    lr_divisor: float = 1
    float32: str | None = None
    keeps_channels_last: Callable[[str], bool] = _on_every_device
    stand_ins: tuple[str, ...] = ()


def _plain(shape: ConvShape, options: NormOptions) -> nn.Module:
    args, kw = shape.conv_args
    return xavier(nn.Conv2d(*args, **kw, bias=not shape.batchnorm_follows))


def _batchnorm(shape: ConvShape, options: NormOptions) -> nn.Module:
    args, kw = shape.conv_args
    return nn.Sequential(xavier(nn.Conv2d(*args, **kw, bias=False)), nn.BatchNorm2d(shape.out_channels))


def _convnorm(shape: ConvShape, options: NormOptions) -> nn.Module:
    """:class:`~convnorm.layers.ConvNorm2d`: without BatchNorm it keeps its per-channel bias,
    affine or not, as the authors' affine convolution has one (BatchNorm brings its own)."""
    args, kw = shape.conv_args
    extra = {name: value for name, value in (("eps", options.eps), ("ramp_steps", options.ramp_steps))
             if value is not None}
    return xavier(ConvNorm2d(*args, **kw, bias=not shape.batchnorm_follows, affine=options.affine, **extra))


def _convnorm_keeps_channels_last(device_type: str) -> bool:
    """ConvNorm layers keep channels-last images only where their filter is the fused one
    under the policy in force (:meth:`~convnorm.functional.ComputationPolicy.keeps_channels_last`)."""
    return current_policy().keeps_channels_last(device_type)


class _Float32SpectralNorm(_SpectralNorm):
    """PyTorch's spectral normalization (``torch.nn.utils.parametrizations.spectral_norm``,
    the same state), its power iteration and division computed in float32 under autocast,
    as ConvNorm's normalizer is: under mixed precision every reparametrization of the
    compared methods then runs in the same precision."""

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        with fp32_region(weight)[0]:
            return super().forward(weight)


def _spectral_norm(shape: ConvShape, options: NormOptions) -> nn.Module:
    conv = _plain(shape, options)
    parametrize.register_parametrization(conv, "weight", _Float32SpectralNorm(conv.weight, options.sn_iterations))
    return conv


def _oni(shape: ConvShape, options: NormOptions) -> nn.Module:
    return oni(_plain(shape, options), options.oni_iterations, options.oni_scale)


def _ocnn(shape: ConvShape, options: NormOptions) -> nn.Module:
    """A plain convolution marked for the OCNN penalty, which the trainer adds."""
    args, kw = shape.conv_args
    return xavier(OCNNConv2d(*args, **kw, bias=not shape.batchnorm_follows))


def _cayley(shape: ConvShape, options: NormOptions) -> nn.Module:
    """Circular padding, its own initialisation (the run-time study only)."""
    return CayleyConv2d(shape.in_channels, shape.out_channels, shape.kernel_size, stride=shape.stride)


#: every method, by key, in the order of the paper's tables
NORMALIZATIONS: dict[str, Normalization] = {n.key: n for n in (
    Normalization("none", "vanilla", _plain, stand_ins=("bn",)),
    Normalization("bn", "BN", _batchnorm),
    Normalization("convnorm", "ConvNorm", _convnorm, followable=True, float32="convolution, transforms and normalizer",
                  keeps_channels_last=_convnorm_keeps_channels_last, stand_ins=("convnorm+bn", "bn")),
    # SN: one power iteration, as in the paper
    Normalization("sn", "SN", _spectral_norm, followable=True, float32="power iteration", stand_ins=("bn",)),
    # ONI: the paper's footnote trains it at 0.01 where the others take 0.1 (0.1 diverges)
    Normalization("oni", "ONI", _oni, followable=True, lr_divisor=10, float32="Newton iteration",
                  stand_ins=("bn",)),
    # OCNN: λ = 0.01 (the paper's appendix: chosen on the validation set), 1e-4 under
    # adversarial training (the paper's footnote), on every convolution
    Normalization("ocnn", "OCNN", _ocnn, followable=True, penalty=Penalty(1e-2, 1e-4, OCNNRegularizer),
                  float32="penalty", stand_ins=("bn",)),
    Normalization("cayley", "Cayley", _cayley),
)}
#: the method that is BatchNorm itself, whose key also marks a BatchNorm following another
_BATCHNORM = NORMALIZATIONS["bn"]
_FOLLOWED_BY = "+" + _BATCHNORM.key


class Norm(str):
    """A network's normalization: a declared method
    (:data:`~convnorm_lab.models.normalizations.NORMALIZATIONS`), alone or
    followed by BatchNorm, as its key: ``Norm("oni+bn")``, ``Norm("sn")``.

    Raises:
        ValueError: for a key that is not ``METHOD`` or ``METHOD+bn``, an undeclared
            method, or a BatchNorm after a method it may not follow.
    """

    __slots__ = ()

    def __new__(cls, key: str) -> Norm:
        base, plus, rest = key.partition("+")
        if plus and plus + rest != _FOLLOWED_BY:
            raise ValueError(f"a normalization key is METHOD or METHOD{_FOLLOWED_BY}, got {key!r}")
        if base not in NORMALIZATIONS:
            raise ValueError(f"a normalization's method must be one of {sorted(NORMALIZATIONS)}, got {base!r}")
        if plus and not NORMALIZATIONS[base].followable:
            followable = ", ".join(k for k, n in NORMALIZATIONS.items() if n.followable)
            raise ValueError(f"BatchNorm can follow only {followable}, not {base!r}")
        return super().__new__(cls, key)

    @property
    def base(self) -> Normalization:
        """The method applied to every convolution."""
        return NORMALIZATIONS[self.partition("+")[0]]

    @property
    def batchnorm(self) -> bool:
        """Whether a BatchNorm follows the method."""
        return self.endswith(_FOLLOWED_BY)

    @property
    def uses_batchnorm(self) -> bool:
        """Whether the network has BatchNorm layers: BatchNorm itself, or one following the method."""
        return self.batchnorm or self.base is _BATCHNORM

    @property
    def label(self) -> str:
        """The name a reader reads, such as ``"ONI+BN"`` or ``"vanilla"``."""
        return self.base.label + (_FOLLOWED_BY.upper() if self.batchnorm else "")

    def with_batchnorm(self) -> Norm:
        """This method followed by BatchNorm."""
        return Norm(self + _FOLLOWED_BY)

    @property
    def stand_ins(self) -> tuple[Norm, ...]:
        """The measured networks whose step time stands in for this one's, in order."""
        return tuple(Norm(key) for key in self.base.stand_ins if key != self)

#: every declared method alone (in the order declared)
NONE, BN, CONVNORM, SN, ONI, OCNN, CAYLEY = (Norm(key) for key in NORMALIZATIONS)
#: the methods that a BatchNorm may follow, followed by one
CONVNORM_BN, SN_BN, ONI_BN, OCNN_BN = (norm.with_batchnorm() for norm in (CONVNORM, SN, ONI, OCNN))
#: every network's normalization: each method alone, and followed by BatchNorm where it may be
NORMS: tuple[Norm, ...] = tuple(network for key, method in NORMALIZATIONS.items()
                                for network in ((Norm(key), Norm(key).with_batchnorm()) if method.followable
                                                else (Norm(key),)))


def check_norm(norm: str) -> Norm:
    """``norm`` as a :class:`Norm` if it is one of :data:`NORMS`."""
    check_choice("norm", norm, NORMS)
    return Norm(norm)


def conv_block(norm: str, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
               padding: int = 0, options: NormOptions = NormOptions()) -> nn.Module:
    """A convolution with normalization ``norm``, and the BatchNorm that follows it if any."""
    norm = check_norm(norm)
    conv = norm.base.build(ConvShape(in_channels, out_channels, kernel_size, stride, padding, norm.batchnorm), options)
    return nn.Sequential(conv, nn.BatchNorm2d(out_channels)) if norm.batchnorm else conv
