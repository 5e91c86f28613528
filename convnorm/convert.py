"""Replace the convolutions of an existing model by ConvNorm layers, in one call."""
from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable

import torch.nn as nn

from .layers import ConvNorm1d, ConvNorm2d

_TARGETS = {nn.Conv2d: ConvNorm2d, nn.Conv1d: ConvNorm1d}

Skip = Callable[[str, nn.Module], bool] | Iterable[str] | None


def skip_pointwise(name: str, module: nn.Module) -> bool:
    """A ``skip`` rule keeping every 1x1 (pointwise) convolution, e.g. ResNet shortcuts."""
    return all(k == 1 for k in module.kernel_size)


OPTIONS = ("affine", "eps", "ramp_steps", "ramp_floor", "stop_gradient")
"""The ConvNorm options :func:`convert` and :func:`convnorm_from_conv` pass to every new layer."""


def _check_options(options: dict) -> None:
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(f"the options of the new layers are {', '.join(OPTIONS)}; got {', '.join(unknown)} "
                         "(the convolution arguments come from each converted layer)")


def convnorm_from_conv(conv: nn.Conv1d | nn.Conv2d, **kwargs) -> ConvNorm1d | ConvNorm2d:
    """A ConvNorm layer with ``conv``'s arguments that takes over its weight and bias: the same
    ``nn.Parameter`` objects, so an optimizer built for the model before (or anything else
    holding them) trains the new layer, and the two share them if ``conv`` is used on.

    ``kwargs`` (``affine``, ``eps``, ``ramp_steps``, ``ramp_floor``, ``stop_gradient``)
    go to the new layer. It is on ``conv``'s device and dtype and in its train/eval mode, and
    as trainable as ``conv``: a frozen weight freezes the new affine kernel too (at its identity
    start), so a frozen convolution stays frozen. The new affine kernel is a new parameter: an
    optimizer built before does not hold it (add it: ``optimizer.add_param_group``). Its running
    average starts empty (``num_steps_tracked == 0``), so until the first training step eval
    mode normalizes with the weight. Hooks registered on ``conv`` stay with ``conv``.
    """
    cls = _TARGETS[type(conv)] if type(conv) in _TARGETS else None
    if cls is None:
        raise ValueError(f"conv must be an nn.Conv1d or nn.Conv2d, got {type(conv).__name__}")
    _check_options(kwargs)
    layer = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                conv.dilation, conv.groups, conv.bias is not None, conv.padding_mode,
                device=conv.weight.device, dtype=conv.weight.dtype, **kwargs)
    layer.weight = conv.weight
    if conv.bias is not None:
        layer.bias = conv.bias
    if layer.affine_weight is not None:
        layer.affine_weight.requires_grad_(conv.weight.requires_grad)
    return layer.train(conv.training)


def convert(model: nn.Module, skip: Skip = None, **kwargs) -> nn.Module:
    """Replace every ``nn.Conv2d`` (and ``nn.Conv1d``) of ``model`` by an equivalent
    ConvNorm layer carrying the same weights; returns the model (changed in place;
    a bare conv passed as ``model`` is returned converted).

    The new layers take over the convolutions' ``nn.Parameter`` objects (:func:`convnorm_from_conv`),
    so an optimizer built before the conversion still trains the weights and biases; the new
    affine kernels are new parameters it does not hold (build the optimizer after converting, or
    add them). Forward hooks and pre-hooks of a converted convolution are not carried over (they
    expect a ``Conv2d``): converting one that has any warns, naming it.

    Only exact ``nn.Conv1d``/``nn.Conv2d`` instances are converted (subclasses, e.g. a
    conv with its own regulariser, are left alone). A convolution used at several places
    becomes one ConvNorm layer used at the same places, and convolutions that share a
    weight or bias share it in their new layers too, so tied weights stay tied. Either every
    convolution is converted or, if one cannot be, none is: a layer ConvNorm cannot honour
    exactly (``padding_mode='reflect'``, padding beyond the kernel) raises ``ValueError``
    naming it and leaves the model as it was; skip it to keep it as it is.

    Args:
        model: the network.
        skip: which convolutions to keep: a collection of qualified module names (as in
            ``model.named_modules()``; each must name a convolution of the model) or a
            predicate ``skip(name, conv) -> bool``, e.g. :func:`skip_pointwise` to keep 1x1
            shortcuts. A convolution used at several places must be kept at all of them or
            at none.
        **kwargs: ConvNorm options for every new layer (``affine``, ``eps``,
            ``ramp_steps``, ``ramp_floor``, ``stop_gradient``).

    Example::

        >>> import torch.nn as nn
        >>> net = convert(nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.Conv2d(8, 8, 1)),
        ...               skip=skip_pointwise)
        >>> [type(m).__name__ for m in net]
        ['ConvNorm2d', 'BatchNorm2d', 'Conv2d']
    """
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be an nn.Module, got {type(model).__name__}")
    _check_options(kwargs)
    names: dict[int, list[str]] = {}  # every qualified name of each module (several if it is shared)
    modules: dict[int, nn.Module] = {}
    places: list[tuple[nn.Module, str, nn.Module]] = []  # (parent, attribute, conv)
    for name, module in model.named_modules(remove_duplicate=False):
        names.setdefault(id(module), []).append(name)
        modules[id(module)] = module
        places += [(module, child_name, child) for child_name, child in module._modules.items()  # duplicates too
                   if type(child) in _TARGETS]
    convs = [modules[key] for key in names if type(modules[key]) in _TARGETS]
    keep = _skip_predicate(skip, names, modules)
    chosen = [conv for conv in convs if not _kept(conv, names[id(conv)], keep)]
    new = _converted(chosen, names, modules, kwargs)  # every new layer built before the model changes
    for parent, attribute, conv in places:
        if id(conv) in new:
            setattr(parent, attribute, new[id(conv)])
    return new.get(id(model), model)


def _skip_predicate(skip: Skip, names: dict[int, list[str]],
                    modules: dict[int, nn.Module]) -> Callable[[str, nn.Module], bool] | None:
    """``skip`` as a predicate ``(name, conv) -> bool``, read once (a collection of names
    may be a one-pass iterator); ``ValueError`` if it lists a name that is no convolution
    of the model."""
    if skip is None or callable(skip):
        return skip
    if isinstance(skip, str):
        raise ValueError(f"skip must be a callable or a collection of module names, got the string {skip!r}")
    listed = set(skip)
    known = {name for key, found in names.items() if isinstance(modules[key], (nn.Conv1d, nn.Conv2d))
             for name in found}
    if listed - known:
        raise ValueError(f"skip names no convolution of the model: {sorted(listed - known)}")
    return lambda name, conv: name in listed


def _kept(conv: nn.Module, conv_names: list[str], keep: Callable[[str, nn.Module], bool] | None) -> bool:
    """Whether ``keep`` keeps ``conv``, known by ``conv_names`` (``ValueError`` if it keeps
    it under some names only)."""
    if keep is None:
        return False
    kept = [bool(keep(name, conv)) for name in conv_names]
    if any(kept) and not all(kept):
        raise ValueError(f"the convolution at {conv_names} is one module used at several places: skip all of "
                         "its names or none (converting some of its uses would untie them)")
    return all(kept)


def _converted(convs: list[nn.Module], names: dict[int, list[str]], modules: dict[int, nn.Module],
               options: dict) -> dict[int, nn.Module]:
    """A new layer for each of ``convs`` by ``id``, with a parameter shared by two of them shared
    by their new layers; ``ValueError`` naming the layer if one cannot be converted or shares
    a parameter with a module that is not converted."""
    owners: dict[int, set[int]] = {}
    for key, module in modules.items():
        for parameter in module.parameters(recurse=False):
            owners.setdefault(id(parameter), set()).add(key)
    converting = {id(conv) for conv in convs}
    new: dict[int, nn.Module] = {}
    for conv in convs:
        label = names[id(conv)][0] or "<model>"
        for attribute in ("weight", "bias"):
            parameter = getattr(conv, attribute)
            others = owners.get(id(parameter), set()) - converting if parameter is not None else set()
            if others:
                raise ValueError(f"cannot convert layer {label!r}: its {attribute} is shared with "
                                 f"{names[others.pop()][0] or '<model>'!r}, which is not converted")
        try:
            new[id(conv)] = convnorm_from_conv(conv, **options)  # the same parameters: tied ones stay tied
        except ValueError as err:
            raise ValueError(f"cannot convert layer {label!r}: {err}") from err
    for conv in convs:
        if conv._forward_hooks or conv._forward_pre_hooks:
            warnings.warn(f"convert: the forward hooks of {names[id(conv)][0] or '<model>'!r} stay on the nn.Conv "
                          "it replaces; register them on its ConvNorm layer", stacklevel=3)
    return new
