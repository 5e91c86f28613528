"""How the book writes keys, scales and numbers for a reader: method and group names,
the scale of a set of records, and numbers with the decimals their size deserves."""
from __future__ import annotations

import math

from convnorm.experiments.schema import ResultSchema

from .records import Records

#: a reader's names of the normalization keys
METHOD_LABELS = {
    "none": "vanilla", "bn": "BN", "convnorm": "ConvNorm", "convnorm+bn": "ConvNorm+BN",
    "sn": "SN", "oni": "ONI", "ocnn": "OCNN", "sn+bn": "SN+BN", "oni+bn": "ONI+BN", "ocnn+bn": "OCNN+BN",
    "cayley": "Cayley", "convnorm+bn, affine=on": "ConvNorm+BN (affine)", "convnorm, affine=on": "ConvNorm (affine)",
    "convnorm+bn, affine=off": "ConvNorm+BN (no affine)", "convnorm, affine=off": "ConvNorm (no affine)",
}
#: display names of group keys that are not rates
GROUP_NAMES = {"cifar10": "CIFAR-10", "cifar100": "CIFAR-100", "imagenet": "ImageNet", "small": "six-conv network",
               "resnet18": "ResNet18", "vgg16": "VGG16"}
#: a history metric in a reader's words
METRIC_NAMES = {"test_acc": "test accuracy", "train_acc": "training accuracy", "train_loss": "training loss",
                "val_acc": "validation accuracy"}


def group_name(schema: ResultSchema, key: str) -> str:
    """A reader's name for a group key ("20%" for the noise rate "0.2", "CIFAR-10")."""
    return schema.group.paper_name(key) if schema.group.percent else GROUP_NAMES.get(key, key)


def method_label(method: str) -> str:
    """A reader's name for a method key (unknown keys are returned as given)."""
    return METHOD_LABELS.get(method, method)


def scale_name(records: Records) -> str:
    """``"reduced scale"`` (a smaller network and data), ``"short schedule"`` (the
    paper's networks and data, fewer epochs) or ``"full scale"``, from the recorded preset."""
    settings = records.settings
    if not settings.reduced:
        return "full scale"
    return "reduced scale" if settings.arch is not None else "short schedule"


def number(value: float | None, like: float | None = None) -> str:
    """``value`` with the decimals suited to the size of ``like`` (default: itself): none
    from 100 up, two from 0.1 up, else as many as three significant digits of ``like``
    take (so numbers shown together, given one ``like``, share their decimals)."""
    if value is None or not math.isfinite(value):
        return "—"
    size = abs(value if like is None else like)
    if size >= 100:
        return f"{value:,.0f}"
    if size >= 0.1 or size == 0:
        return f"{value:.2f}"
    return f"{value:.{2 - math.floor(math.log10(size))}f}"


def signed(value: float, like: float | None = None) -> str:
    """:func:`number` with its sign (a true minus sign)."""
    return ("+" if value >= 0 else "−") + number(abs(value), like=value if like is None else like)


def listing(items, most: int | None = None) -> str:
    """``"a"``, ``"a and b"``, ``"a, b and c"``; beyond ``most`` items, the first ``most``
    and how many more."""
    items = [str(item) for item in items]
    if most is not None and len(items) > most:
        items = items[:most] + [f"{len(items) - most} more"]
    if not items:
        return ""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
