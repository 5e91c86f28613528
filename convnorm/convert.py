"""Replace the convolutions of an existing model by ConvNorm layers, in one call."""
from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
import torch.nn as nn

from .layers import ConvNorm1d, ConvNorm2d

_TARGETS = {nn.Conv2d: ConvNorm2d, nn.Conv1d: ConvNorm1d}

Skip = Callable[[str, nn.Module], bool] | Iterable[str] | None


def _skipper(skip: Skip) -> Callable[[str, nn.Module], bool]:
    if skip is None:
        return lambda name, module: False
    if callable(skip):
        return skip
    if isinstance(skip, str):
        raise ValueError(f"skip must be a callable or a collection of module names, got the string {skip!r}")
    names = set(skip)
    return lambda name, module: name in names


def skip_pointwise(name: str, module: nn.Module) -> bool:
    """A ``skip`` rule keeping every 1x1 (pointwise) convolution, e.g. ResNet shortcuts."""
    return all(k == 1 for k in module.kernel_size)


def convnorm_from_conv(conv: nn.Conv1d | nn.Conv2d, **kwargs) -> ConvNorm1d | ConvNorm2d:
    """A ConvNorm layer with ``conv``'s arguments and a copy of its weight and bias.

    ``kwargs`` (``affine``, ``eps``, ``ramp_steps``, ``ramp_floor``, ``stop_gradient``)
    go to the new layer. The copy is on ``conv``'s device and dtype and in its
    train/eval mode; its running average starts empty (``num_steps_tracked == 0``), so
    until the first training step eval mode normalizes with the copied weight.
    """
    cls = _TARGETS[type(conv)] if type(conv) in _TARGETS else None
    if cls is None:
        raise ValueError(f"conv must be an nn.Conv1d or nn.Conv2d, got {type(conv).__name__}")
    layer = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                conv.dilation, conv.groups, conv.bias is not None, conv.padding_mode,
                device=conv.weight.device, dtype=conv.weight.dtype, **kwargs)
    with torch.no_grad():
        layer.weight.copy_(conv.weight)
        if conv.bias is not None:
            layer.bias.copy_(conv.bias)
    return layer.train(conv.training)


def convert(model: nn.Module, skip: Skip = None, **kwargs) -> nn.Module:
    """Replace every ``nn.Conv2d`` (and ``nn.Conv1d``) of ``model`` by an equivalent
    ConvNorm layer carrying the same weights; returns the model (changed in place;
    a bare conv passed as ``model`` is returned converted).

    Only exact ``nn.Conv1d``/``nn.Conv2d`` instances are converted (subclasses, e.g. a
    conv with its own regulariser, are left alone). A layer ConvNorm cannot honour
    exactly (``padding_mode='reflect'``, padding beyond the kernel) raises
    ``ValueError`` naming it; skip it to keep it as it is.

    Args:
        model: the network.
        skip: which convolutions to keep: a collection of qualified module names (as in
            ``model.named_modules()``) or a predicate ``skip(name, conv) -> bool``, e.g.
            :func:`skip_pointwise` to keep 1x1 shortcuts.
        **kwargs: ConvNorm options for every new layer (``affine``, ``eps``,
            ``ramp_steps``, ``ramp_floor``, ``stop_gradient``).

    Example::

        >>> import torch.nn as nn
        >>> net = convert(nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.Conv2d(8, 8, 1)),
        ...               skip=skip_pointwise)
        >>> [type(m).__name__ for m in net]
        ['ConvNorm2d', 'BatchNorm2d', 'Conv2d']
    """
    should_skip = _skipper(skip)

    def replace(module: nn.Module, name: str) -> nn.Module:
        if type(module) in _TARGETS and not should_skip(name, module):
            try:
                return convnorm_from_conv(module, **kwargs)
            except ValueError as err:
                raise ValueError(f"cannot convert layer {name or '<model>'!r}: {err}") from err
        for child_name, child in module.named_children():
            new = replace(child, f"{name}.{child_name}" if name else child_name)
            if new is not child:
                setattr(module, child_name, new)
        return module

    return replace(model, "")
