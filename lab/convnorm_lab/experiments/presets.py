"""Presets: how big each experiment runs, and how it trains.

* ``smoke``: a few hundred real CIFAR-10 images, the six-conv network at width 4, two
  minibatches per run. Seconds; checks the code path, its numbers mean nothing.
* ``cpu``: real CIFAR-10 on a 2-core CPU: the six-conv network (width 16) on a 5,000-image
  class-balanced training subset (data scarcity draws 10, 30 and 70% of those), 8
  epochs, evaluation on 2,000 test images, 2 noise rates, label noise and data scarcity
  for the four networks of the paper's ablation tables, SimBA for 1,024 iterations on
  50 images, the run-time study on a width-16 ResNet18; each network's learning rate
  chosen by the learning-rate rule. A *reduced* protocol: every result file says so.
* ``fast``: the GPU protocol. The paper's networks (ResNet18; VGG16 in the convergence
  study) on the paper's full 45,000/5,000/10,000 split, trained with the established
  fast-CIFAR recipe so that a seed of the core comparison takes minutes: batch 512 with
  the learning rate scaled linearly from the paper's 0.1 at 128, Nesterov momentum, a
  one-cycle schedule (linear warm-up, linear decay to zero), mixed precision
  (bfloat16 where the GPU has it, float16 with loss scaling where it does not;
  ConvNorm's transforms stay in float32), channels-last memory, cuDNN's autotuner and the
  CUDA-graph step; each network's learning rate chosen by the learning-rate rule
  (:mod:`convnorm_lab.experiments.learning_rate`), since the recipe's rate is set on the
  BatchNorm network.
  Augmentation is the paper's (random crop and flip, on the GPU); nothing is added that
  could favour one normalization (no label smoothing, cutout, mixup or test-time
  augmentation).
* ``airbench``: the GPU protocol on airbench94's network (:class:`~convnorm_lab.models.nets.AirbenchNet`,
  width 64) in place of the paper's, on the full 45,000/5,000/10,000 split: the fast
  recipe of ``fast`` with the fast-CIFAR network's label smoothing and 2-pixel
  translations (:data:`AIRBENCH_RECIPE`), so that a training takes seconds on a GPU.
  The paper's regime (BN above 93 %) at a few per cent of ResNet18's cost. ResNet18 stays for
  one confirmatory comparison, BN against ConvNorm+BN on clean labels at ``fast``
  (``gpu_queue.CONFIRMATORY``), and for the run time.
* ``airbench-colab``: the airbench preset at a reader's own, shorter schedule
  (:data:`COLAB_EPOCHS`), every network at the recipe's rate: the chapters' "Train it yourself"
  on a GPU (:mod:`convnorm_lab.experiments.colab`).
* ``airbench-cpu``: the same network narrower, on a class-balanced subset of the
  training images, on a CPU (:data:`AIRBENCH_CPU_SCALE`, chosen by measurement:
  :mod:`convnorm_lab.experiments.cpu_scale`), with the airbench recipe at a batch of 128
  in float32, evaluated on all 10,000 official test images; the two primary noise rates,
  40 and 80 %, and the paper's 10 % for data scarcity.
* ``short-schedule``: the paper's optimizer and step schedule with the epochs
  compressed (16 epochs, the rate divided by 10 at 8 and 12): hours on a GPU, for
  readers who have them.
* ``paper``: the paper's protocol, for a GPU: ResNet18 (and VGG16 where the paper uses
  it), the full 45,000/5,000 train/validation split, 120 epochs (CIFAR-100: 150) with
  the learning rate divided by 10 at epochs 40 and 80 (60 and 120), batch 128, full test
  set, PGD-10/20, SimBA on 1,000 images for 3,072 iterations.

Every difference of a preset from the paper's protocol, with its source and its reason,
is listed by the book (``convnorm_book.results.deviations``).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import torch

from convnorm.validation import check_choice

from ..models.normalizations import BN, CONVNORM, CONVNORM_BN, NONE, OCNN_BN, ONI_BN, SN_BN, Norm
from ..training.trainer import TrainConfig
from .learning_rate import RULES, Rule


@dataclass(frozen=True)
class Preset:
    """Scale parameters shared by the experiments (see the module docstring).

    ``arch=None`` means the paper's networks; ``max_*`` cap the data (None: all);
    ``epochs``/``milestones`` are for CIFAR-10 (the paper preset uses the paper's
    CIFAR-100 schedule there); ``adv_*`` is the free adversarial training schedule;
    ``robust_norms`` the networks compared under label noise and data scarcity.

    The recipe: ``lr`` is the base learning rate at ``batch_size`` (a normalization's
    ``lr_divisor`` divides it: ONI's, the paper's 0.01 for 0.1), ``schedule`` ``"step"``
    (divided by 10 at ``milestones``) or ``"one-cycle"`` (a linear warm-up over
    ``warmup_fraction`` of the minibatches, then a linear decay to zero), ``precision``
    ``"fp32"`` or ``"mixed"`` (:func:`convnorm_lab.training.mixed_precision.resolve_precision`).

    ``scarcity_same_steps``: each data-scarcity subset trains for as many steps as the full
    training set (an epoch draws as many images as the full set has, passing over the
    subset several times); False keeps the paper's rule, the same epochs for every fraction,
    which at a short schedule leaves a small subset with too few steps to be trained.
    ``scarcity_passes`` (where set, in place of both): every subset is passed over this many
    times in all, the paper's 120 epochs, as long as that is no more than the full set's
    steps (``scarcity_epoch_images``).

    ``lr_rule``: the learning-rate rule, by its name in
    ``convnorm_lab.experiments.learning_rate.RULES`` (the property ``rule``): ``"previous-scale"``
    tries ``lr_reductions``; ``"declared"`` (the airbench presets) its own grid, up and down.

    ``label_smoothing`` and ``crop_padding``: the training's label smoothing and how far its
    random crop moves an image (:class:`~convnorm_lab.training.TrainConfig`).

    ``lr_reductions``: the divisors of each network's rate that the learning-rate rule tries
    on validation data, the same for every network
    (:mod:`convnorm_lab.experiments.learning_rate`); ``(1,)``: every network trains at the
    recipe's rate, as in the paper's protocol, which states one rate for all (ONI's aside).
    """

    name: str
    description: str
    arch: str | None
    width: int | None
    epochs: int
    milestones: tuple[int, ...]
    adv_epochs: int
    adv_milestones: tuple[int, ...]
    batch_size: int
    max_train: int | None
    max_val: int | None
    max_test: int | None
    max_batches_per_epoch: int | None
    attack_samples: int | None
    pgd_steps: tuple[int, ...]
    simba_samples: int
    simba_iters: int | None
    noise_rates: tuple[float, ...]
    fractions: tuple[float, ...]
    datasets: tuple[str, ...]
    convergence_archs: tuple[str, ...]
    robust_norms: tuple[str, ...]
    runtime_steps: int
    reduced: bool
    lr: float = 0.1
    nesterov: bool = False
    weight_decay: float = 1e-4
    schedule: str = "step"
    warmup_fraction: float = 0.0
    precision: str = "fp32"
    scarcity_same_steps: bool = True
    scarcity_passes: int | None = None
    lr_reductions: tuple[int, ...] = (1,)
    label_smoothing: float = 0.0
    crop_padding: int = 4
    cpu_channels_last: bool = False
    lr_rule: str = "previous-scale"

    def __post_init__(self):
        check_choice("lr_rule", self.lr_rule, sorted(RULES))
        if self.lr_reductions[:1] != (1,) or list(self.lr_reductions) != sorted(set(self.lr_reductions)) \
                or not all(isinstance(r, int) and r >= 1 for r in self.lr_reductions):
            raise ValueError(f"lr_reductions must be increasing integers starting at 1 (the network's own rate), "
                             f"got {self.lr_reductions!r}")

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def rule(self) -> Rule:
        """The learning-rate rule in force at this preset: ``lr_rule``'s, with this preset's
        ``lr_reductions`` for the previous scale's."""
        if self.lr_rule == "previous-scale":
            return replace(RULES[self.lr_rule], grid=self.lr_reductions)
        return RULES[self.lr_rule]

    def channels_last(self, device: torch.device, norm: str) -> bool:
        """Whether trainings of this preset with ``norm`` on ``device`` keep images and weights
        channels-last: on a CUDA GPU with mixed precision, whose tensor cores read that layout
        fastest, and on a CPU where ``cpu_channels_last`` says so (oneDNN's convolutions read it
        faster: 1.7 times for a training step of the airbench network at width 16), unless the
        network's layers would convert it at every call (its normalization's
        ``keeps_channels_last``). One layout per network."""
        if device.type == "cpu" and self.cpu_channels_last:
            return Norm(norm).base.keeps_channels_last(device.type)
        if device.type != "cuda" or self.precision != "mixed":
            return False
        return Norm(norm).base.keeps_channels_last(device.type)


# label noise and data scarcity: the paper's ablation tables (first four) and its
# figure, where the baselines are followed by BatchNorm like ConvNorm
_ALL_ROBUST = (NONE, BN, CONVNORM, CONVNORM_BN, SN_BN, ONI_BN, OCNN_BN)

#: the paper's protocol; the GPU protocol is it with a compressed schedule
_PAPER = Preset(
    name="paper",
    description="the paper's protocol (GPU): ResNet18/VGG16, 45k/5k split, 120 epochs (CIFAR-100: 150), "
                "batch 128, full test set, PGD-10/20, SimBA 1,000 images x 3,072 iterations",
    arch=None, width=None, epochs=120, milestones=(40, 80), adv_epochs=30, adv_milestones=(10, 20),
    batch_size=128, max_train=None, max_val=None, max_test=None, max_batches_per_epoch=None,
    attack_samples=None, pgd_steps=(10, 20), simba_samples=1000, simba_iters=None,
    noise_rates=(0.2, 0.4, 0.6, 0.8), fractions=(0.1, 0.3, 0.5, 0.7), datasets=("cifar10", "cifar100"),
    convergence_archs=("vgg16", "resnet18"), robust_norms=_ALL_ROBUST, runtime_steps=50, reduced=False,
    scarcity_same_steps=False,
)

#: the divisors of every network's rate tried by the learning-rate rule where a preset's
#: recipe departs from the paper's: its own rate, a third and a tenth of it, a tenth being
#: the step the paper takes for ONI, which diverges at the shared rate
LR_REDUCTIONS = (1, 3, 10)

#: the fast-CIFAR recipe's batch, and the paper's learning rate scaled linearly to it
FAST_BATCH = 512
#: the one-cycle schedule's length: the BN ResNet18 must reach the accuracy floor of
#: ``scripts/gpu_runs.py`` with it; on the JPEG copy it fell short at 10 and at 20 epochs
#: (``results/archive/``), each doubling gaining a few points, so the length doubled again
FAST_EPOCHS = 40

#: the recipe of the airbench94-style network (:class:`~convnorm_lab.models.nets.AirbenchNet`),
#: after airbench94's (Jordan 2024): label smoothing 0.2 and random translations by up to 2
#: pixels (with flips), as it trains; a one-cycle Nesterov SGD at the fast batch. airbench94
#: reaches 94 % in 10 epochs with tricks this recipe leaves out because they are tied to
#: BatchNorm or to evaluation (a frozen whitening stem, identity initialization, a larger rate
#: for BatchNorm biases, lookahead, test-time augmentation); without them its authors' ablation
#: needs about 35 epochs for 94 %. ``epochs`` is the shortest expected to keep BN above the
#: GPU window's floor of 93 % (a full-width CPU training verifies it). The rate was set on
#: BN's validation accuracy in a pilot at width 16 (10,000 images of the learning-rate rule's
#: seed, 8 epochs): at batch 512, 1.0 reached 69 % where 0.4 reached 67 %; at batch 128, a
#: quarter of each, 75 % against 72 %. The larger rate is airbench94's own scale too. Every
#: network then goes through the learning-rate rule, which tries three times and a third of it.
AIRBENCH_RECIPE = {"batch_size": FAST_BATCH, "lr": 1.0, "nesterov": True, "weight_decay": 5e-4,
                   "schedule": "one-cycle", "warmup_fraction": 0.2, "label_smoothing": 0.2, "crop_padding": 2}
AIRBENCH_EPOCHS = 24
#: the recipe at the cpu scale: the airbench recipe at a batch of 128, its rate scaled linearly
#: with the batch (the tens of thousands of images of an epoch there leave too few steps at the
#: GPU's batch)
CPU_BATCH = 128
CPU_RECIPE = {**AIRBENCH_RECIPE, "batch_size": CPU_BATCH, "lr": AIRBENCH_RECIPE["lr"] * CPU_BATCH / FAST_BATCH}

PRESETS = {
    "smoke": Preset(
        name="smoke",
        description="seconds: 200 real CIFAR-10 training images, the six-conv network at width 4, 2 "
                    "minibatches per run; checks the code path only, the numbers mean nothing",
        arch="small", width=4, epochs=2, milestones=(1,), adv_epochs=1, adv_milestones=(),
        batch_size=50, max_train=200, max_val=100, max_test=100, max_batches_per_epoch=2,
        attack_samples=20, pgd_steps=(2,), simba_samples=4, simba_iters=12,
        noise_rates=(0.4,), fractions=(0.3,), datasets=("cifar10",), convergence_archs=("small",),
        robust_norms=_ALL_ROBUST, runtime_steps=2, reduced=True,
    ),
    "cpu": Preset(
        name="cpu",
        description="REDUCED protocol for a 2-core CPU: the six-conv network of width 16, 5,000 training / "
                    "1,000 validation / 2,000 test images of real CIFAR-10, 8 epochs",
        arch="small", width=16, epochs=8, milestones=(5, 7), adv_epochs=3, adv_milestones=(2,),
        batch_size=128, max_train=5000, max_val=1000, max_test=2000, max_batches_per_epoch=None,
        attack_samples=500, pgd_steps=(10, 20), simba_samples=50, simba_iters=1024,
        noise_rates=(0.2, 0.8), fractions=(0.1, 0.3, 0.7), datasets=("cifar10",),
        convergence_archs=("small",), robust_norms=_ALL_ROBUST[:4],
        runtime_steps=5, reduced=True, lr_reductions=LR_REDUCTIONS,
    ),
    "fast": replace(
        _PAPER, name="fast",
        description=f"the GPU protocol: the paper's networks and full 45k/5k/10k split with the fast-CIFAR "
                    f"recipe: {FAST_EPOCHS} epochs, batch {FAST_BATCH}, one-cycle learning rate, Nesterov, "
                    "mixed precision, the CUDA-graph step",
        epochs=FAST_EPOCHS, milestones=(), adv_epochs=FAST_EPOCHS, adv_milestones=(), batch_size=FAST_BATCH,
        lr=_PAPER.lr * FAST_BATCH / _PAPER.batch_size, nesterov=True, weight_decay=5e-4, schedule="one-cycle",
        warmup_fraction=0.2, precision="mixed", simba_samples=200, datasets=("cifar10",), reduced=True,
        scarcity_same_steps=True, scarcity_passes=_PAPER.epochs, lr_reductions=LR_REDUCTIONS,
    ),
    "airbench": replace(
        _PAPER, name="airbench",
        description=f"the GPU protocol on airbench94's network: width 64, the full 45k/5k/10k split, "
                    f"{AIRBENCH_EPOCHS} epochs of batch {FAST_BATCH}, one-cycle Nesterov SGD, label smoothing 0.2, "
                    "2-pixel translations and flips, mixed precision, the CUDA-graph step",
        arch="airbench", width=64, epochs=AIRBENCH_EPOCHS, milestones=(), adv_epochs=AIRBENCH_EPOCHS,
        adv_milestones=(), precision="mixed", simba_samples=200, datasets=("cifar10",), convergence_archs=("airbench",),
        reduced=True, scarcity_same_steps=True, scarcity_passes=_PAPER.epochs, lr_rule="declared",
        cpu_channels_last=True, **AIRBENCH_RECIPE,
    ),
    "short-schedule": replace(
        _PAPER, name="short-schedule",
        description="the paper's networks, data and optimizer on one GPU with a compressed step schedule: "
                    "ResNet18/VGG16, 45k/5k/10k, 16 epochs (lr /10 at 8, 12), batch 128, PGD-10/20, "
                    "SimBA 1,000 images x 3,072 iterations",
        epochs=16, milestones=(8, 12), adv_epochs=8, adv_milestones=(4, 6), datasets=("cifar10",), reduced=True,
        scarcity_same_steps=True,
    ),
    "paper": _PAPER,
}


def smoke_form(preset: Preset) -> Preset:
    """``preset`` shrunk to seconds: its networks (at width 4), its experiments' structure
    (one noise rate, one fraction), its recipe, on 200 training images and 2 minibatches an epoch, so
    a test can run a protocol's whole code path on a CPU. Its numbers mean nothing."""
    return replace(preset, name=f"{preset.name}-smoke", description=f"seconds: the code path of {preset.name} on "
                   "200 images, width 4, 2 minibatches per epoch; the numbers mean nothing",
                   width=4, epochs=2, milestones=(1,), adv_epochs=1, adv_milestones=(), batch_size=50,
                   max_train=200, max_val=100, max_test=100, max_batches_per_epoch=2, attack_samples=20,
                   pgd_steps=(2,), simba_samples=4, simba_iters=12, noise_rates=_one(preset.noise_rates, 0.4),
                   fractions=_one(preset.fractions, 0.1), runtime_steps=2, reduced=True)


def _one(values: tuple[float, ...], preferred: float) -> tuple[float, ...]:
    """``(preferred,)`` if ``values`` holds it (the GPU plan's core uses 40 % noise and 10 % of
    the data), else the first value."""
    return (preferred,) if preferred in values else values[:1]


PRESETS["fast-smoke"] = smoke_form(PRESETS["fast"])
PRESETS["short-schedule-smoke"] = smoke_form(PRESETS["short-schedule"])
PRESETS["airbench-smoke"] = smoke_form(PRESETS["airbench"])

#: the cpu scale of the airbench network, as round 2 of its measurement chose it
#: (:mod:`convnorm_lab.experiments.cpu_scale`; a test holds the two equal): its first width,
#: training images and epochs. BN reaches 85 % on the official test images there, in about four
#: times the three minutes of one thread first aimed at.
AIRBENCH_CPU_SCALE = {"width": 16, "max_train": 25_000, "epochs": 16}
#: the validation images of the cpu scale, as in its measurement (they choose the epoch that counts)
AIRBENCH_CPU_VAL = 1_000
PRESETS["airbench-cpu"] = replace(
    PRESETS["airbench"], name="airbench-cpu",
    description=f"the airbench network on a 2-core CPU: width {AIRBENCH_CPU_SCALE['width']}, "
                f"{AIRBENCH_CPU_SCALE['max_train']:,} training and {AIRBENCH_CPU_VAL:,} validation images, the "
                f"10,000 official test images, {AIRBENCH_CPU_SCALE['epochs']} epochs of batch {CPU_BATCH}, the "
                "airbench recipe with its rate scaled to the batch, float32, each network's rate by the declared rule",
    **AIRBENCH_CPU_SCALE, adv_epochs=AIRBENCH_CPU_SCALE["epochs"], max_val=AIRBENCH_CPU_VAL, max_test=None,
    precision="fp32", attack_samples=500, simba_samples=50, simba_iters=1024, noise_rates=(0.4, 0.8),
    fractions=(0.1,), runtime_steps=5, **CPU_RECIPE,
)

#: the schedule of a reader's own training of the airbench network on a GPU (the chapters' "Train it
#: yourself": BN then ConvNorm+BN, one seed each), shorter than the airbench preset's, whose estimate on
#: a free Colab T4 comes to just over ten minutes (:mod:`convnorm_lab.experiments.colab`): a few epochs
#: fewer than the most that estimate allows in ten minutes, leaving about a sixth of them for its
#: optimism (it takes ResNet18's share of a GPU's peak for the smaller network)
COLAB_EPOCHS = 20
PRESETS["airbench-colab"] = replace(
    PRESETS["airbench"], name="airbench-colab",
    description=f"a reader's GPU training of the airbench network: the airbench preset shortened to {COLAB_EPOCHS} "
                "epochs, every network at the recipe's rate, as in the paper's protocol (a reader's two trainings "
                "leave no time for learning-rate trials)",
    epochs=COLAB_EPOCHS, adv_epochs=COLAB_EPOCHS, lr_rule="previous-scale",
)


def get_preset(name: str) -> Preset:
    if name not in PRESETS:
        raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {name!r}")
    return PRESETS[name]


def training_steps(preset: Preset, images: float) -> int:
    """Optimizer steps of a training at ``preset`` whose epochs draw ``images`` images each:
    its epochs times the minibatches of an epoch (:meth:`~convnorm_lab.training.TrainConfig.batches_per_epoch`)."""
    config = TrainConfig(batch_size=preset.batch_size, max_batches_per_epoch=preset.max_batches_per_epoch)
    return preset.epochs * config.batches_per_epoch(math.ceil(images))


def scarcity_epoch_images(preset: Preset, subset: int, full: int) -> int | None:
    """Images an epoch of a data-scarcity training draws from a ``subset`` of the ``full``
    training set: with :attr:`Preset.scarcity_passes` :math:`P`, the subset's
    :math:`P` passes spread over the epochs, :math:`\\lceil P\\,n_{\\mathrm{subset}} / E\\rceil`,
    but no more than the full set (and no fewer than the subset) an epoch; else the full
    set with ``scarcity_same_steps``; else ``None``, the subset once (the paper's rule)."""
    if preset.scarcity_passes is not None:
        return max(subset, min(full, math.ceil(preset.scarcity_passes * subset / preset.epochs)))
    return full if preset.scarcity_same_steps else None
