"""CIFAR networks: ResNet18, VGG16 and a small fast net, each with any normalization of
:mod:`convnorm_lab.models.normalizations`.

All take images in :math:`[0, 1]` and standardise them per channel first
(:class:`Standardize`), so attacks and augmentation work in pixel space.

* ResNet18 (He et al. 2016) in its CIFAR form: a 3x3 stem without pooling, four
  stages of two basic blocks with 64/128/256/512 channels (strides 1/2/2/2), global
  average pooling, one linear layer.
* VGG16 (Simonyan & Zisserman 2015) in its CIFAR form: thirteen 3x3 convs in five
  max-pooled stages (64, 128, 256, 512, 512 channels), then one linear layer.
* ``small``: six 3x3 convs (w, w, pool, 2w, 2w, pool, 4w, 4w, pool), global
  average pooling, one linear layer: for the CPU preset.
* ``airbench``: the network of the fast-CIFAR record airbench94 (Jordan 2024,
  arXiv 2404.00498), written anew (:class:`AirbenchNet`): a 2x2 stem, three groups of
  conv-pool-norm-GELU, conv-norm-GELU with w, 4w, 4w channels, a 3x3 max pool, one
  linear layer.

``width`` scales every channel count (64 is the standard ResNet18/VGG16 and airbench94's
first group; 32 the small net's default).
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from convnorm.validation import check_choice, check_positive_int

from .normalizations import BN, NONE, ConvShape, NormOptions, check_norm, conv_block, xavier

CIFAR_STATS = {
    "cifar10": ((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)),
    "cifar100": ((0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)),
}
ARCHS = ("resnet18", "vgg16", "small", "airbench")


class Standardize(nn.Module):
    """:math:`(x - \\mu_c) / \\sigma_c` per colour channel (constants, not learned)."""

    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean).reshape(1, -1, 1, 1))
        self.register_buffer("std", torch.tensor(std).reshape(1, -1, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std


class BasicBlock(nn.Module):
    """Two 3x3 conv blocks with a ReLU between, plus an identity or 1x1 shortcut."""

    def __init__(self, norm: str, cin: int, cout: int, stride: int, options: NormOptions):
        super().__init__()
        self.conv1 = conv_block(norm, cin, cout, 3, stride, 1, options)
        self.conv2 = conv_block(norm, cout, cout, 3, 1, 1, options)
        self.shortcut = (conv_block(norm, cin, cout, 1, stride, 0, options)
                         if stride != 1 or cin != cout else nn.Identity())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.conv2(F.relu(self.conv1(x))) + self.shortcut(x))


class ResNet18(nn.Module):
    def __init__(self, norm: str = BN, num_classes: int = 10, width: int = 64,
                 options: NormOptions | None = None, stats=CIFAR_STATS["cifar10"]):
        super().__init__()
        options = options or NormOptions()
        check_norm(norm)
        widths = [width, 2 * width, 4 * width, 8 * width]
        self.standardize = Standardize(*stats)
        self.stem = conv_block(norm, 3, width, 3, 1, 1, options)
        blocks, cin = [], width
        for i, cout in enumerate(widths):
            for j in range(2):
                blocks.append(BasicBlock(norm, cin, cout, 2 if (i > 0 and j == 0) else 1, options))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = linear(cin, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.blocks(F.relu(self.stem(self.standardize(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class PlainConvNet(nn.Module):
    """VGG-style stack: ``config`` lists channel counts and ``"M"`` (2x2 max pool)."""

    def __init__(self, config: list, norm: str = BN, num_classes: int = 10,
                 options: NormOptions | None = None, stats=CIFAR_STATS["cifar10"]):
        super().__init__()
        options = options or NormOptions()
        check_norm(norm)
        self.standardize = Standardize(*stats)
        layers, cin = [], 3
        for item in config:
            if item == "M":
                layers.append(nn.MaxPool2d(2))
            else:
                layers += [conv_block(norm, cin, item, 3, 1, 1, options), nn.ReLU()]
                cin = item
        self.features = nn.Sequential(*layers)
        self.fc = linear(cin, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(self.standardize(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class AirbenchGroup(nn.Module):
    """One group of :class:`AirbenchNet`: conv, 2x2 max pool, norm, GELU, conv, norm, GELU.

    Each 3x3 convolution (zero padding 1) is the network's normalization's convolution
    (a ConvNorm layer for ``convnorm``, a plain one for ``bn`` and ``none``); the *norm*
    after it is the BatchNorm of ``bn`` and of every ``METHOD+bn``, and nothing otherwise.
    As in airbench94 the first BatchNorm comes after the pool: it then normalizes the
    statistics of what the next layer sees, at a quarter of the cost.
    """

    def __init__(self, norm: str, cin: int, cout: int, options: NormOptions):
        super().__init__()
        self.conv1 = group_conv(norm, cin, cout, options)
        self.norm1 = group_norm(norm, cout)
        self.conv2 = group_conv(norm, cout, cout, options)
        self.norm2 = group_norm(norm, cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.gelu(self.norm1(F.max_pool2d(self.conv1(x), 2)))
        return F.gelu(self.norm2(self.conv2(x)))


def group_conv(norm: str, cin: int, cout: int, options: NormOptions) -> nn.Module:
    """The 3x3 convolution of an :class:`AirbenchGroup` with ``norm``: the method's own
    convolution, a plain one for BatchNorm (whose normalization comes after the pool,
    :func:`group_norm`), without bias where a BatchNorm follows."""
    norm = check_norm(norm)
    method = NONE.base if norm == BN else norm.base
    return method.build(ConvShape(cin, cout, 3, 1, 1, norm.uses_batchnorm), options)


def group_norm(norm: str, channels: int) -> nn.Module:
    """The normalization after an :class:`AirbenchGroup`'s convolution: a BatchNorm where
    ``norm`` has one (BN itself, or any ``METHOD+bn``), else nothing."""
    return nn.BatchNorm2d(channels) if check_norm(norm).uses_batchnorm else nn.Identity()


class AirbenchNet(nn.Module):
    """airbench94's network (Jordan 2024, arXiv 2404.00498; its source read, this code
    written anew) with any normalization:

    .. math::  x \\to \\mathrm{GELU}(\\mathrm{conv}_{2\\times2}(x)) \\to G_{w} \\to G_{4w} \\to G_{4w}
               \\to \\mathrm{maxpool}_{3} \\to \\tfrac19 \\, W z,

    where each :math:`G` is an :class:`AirbenchGroup` (32, 15, 7 and 3 pixels a side after
    the stem and each pool). The stem is a trainable 2x2 convolution with bias, 24
    channels, no padding, and stays plain in every network: the normalization replaces
    each trainable 3x3 convolution, as the paper's does in its networks. airbench94
    freezes its stem at a whitening of the training patches; here it is learned, so the
    network needs no data to be built. The classifier has no bias and its logits are
    scaled by :data:`LOGIT_SCALE`, as in airbench94, which keeps the first steps' logits
    small at the recipe's large rate.
    """

    STEM_CHANNELS = 24
    LOGIT_SCALE = 1 / 9

    def __init__(self, norm: str = BN, num_classes: int = 10, width: int = 64,
                 options: NormOptions | None = None, stats=CIFAR_STATS["cifar10"]):
        super().__init__()
        options = options or NormOptions()
        check_norm(norm)
        self.standardize = Standardize(*stats)
        self.stem = xavier(nn.Conv2d(3, self.STEM_CHANNELS, 2))
        widths = (width, 4 * width, 4 * width)
        self.groups = nn.Sequential(*(AirbenchGroup(norm, cin, cout, options)
                                      for cin, cout in zip((self.STEM_CHANNELS, *widths[:-1]), widths)))
        self.fc = xavier(nn.Linear(widths[-1], num_classes, bias=False))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.groups(F.gelu(self.stem(self.standardize(x))))
        return self.fc(torch.flatten(F.max_pool2d(x, 3), 1)) * self.LOGIT_SCALE


def linear(in_features: int, out_features: int) -> nn.Linear:
    """The classifier layer, Xavier-uniform initialised."""
    return xavier(nn.Linear(in_features, out_features))


def _vgg16_config(width: int) -> list:
    w = [width, 2 * width, 4 * width, 8 * width, 8 * width]
    return [w[0], w[0], "M", w[1], w[1], "M", w[2], w[2], w[2], "M", w[3], w[3], w[3], "M",
            w[4], w[4], w[4], "M"]


def build_model(arch: str = "resnet18", norm: str = BN, num_classes: int = 10, width: int | None = None,
                dataset: str = "cifar10", options: NormOptions | None = None, **option_kwargs) -> nn.Module:
    """A CIFAR network ``arch`` (``resnet18``, ``vgg16``, ``small`` or ``airbench``) with ``norm``.

    ``option_kwargs`` (``affine``, ``eps``, ``ramp_steps``, ``oni_iterations``, ``oni_scale``,
    ``sn_iterations``) build a :class:`NormOptions` when ``options`` is not given.
    Call :func:`convnorm_lab.training.seed_everything` first for a reproducible init.
    """
    check_choice("arch", arch, ARCHS)
    check_choice("dataset", dataset, sorted(CIFAR_STATS))
    check_positive_int("num_classes", num_classes)
    options = options or NormOptions(**option_kwargs)
    stats = CIFAR_STATS[dataset]
    if arch == "resnet18":
        return ResNet18(norm, num_classes, check_positive_int("width", 64 if width is None else width), options, stats)
    if arch == "vgg16":
        return PlainConvNet(_vgg16_config(check_positive_int("width", 64 if width is None else width)), norm,
                            num_classes, options, stats)
    if arch == "airbench":
        return AirbenchNet(norm, num_classes, check_positive_int("width", 64 if width is None else width), options,
                           stats)
    w = check_positive_int("width", 32 if width is None else width)
    return PlainConvNet([w, w, "M", 2 * w, 2 * w, "M", 4 * w, 4 * w, "M"], norm, num_classes, options, stats)
