"""Floating-point operations of a network's forward pass, counted from its layers.

A convolution with :math:`C_\\text{in}` input channels (per group), a :math:`k_h \\times k_w`
kernel and an output of :math:`C_\\text{out} \\times H \\times W` costs
:math:`2\\, C_\\text{out} H W \\, C_\\text{in} k_h k_w` operations (a multiply and an add per
weight and output pixel), a linear layer :math:`2 \\, n_\\text{in} n_\\text{out}`. Only these
are counted: normalizations, activations and pools cost a few operations per activation,
far below the convolutions in a CIFAR network, and what a ConvNorm layer adds to its
convolution is not counted here (a measured ratio of step times stands for it where needed).
A training step costs about three forward passes (the backward pass about two).
"""
from __future__ import annotations

import torch
import torch.nn as nn

from convnorm.layers import ConvNorm2d

#: a training step's operations per forward pass's: the backward pass costs about twice the forward
TRAINING_MULTIPLE = 3


def forward_flops(model: nn.Module, image_shape: tuple[int, int, int] = (3, 32, 32)) -> int:
    """The operations of the convolutions and linear layers of one forward pass of ``model``
    on one image of ``image_shape`` (see the module), counted by running it once."""
    total = 0

    def conv(module, args, out):
        nonlocal total
        weight = module.weight
        total += 2 * out[0].numel() * weight.shape[1] * weight[0, 0].numel()

    def linear(module, args, out):
        nonlocal total
        total += 2 * module.in_features * module.out_features

    hooks = [m.register_forward_hook(conv) for m in model.modules() if isinstance(m, (nn.Conv2d, ConvNorm2d))]
    hooks += [m.register_forward_hook(linear) for m in model.modules() if isinstance(m, nn.Linear)]
    was_training = model.training
    try:
        model.eval()
        with torch.no_grad():
            model(torch.zeros(1, *image_shape))
    finally:
        model.train(was_training)
        for hook in hooks:
            hook.remove()
    return total
