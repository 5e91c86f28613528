"""The ResNet18 the benchmarks time, written with ``torch.nn`` so that a benchmark needs neither
torchvision nor the lab: torchvision's ``resnet18`` layer for layer (a 7x7 stride-2 stem, 3x3
stride-2 max pooling, four stages of two basic blocks with 64/128/256/512 channels, strided 1x1
shortcuts, global average pooling, a linear classifier), or its CIFAR variant for 32x32 images
(the stem one 3x3 stride-1 convolution, no max pooling; the lab's CIFAR ResNet18 less its
per-channel input standardization). Every convolution is followed by BatchNorm, so that
``convnorm.convert`` turns the network into its ConvNorm2d+BN counterpart, stem and shortcuts
included.
"""
from __future__ import annotations

import torch
import torch.nn as nn


class BasicBlock(nn.Module):
    """torchvision's ``BasicBlock``: two 3x3 convolutions with BatchNorm, the first strided, and
    a strided 1x1 convolution with BatchNorm on the shortcut where the shape changes."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(),
                                  nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False), nn.BatchNorm2d(c_out))
        self.shortcut = (nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))
                         if stride != 1 or c_in != c_out else nn.Identity())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.shortcut(x))


def resnet18(classes: int = 1000, small_images: bool = False) -> nn.Module:
    """torchvision's ``resnet18`` architecture with Conv2d+BN (the module docstring); with
    ``small_images`` the CIFAR variant, whose stem is one 3x3 stride-1 convolution without max
    pooling, as 32x32 images have no resolution to spare."""
    stages = [BasicBlock(c_in, c_out, stride) for c_in, c_out, stride in
              ((64, 64, 1), (64, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1),
               (256, 512, 2), (512, 512, 1))]
    stem = ([nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU()] if small_images else
            [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)])
    return nn.Sequential(*stem, *stages, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes))
