"""The network a preset trains, as a table of its layers: what each does, its channels,
the size of the images it sees, and the parameters each normalization gives it, read from
the model itself (:func:`convnorm_lab.models.build_model`), so that the table cannot drift from
what is trained."""
from __future__ import annotations

from collections.abc import Sequence

import torch.nn as nn

from convnorm.layers import ConvNorm2d
from convnorm_lab.experiments import Preset
from convnorm_lab.experiments.experiment import networks_in_words
from convnorm_lab.experiments.schema import BASIC
from convnorm_lab.models import build_model

from .tables import Table
from .words import method_label


def _parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _rows(model: nn.Module, size: int = 32):
    """Per layer of a plain stack (``features`` then ``fc``): what it is, its output
    channels and image size, and its parameters."""
    for module in (*model.features, model.fc):
        parts = list(module) if isinstance(module, nn.Sequential) else [module]
        if hasattr(parts[0], "in_channels"):  # a convolution, and the BatchNorm that may follow it
            conv = parts[0]
            what = f"3 × 3 convolution, {conv.in_channels} → {conv.out_channels} channels" + "".join(
                " + BatchNorm" for m in parts[1:] if isinstance(m, nn.BatchNorm2d))
            yield what, conv.out_channels, f"{size} × {size}", _parameters(module)
        elif isinstance(module, nn.MaxPool2d):
            size //= 2
            yield "2 × 2 max pooling", None, f"{size} × {size}", 0
        elif isinstance(module, nn.Linear):
            yield f"global average pooling, then a linear layer to {module.out_features} classes", \
                module.out_features, "1 × 1", _parameters(module)


def layers_table(settings: Preset, norms: Sequence[str] = BASIC) -> Table:
    """The layers of the preset's own network (:func:`~convnorm_lab.experiments.experiment.networks_in_words`,
    e.g. the six-conv network of width 16) and, per normalization in ``norms``, the
    parameters of each layer (a ReLU after every convolution has none); the last row sums
    them.

    Raises:
        ValueError: for a preset that trains the paper's networks rather than its own.
    """
    if settings.arch is None:
        raise ValueError(f"preset {settings.name!r} trains the paper's networks, not one of its own")
    models = {norm: build_model(settings.arch, norm, 10, settings.width) for norm in norms}
    first = list(_rows(models[norms[0]]))
    counts = {norm: [row[3] for row in _rows(model)] for norm, model in models.items()}
    rows = [[what, "" if channels is None else str(channels), size]
            + [f"{counts[norm][i]:,}" if counts[norm][i] else "" for norm in norms]
            for i, (what, channels, size, _) in enumerate(first)]
    rows.append(["all", "", ""] + [f"{sum(counts[norm]):,}" for norm in norms])
    affine = next(m for m in models[norms[-1]].modules() if isinstance(m, ConvNorm2d)).affine_weight is not None
    notes = [f"Every convolution is followed by a ReLU; with ConvNorm each also carries its affine kernel "
             f"({'on' if affine else 'off'} here), one small kernel per output channel, which the parameters count."]
    return Table(f"The network of the reduced scale: {networks_in_words(settings)}",
                 ["layer", "channels out", "image size out"] + [f"parameters: {method_label(n)}" for n in norms],
                 rows, notes)
