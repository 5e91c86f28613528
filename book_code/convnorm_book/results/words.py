"""How the book writes keys, scales and numbers for a reader: method and group names,
the scale of a set of records, and numbers with the decimals their size deserves."""
from __future__ import annotations

import html
import math
import re

from convnorm_lab.experiments import EXPERIMENTS, Preset
from convnorm_lab.experiments.experiment import ARCH_NAMES, CIFAR_TEST_IMAGES, VALIDATION_SPLIT, training_images
from convnorm_lab.experiments.schema import ResultSchema
from convnorm_lab.models.normalizations import NORMS, Norm
from convnorm_lab.training.trainer import TrainConfig

from .records import Records

#: the methods the experiments declare by a key that is not a normalization's (the ablation's)
_DECLARED_LABELS = {key: label for e in EXPERIMENTS.values() for key, label in e.schema.labels.items()}
#: display names of group keys that are not rates
GROUP_NAMES = {"cifar10": "CIFAR-10", "cifar100": "CIFAR-100", "imagenet": "ImageNet",
               **{arch: name.removeprefix("a ").removeprefix("an ") for arch, name in ARCH_NAMES.items()}}
#: a history metric in a reader's words
METRIC_NAMES = {"test_acc": "test accuracy", "train_acc": "training accuracy", "train_loss": "training loss",
                "val_acc": "validation accuracy"}


#: symbols as the code writes them in plain text, and typeset: as Markdown math (for a
#: page's prose, rendered as MyST) and as HTML (for tables, which render everywhere)
SYMBOLS = {"R_κ": (r"$R_\kappa$", "<i>R</i><sub><i>κ</i></sub>"),
           "ε_adv": (r"$\varepsilon_{\mathrm{adv}}$", "<i>ε</i><sub>adv</sub>"),
           "ε_SimBA": (r"$\varepsilon_{\mathrm{SimBA}}$", "<i>ε</i><sub>SimBA</sub>"),
           "r_noise": (r"$r_{\mathrm{noise}}$", "<i>r</i><sub>noise</sub>"),
           "κ": (r"$\kappa$", "<i>κ</i>"), "ρ": (r"$\rho$", "<i>ρ</i>"), "λ": (r"$\lambda$", "<i>λ</i>")}
_SYMBOL = re.compile("|".join(map(re.escape, sorted(SYMBOLS, key=len, reverse=True))))


def typeset(text: str, form: str = "markdown") -> str:
    """``text`` with its symbols (:data:`SYMBOLS`) typeset: ``"markdown"`` as math for a
    page's prose, ``"html"`` as HTML (the rest of the text escaped)."""
    if form == "html":
        return _SYMBOL.sub(lambda m: SYMBOLS[m.group()][1], html.escape(text))
    return _SYMBOL.sub(lambda m: SYMBOLS[m.group()][0], text)


def device_name(text: str) -> str:
    """A recorded device in a reader's words: ``"cpu (x86_64, 1 threads)"`` as
    ``"CPU (x86_64, 1 thread)"``."""
    text = re.sub(r"\b1 threads\b", "1 thread", text)
    return "CPU" + text[3:] if text.startswith("cpu") else text


def group_name(schema: ResultSchema, key: str) -> str:
    """A reader's name for a group key ("20%" for the noise rate "0.2", "CIFAR-10")."""
    return schema.group.paper_name(key) if schema.group.percent else GROUP_NAMES.get(key, key)


def method_label(method: str) -> str:
    """A reader's name for a method key: as its experiment declares it, else its
    normalization's (:class:`convnorm_lab.models.normalizations.Norm`); unknown keys are returned as given."""
    if method in _DECLARED_LABELS:
        return _DECLARED_LABELS[method]
    try:
        return Norm(method).label
    except ValueError:
        return method


def method_key(label: str) -> str:
    """The method key a reader's name stands for (the inverse of :func:`method_label`;
    unknown names are returned as given)."""
    for key in (*_DECLARED_LABELS, *NORMS):
        if method_label(key) == label:
            return key
    return label


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
    take (so numbers shown together, given one ``like``, share their decimals), and below
    0.001 as a power of ten (``"2.19 × 10⁻⁵"``)."""
    if value is None or not math.isfinite(value):
        return "—"
    size = abs(value if like is None else like)
    if size >= 100:
        return f"{value:,.0f}"
    if size >= 0.1 or size == 0:
        return f"{value:.2f}"
    if size < 1e-3:  # 2.19 × 10⁻⁵, the mantissa to three significant digits of ``like``
        power = math.floor(math.log10(size))
        digits = str(abs(power)).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))
        return f"{value / 10 ** power:.2f} × 10{'⁻' if power < 0 else ''}{digits}"
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


def percent(fraction: float) -> str:
    """``0.2`` as ``"20 %"``, ``0.125`` as ``"12.5 %"``."""
    return f"{fraction * 100:g} %"


def data_sizes(settings) -> str:
    """The training, validation and test images of a preset, in words: ``"5,000
    training, 1,000 validation and 2,000 test images"`` (the paper's split where the
    preset caps nothing: 45,000, 5,000 and 10,000)."""
    val = VALIDATION_SPLIT if settings.max_val is None else settings.max_val
    test = CIFAR_TEST_IMAGES if settings.max_test is None else settings.max_test
    return f"{training_images(settings):,} training, {val:,} validation and {test:,} test images"


def schedule(settings: Preset, adversarial: bool = False, decay: bool = True) -> str:
    """How long a preset trains and how its learning rate moves, in words: ``"8 epochs,
    the learning rate divided by 10 after epochs 5 and 7"``, ``"10 epochs on a one-cycle
    schedule (a linear warm-up over 20 % of the steps, then a linear decay to zero)"``;
    ``adversarial`` for the free adversarial schedule, ``decay=False`` for a constant rate
    (the convergence study; a one-cycle preset keeps only its warm-up). The deviations
    table and the chapters both say it so."""
    epochs = settings.adv_epochs if adversarial else settings.epochs
    milestones = settings.adv_milestones if adversarial else settings.milestones
    text = f"{epochs:,} epoch{'s' if epochs != 1 else ''}"
    if settings.schedule == "one-cycle":
        warmup = f"{settings.warmup_fraction * 100:g} %"
        if not decay:
            return text + f" at a constant learning rate after a linear warm-up over {warmup} of the steps"
        return (text + f" on a one-cycle schedule (a linear warm-up over {warmup} of the steps, then a linear decay "
                "to zero)")
    if not decay or not milestones:
        return text + " at a constant learning rate"
    at = ", ".join(map(str, milestones[:-1])) + " and " + str(milestones[-1]) if len(milestones) > 1 else milestones[0]
    return (text + f", the learning rate divided by {round(1 / TrainConfig.gamma)} after "
            f"epoch{'s' if len(milestones) > 1 else ''} {at}")


def optimizer(settings, regularize: bool = True) -> str:
    """The optimizer of a preset, in words: ``"SGD with momentum 0.9 at a learning rate
    of 0.1 (batch 128) and weight decay 0.0001"`` (``regularize=False``: no weight decay,
    as in the convergence study)."""
    kind = "Nesterov momentum" if settings.nesterov else "momentum"
    decay = f" and weight decay {settings.weight_decay:g}" if regularize else " and no weight decay"
    rate = (f"a learning rate of {settings.lr:g}" if settings.lr_reductions == (1,) else
            f"each network's learning rate, {settings.lr:g} or the smaller one the learning-rate rule chose for it")
    return f"SGD with {kind} {TrainConfig.momentum:g} at {rate} (batch {settings.batch_size:,}){decay}"


#: whole numbers a reader reads as words
NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def spelled(n: int) -> str:
    """``n`` in words up to ten (``"three"``; ``"none"`` for 0), in digits above (``"15"``)."""
    if n == 0:
        return "none"
    return NUMBER_WORDS[n] if 0 < n < len(NUMBER_WORDS) else f"{n:,}"


ORDINAL_WORDS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")


def ordinal(n: int) -> str:
    """The place ``n`` in words up to ten (``"third"``), in digits above (``"11th"``, ``"22nd"``)."""
    if n < 1:
        raise ValueError(f"a place n counts from 1, got {n}")
    if n <= len(ORDINAL_WORDS):
        return ORDINAL_WORDS[n - 1]
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
