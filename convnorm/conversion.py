"""Replace the convolutions of an existing model by ConvNorm layers in one call (:func:`convert`),
say what was done (:class:`ConversionSummary`), and go back where that is exact (:func:`revert`).

The module is ``convnorm.conversion``; ``convnorm.convert`` is the function.
"""
from __future__ import annotations

import logging
import textwrap
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import torch
import torch.nn as nn
from torch.nn.utils import parametrize

from .fourier import kernel_autocorrelation
from .layers import OPTIONS, ConvNorm1d, ConvNorm2d, check_options, has_uninitialized_params

__all__ = ["OPTIONS", "ConversionSummary", "convert", "convnorm_from_conv", "revert", "skip_pointwise"]

LOGGER = logging.getLogger(__name__)

_TARGETS: dict[type[nn.Module], type[ConvNorm1d] | type[ConvNorm2d]] = {nn.Conv2d: ConvNorm2d, nn.Conv1d: ConvNorm1d}

_CONVOLUTIONS = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)
"""PyTorch's convolutions: every one (and every subclass, lazy ones included) is either converted
or named in the summary."""

_LAYERS = (ConvNorm1d, ConvNorm2d)
"""The ConvNorm layers: convolutions (subclasses of nn.Conv1d, nn.Conv2d) that convert leaves alone."""

Skip = Callable[[str, nn.Module], bool] | Iterable[str] | None


def skip_pointwise(name: str, module: nn.Module) -> bool:
    """A ``skip`` rule keeping every 1x1 (pointwise) convolution, e.g. ResNet shortcuts."""
    kernel_size: tuple[int, ...] = getattr(module, "kernel_size", ())
    return bool(kernel_size) and all(k == 1 for k in kernel_size)


@dataclass
class ConversionSummary:
    """What :func:`convert` did: the convolutions it converted and those it left, each by its
    qualified name (its first one, if the module is used at several places).

    ``str(summary)`` is one entry per convolution left, its reason wrapped at 80 columns so
    that it reads in a terminal or a notebook without scrolling."""

    converted: list[str] = field(default_factory=list)
    """The convolutions replaced by ConvNorm layers."""
    skipped: dict[str, str] = field(default_factory=dict)
    """The convolutions left as they are, each with the reason."""

    def __str__(self) -> str:
        total = len(self.converted) + len(self.skipped)
        lines = [f"convert: {len(self.converted)} of {total} convolutions converted"]
        lines += [textwrap.fill(f"left {name!r}: {reason}", 80, initial_indent="  ", subsequent_indent="    ")
                  for name, reason in self.skipped.items()]
        return "\n".join(lines)


def _unsupported(conv: nn.Module) -> str | None:
    """Why :func:`convert` leaves a convolution of this kind as it is, or None if its kind is
    converted (``nn.Conv1d``, ``nn.Conv2d``, parametrized ones included)."""
    if _base_type(conv) in _TARGETS:
        return None
    if has_uninitialized_params(conv):
        return (f"{type(conv).__name__} is a lazy convolution whose parameters are not initialised yet: run one "
                "forward pass first")
    base = next(c for c in type(conv).__mro__ if c in _CONVOLUTIONS)
    if base in _TARGETS:
        return (f"{type(conv).__name__} is a subclass of nn.{base.__name__} whose forward may compute something "
                f"else than the convolution; convert it by hand (ConvNorm{base.__name__[-2:]}.from_conv) if it is a "
                "plain convolution")
    if base in (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d):
        return (f"{type(conv).__name__} is a transposed convolution, the adjoint A^T of a convolution A; ConvNorm "
                "normalizes A by (A A^T)^(-1/2) and defines nothing for A^T: there is no transposed ConvNorm")
    return (f"{type(conv).__name__} is a 3D convolution; ConvNorm is built for one and two spatial dimensions "
            "(ConvNorm1d, ConvNorm2d): there is no ConvNorm3d")


def _base_type(conv: nn.Module) -> type:
    """The class of ``conv`` before ``torch.nn.utils.parametrize`` gave it a parametrized subclass."""
    return type(conv).__bases__[0] if parametrize.is_parametrized(conv) else type(conv)


def convnorm_from_conv(conv: nn.Module, **kwargs) -> ConvNorm1d | ConvNorm2d:
    """``ConvNorm2d.from_conv(conv, **kwargs)`` for an ``nn.Conv2d``, ``ConvNorm1d.from_conv`` for an
    ``nn.Conv1d`` (see :meth:`ConvNorm2d.from_conv <convnorm.layers.ConvNorm2d.from_conv>`);
    ``ValueError`` for anything else."""
    for base, cls in _TARGETS.items():
        if isinstance(conv, base) and not isinstance(conv, _LAYERS):
            return cls.from_conv(conv, **kwargs)
    raise ValueError(f"conv must be an nn.Conv1d or nn.Conv2d, got {type(conv).__name__}")


def convert(model: nn.Module, skip: Skip = None, *, strict: bool = False, return_summary: bool = False,
            **kwargs):
    """Replace every ``nn.Conv2d`` (and ``nn.Conv1d``) of ``model`` by an equivalent
    ConvNorm layer carrying the same weights; returns the model (changed in place;
    a bare conv passed as ``model`` is returned converted), or ``(model, summary)`` with
    ``return_summary=True``.

    The new layers take over the convolutions' ``nn.Parameter`` objects
    (:meth:`ConvNorm2d.from_conv <convnorm.layers.ConvNorm2d.from_conv>`), so an optimizer built
    before the conversion still trains the weights and biases; the new affine kernels are new
    parameters it does not hold (build the optimizer after converting, or add them). A
    parametrized convolution (``torch.nn.utils.parametrizations.spectral_norm``, say) keeps its
    parametrizations. Forward hooks and pre-hooks of a converted convolution are not carried over
    (they expect a ``Conv2d``): converting one that has any warns, naming it.

    What it says. Every convolution of the model is either converted or named with the reason in
    the :class:`ConversionSummary`, logged (logger ``convnorm.conversion``, level INFO) and returned
    with ``return_summary=True``. Convolutions of other kinds are left as they are: ``nn.Conv3d``
    (there is no ConvNorm3d), transposed convolutions (ConvNorm normalizes a convolution :math:`A`
    by :math:`(AA^\\top)^{-1/2}`; the method defines nothing for its adjoint) and subclasses of
    ``nn.Conv2d`` other than parametrized ones (their forward may compute something else: convert
    one by hand with ``ConvNorm2d.from_conv`` if it is a plain convolution). Leaving any that
    ``skip`` did not name warns with the summary; with ``strict=True`` the first one raises
    ``ValueError`` naming it instead, and nothing is converted.

    A convolution used at several places becomes one ConvNorm layer used at the same places, and
    convolutions that share a weight or bias share it in their new layers too, so tied weights stay
    tied. Either every convolution of a converted kind is converted or, if one cannot be, none is:
    a layer ConvNorm cannot honour exactly (``padding_mode='reflect'`` or ``'replicate'``: reflected
    borders are not a convolution at the normalization size; padding beyond the kernel; a weight
    computed by the legacy ``torch.nn.utils.spectral_norm`` hook; a lazy convolution not initialised
    yet) raises ``ValueError`` naming it and leaves the model as it was; skip it to keep it as it is.

    Args:
        model: the network.
        skip: which convolutions to keep: a collection of qualified module names (as in
            ``model.named_modules()``; each must name a convolution of the model) or a
            predicate ``skip(name, conv) -> bool``, e.g. :func:`skip_pointwise` to keep 1x1
            shortcuts. A convolution used at several places must be kept at all of them or
            at none.
        strict: raise ``ValueError`` naming the first convolution of a kind it does not convert
            (one that ``skip`` keeps is not counted).
        return_summary: return ``(model, summary)``, the :class:`ConversionSummary`.
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
    check_options(kwargs)
    names, modules, places = _convolutions(model)
    keep = _skip_predicate(skip, names, modules)
    summary, chosen = ConversionSummary(), []
    for key, conv in modules.items():
        label = names[key][0] or "<model>"
        reason = "kept by skip" if _kept(conv, names[key], keep) else _unsupported(conv)
        if reason is None:
            chosen.append(conv)
            summary.converted.append(label)
        else:
            if strict and reason != "kept by skip":
                raise ValueError(f"cannot convert layer {label!r}: {reason} (strict=True; skip it to keep it)")
            summary.skipped[label] = reason
    new = _converted(chosen, names, _all_modules(model), kwargs)  # every new layer built before the model changes
    for parent, attribute, conv in places:
        if id(conv) in new:
            setattr(parent, attribute, new[id(conv)])
    LOGGER.info("%s", summary)
    if any(reason != "kept by skip" for reason in summary.skipped.values()):
        warnings.warn(f"{summary}\n(skip them to keep them without this warning, or pass strict=True to refuse)",
                      stacklevel=2)
    model = new.get(id(model), model)
    return (model, summary) if return_summary else model


def _convolutions(model: nn.Module) -> tuple[dict[int, list[str]], dict[int, nn.Module],
                                             list[tuple[nn.Module, str, nn.Module]]]:
    """The convolutions of ``model`` (not its ConvNorm layers) by ``id``: every qualified name of
    each (several if it is shared), the module, and every place one sits as ``(parent, attribute,
    conv)`` (duplicates too)."""
    names: dict[int, list[str]] = {}
    modules: dict[int, nn.Module] = {}
    places: list[tuple[nn.Module, str, nn.Module]] = []
    for name, module in model.named_modules(remove_duplicate=False):
        if _is_convolution(module):
            names.setdefault(id(module), []).append(name)
            modules[id(module)] = module
        places += [(module, child_name, child) for child_name, child in module._modules.items()
                   if child is not None and _is_convolution(child)]
    return names, modules, places


def _is_convolution(module: nn.Module) -> bool:
    return isinstance(module, _CONVOLUTIONS) and not isinstance(module, _LAYERS)


def _all_modules(model: nn.Module) -> dict[int, tuple[nn.Module, str]]:
    """Every module of ``model`` by ``id``, with its first qualified name."""
    found: dict[int, tuple[nn.Module, str]] = {}
    for name, module in model.named_modules(remove_duplicate=False):
        found.setdefault(id(module), (module, name))
    return found


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
    known = {name for found in names.values() for name in found}
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


def _converted(convs: list[nn.Module], names: dict[int, list[str]], modules: dict[int, tuple[nn.Module, str]],
               options: dict) -> dict[int, nn.Module]:
    """A new layer for each of ``convs`` by ``id``, with a parameter shared by two of them shared
    by their new layers; ``ValueError`` naming the layer if one cannot be converted or shares
    a parameter with a module that is not converted."""
    owners: dict[int, set[int]] = {}
    for key, (module, _) in modules.items():
        for parameter in module.parameters(recurse=False):
            owners.setdefault(id(parameter), set()).add(key)
    converting = {id(conv) for conv in convs}
    new: dict[int, nn.Module] = {}
    for conv in convs:
        label = names[id(conv)][0] or "<model>"
        for attribute in ("weight", "bias"):
            own = conv._parameters.get(attribute)  # None if parametrized: its original is carried over
            others = owners.get(id(own), set()) - converting if own is not None else set()
            if others:
                raise ValueError(f"cannot convert layer {label!r}: its {attribute} is shared with "
                                 f"{modules[others.pop()][1] or '<model>'!r}, which is not converted")
        try:
            new[id(conv)] = convnorm_from_conv(conv, **options)  # the same parameters: tied ones stay tied
        except ValueError as err:
            raise ValueError(f"cannot convert layer {label!r}: {err}") from err
    for conv in convs:
        if conv._forward_hooks or conv._forward_pre_hooks:
            warnings.warn(f"convert: the forward hooks of {names[id(conv)][0] or '<model>'!r} stay on the nn.Conv "
                          "it replaces; register them on its ConvNorm layer", stacklevel=3)
    return new


def revert(model: nn.Module) -> nn.Module:
    r"""Replace every ConvNorm layer of ``model`` by the ``nn.Conv2d`` (``nn.Conv1d``) that computes
    what the layer computes in evaluation mode, where one exists; returns the model (changed in
    place; a bare layer passed as ``model`` is returned reverted).

    What is exactly representable. In evaluation a layer computes, per output channel :math:`k`,
    :math:`\rho_k * \hat v_k * (a_k \star x)` at the normalization size :math:`L = n + m - 1`, then
    crops and strides. The normalizer :math:`\hat v_k` is a filter as large as the input
    (:math:`L` taps, depending on the input size): a convolution of finite kernel computes it only
    where it is a constant, that is where the summed autocorrelation the layer normalizes with (the
    running average once trained, else the weight's own) vanishes off its centre, and where the
    affine kernel :math:`\rho_k` is a multiple of the centred delta (the identity it starts as).
    Every 1x1 layer is such a layer, and so is one whose kernels :math:`a_{ki}` have one tap each.
    Then the convolution's weight is :math:`a_k\,\rho_k[c]\,(r_k[0] + \varepsilon)^{-1/2}`, its bias
    the layer's: new ``nn.Parameter`` objects (the values differ), on the layer's device, dtype and
    train/eval mode. A layer of any other kind raises ``ValueError`` naming it and saying why, and
    leaves the model as it was.
    """
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be an nn.Module, got {type(model).__name__}")
    new: dict[int, nn.Module] = {}
    places: list[tuple[nn.Module, str, nn.Module]] = []
    for name, module in model.named_modules(remove_duplicate=False):
        if isinstance(module, _LAYERS) and id(module) not in new:
            try:
                new[id(module)] = _as_conv(module)
            except ValueError as err:
                raise ValueError(f"cannot revert layer {name or '<model>'!r}: {err}") from err
        places += [(module, child_name, child) for child_name, child in module._modules.items()
                   if isinstance(child, _LAYERS)]
    for parent, attribute, layer in places:
        setattr(parent, attribute, new[id(layer)])
    return new.get(id(model), model)


def _as_conv(layer: ConvNorm1d | ConvNorm2d) -> nn.Module:
    """The convolution computing what ``layer`` computes in evaluation mode (see :func:`revert`),
    else ``ValueError`` saying why none does."""
    with torch.no_grad():
        weight = layer.weight.detach()
        trained = bool(layer.num_steps_tracked > 0)
        r = layer.running_autocorrelation if trained else kernel_autocorrelation(weight)
        centre = tuple(k - 1 for k in layer.kernel_size)
        off_centre = r.clone()
        off_centre[(slice(None),) + centre] = 0
        if off_centre.any():
            source = "running average of the" if trained else "weights'"
            raise ValueError(
                f"its normalizer is a filter as large as the input, not a finite kernel: the {source} summed "
                "autocorrelation does not vanish off its centre (a convolution represents a ConvNorm layer exactly "
                "only where the normalizer is a constant, e.g. for 1x1 kernels)")
        gain = (r[(slice(None),) + centre] + layer.eps).rsqrt()
        if not torch.isfinite(gain).all():
            raise ValueError("a channel has a zero kernel and eps = 0: its normalizer is infinite")
        if layer.affine_weight is not None:
            rho = layer.affine_weight.detach()
            tap = (slice(None), *((k - 1) // 2 for k in layer.kernel_size))
            others = rho.clone()
            others[tap] = 0
            if others.any():
                raise ValueError("its affine kernel is not a multiple of the centred delta: it filters the "
                                 "full-size normalized output, which a finite kernel does not represent at its borders")
            gain = gain * rho[tap]
        conv = layer._conv(layer.in_channels, layer.out_channels, layer.kernel_size, layer.stride, layer.padding,
                           layer.dilation, layer.groups, layer.bias is not None, layer.padding_mode,
                           device=weight.device, dtype=weight.dtype)
        conv.weight.copy_(weight * gain.reshape(-1, *[1] * (weight.dim() - 1)))
        if layer.bias is not None and conv.bias is not None:
            conv.bias.copy_(layer.bias.detach())
    return conv.train(layer.training)
