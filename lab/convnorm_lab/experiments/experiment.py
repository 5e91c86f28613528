"""The declaration of an experiment, and the words that say at what scale it ran.

Each experiment of the paper is declared once, in its own module of
:mod:`convnorm_lab.experiments.catalog`, the one module that writes its name: the function
that conducts it, the schema of its results (:mod:`convnorm_lab.experiments.schema`: its
methods, numbers, and the table of the paper's values that reports them), the name of each
of its runs (:meth:`Experiment.runs`, which the GPU queue and the book's requests read),
its title, its number of seeds, and what one of its runs trains at a preset, in a reader's
words (:meth:`Experiment.scale`). Everything else names an experiment through its
declaration. What the book reads in it (the paper's claims, the primary endpoints) is
declared once too, beside the book: ``convnorm_book.results.studies``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .context import Context
from .presets import PRESETS, Preset
from .schema import ResultSchema

#: the networks in a reader's words
ARCH_NAMES = {"small": "a six-conv network", "resnet18": "ResNet18", "vgg16": "VGG16",
              "airbench": "an airbench94 network"}
#: CIFAR's training and test images
CIFAR_TRAINING_IMAGES, CIFAR_TEST_IMAGES = 50_000, 10_000
#: the paper's split of the training images: 10 % held out for validation, the rest trained on
VALIDATION_SPLIT = CIFAR_TRAINING_IMAGES // 10
TRAINING_SPLIT = CIFAR_TRAINING_IMAGES - VALIDATION_SPLIT


def count(n: int, noun: str) -> str:
    """``"1 epoch"``, ``"8 epochs"``, ``"45,000 images"``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def networks_in_words(preset: Preset, archs: tuple[str, ...] = ("resnet18",)) -> str:
    """The network(s) at ``preset``: the preset's own (with its width) where it replaces
    the paper's, else the paper's ``archs``."""
    if preset.arch is not None:
        return f"{ARCH_NAMES[preset.arch]} of width {preset.width}"
    return " and ".join(ARCH_NAMES[a] for a in archs)


def training_images(preset: Preset) -> int:
    """How many training images a run at ``preset`` sees: the whole training split unless
    the preset caps it."""
    return TRAINING_SPLIT if preset.max_train is None else preset.max_train


def trained(preset: Preset, archs: tuple[str, ...] = ("resnet18",)) -> str:
    """What a standard run trains: ``"ResNet18, 45,000 training images, 10 epochs"``."""
    return f"{networks_in_words(preset, archs)}, {count(training_images(preset), 'training image')}, " \
           f"{count(preset.epochs, 'epoch')}"


def run_alone(group: str | None, method: str) -> str:
    """The run name of an experiment that trains each method once: the method's key."""
    return method


def run_in_group(prefix: str) -> Callable[[str | None, str], str]:
    """The run names of an experiment that trains each method once per group:
    ``<prefix><group>-<method>`` (``"noise0.4-convnorm+bn"``, ``"cifar10-bn"``)."""
    def name(group: str | None, method: str) -> str:
        return f"{prefix}{group}-{method}"

    return name


@dataclass(frozen=True)
class Experiment:
    """One experiment of the paper.

    ``summary``: one line for ``--help``; ``conduct``: the function of a
    :class:`~convnorm_lab.experiments.context.Context` that trains (or finds) its runs and
    returns its results; ``schema``: their shape and the paper's numbers; ``title``: what
    its table shows; ``run_name``: the name of the run of a method in a group (the group
    key as the schema writes it, None for an experiment without groups), which run
    requests name (``--run``); ``seeds``: how many its results are averaged over (the
    paper's count where it states one); ``trains``: False for an experiment that times steps
    alone on its device and has no runs to train apart; ``networks_in_words``: the
    network(s) it trains at a preset, in words; ``describe``: what one run trains at a
    preset; ``paper_protocol``: the paper's protocol in words where ``describe`` of the
    paper preset would misstate it (what the paper leaves unstated).
    """

    name: str
    summary: str
    conduct: Callable[[Context], dict]
    schema: ResultSchema
    title: str
    run_name: Callable[[str | None, str], str] = run_alone
    networks_in_words: Callable[[Preset], str] = networks_in_words
    describe: Callable[[Preset], str] = trained
    paper_protocol: str | None = None
    seeds: int = 3
    trains: bool = True

    def runs(self, group: str | None, methods: tuple[str, ...]) -> tuple[str, ...]:
        """The names of the runs of ``methods`` in ``group`` (:attr:`run_name`)."""
        return tuple(self.run_name(group, method) for method in methods)

    def scale(self, preset: Preset) -> str:
        """What one run of this experiment trains at ``preset``, in a reader's words."""
        return self.describe(preset)

    def paper_scale(self) -> str:
        """The paper's protocol for this experiment, in the words of :meth:`scale`."""
        return self.paper_protocol or self.describe(PRESETS["paper"])
