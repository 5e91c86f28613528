"""Presets: how big each experiment runs, and how it trains.

* ``smoke``: a few hundred real CIFAR-10 images, the six-conv network at width 4, two
  minibatches per run. Seconds; checks the code path, its numbers mean nothing.
* ``cpu``: real CIFAR-10 on a 2-core CPU: the six-conv network (width 16) on a 5,000-image
  class-balanced training subset (data scarcity draws 10, 30 and 70% of those), 8
  epochs, evaluation on 2,000 test images, 2 noise rates, label noise and data scarcity
  for the four networks of the paper's ablation tables, SimBA for 1,024 iterations on
  50 images, the run-time study on a width-16 ResNet18. A *reduced* protocol: every
  result file says so.
* ``fast``: the GPU protocol. The paper's networks (ResNet18; VGG16 in the convergence
  study) on the paper's full 45,000/5,000/10,000 split, trained with the established
  fast-CIFAR recipe so that a seed of the core comparison takes minutes: batch 512 with
  the learning rate scaled linearly from the paper's 0.1 at 128, Nesterov momentum, a
  one-cycle schedule (linear warm-up, linear decay to zero), mixed precision
  (bfloat16 where the GPU has it, float16 with loss scaling where it does not;
  ConvNorm's transforms stay in float32), channels-last memory, cuDNN's autotuner and the
  CUDA-graph step.
  Augmentation is the paper's (random crop and flip, on the GPU); nothing is added that
  could favour one normalization (no label smoothing, cutout, mixup or test-time
  augmentation).
* ``short-schedule``: the paper's optimizer and step schedule with the epochs
  compressed (16 epochs, the rate divided by 10 at 8 and 12): hours on a GPU, for
  readers who have them.
* ``paper``: the paper's protocol, for a GPU: ResNet18 (and VGG16 where the paper uses
  it), the full 45,000/5,000 train/validation split, 120 epochs (CIFAR-100: 150) with
  the learning rate divided by 10 at epochs 40 and 80 (60 and 120), batch 128, full test
  set, PGD-10/20, SimBA on 1,000 images for 3,072 iterations.

Every difference of a preset from the paper's protocol, with its source and its reason,
is listed by :func:`protocol_deviations`.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import torch

from ..functional import current_policy


@dataclass(frozen=True)
class Preset:
    """Scale parameters shared by the experiments (see the module docstring).

    ``arch=None`` means the paper's networks; ``max_*`` cap the data (None: all);
    ``epochs``/``milestones`` are for CIFAR-10 (the paper preset uses the paper's
    CIFAR-100 schedule there); ``adv_*`` is the free adversarial training schedule;
    ``robust_norms`` the networks compared under label noise and data scarcity.

    The recipe: ``lr`` is the base learning rate at ``batch_size`` (ONI takes
    ``ONI_LR_FACTOR`` of it, the paper's 0.01 for 0.1), ``schedule`` ``"step"``
    (divided by 10 at ``milestones``) or ``"one-cycle"`` (a linear warm-up over
    ``warmup_fraction`` of the minibatches, then a linear decay to zero), ``precision``
    ``"fp32"`` or ``"mixed"`` (:func:`convnorm.training.mixed_precision.resolve_precision`).

    ``scarcity_same_steps``: each data-scarcity subset trains for as many steps as the full
    training set (an epoch draws as many images as the full set has, passing over the
    subset several times); False keeps the paper's rule, the same epochs for every fraction,
    which at a short schedule leaves a small subset with too few steps to be trained.
    ``scarcity_passes`` (where set, in place of both): every subset is passed over this many
    times in all, the paper's 120 epochs, as long as that is no more than the full set's
    steps (``scarcity_epoch_images``).
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

    def as_dict(self) -> dict:
        return asdict(self)

    def channels_last(self, device: torch.device, norm: str) -> bool:
        """Whether trainings of this preset with ``norm`` on ``device`` keep images and weights
        channels-last: on a CUDA GPU with mixed precision, whose tensor cores read that layout
        fastest, unless the network's ConvNorm layers would convert it at every layer (their
        filter is not the fused one under the policy in force:
        :meth:`~convnorm.functional.ComputationPolicy.keeps_channels_last`). One layout per network."""
        if device.type != "cuda" or self.precision != "mixed":
            return False
        return "convnorm" not in norm.split("+") or current_policy().keeps_channels_last(device.type)


# label noise and data scarcity: the paper's ablation tables (first four) and its
# figure, where the baselines are followed by BatchNorm like ConvNorm
_ALL_ROBUST = ("none", "bn", "convnorm", "convnorm+bn", "sn+bn", "oni+bn", "ocnn+bn")

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

#: the fast-CIFAR recipe's batch, and the paper's learning rate scaled linearly to it
FAST_BATCH = 512
#: the one-cycle schedule's length: the BN ResNet18 must reach the accuracy floor of
#: ``scripts/gpu_runs.py`` with it; on the JPEG copy it fell short at 10 and at 20 epochs
#: (``results/archive/``), each doubling gaining a few points, so the length doubled again
FAST_EPOCHS = 40

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
        convergence_archs=("small",), robust_norms=("none", "bn", "convnorm", "convnorm+bn"),
        runtime_steps=5, reduced=True,
    ),
    "fast": replace(
        _PAPER, name="fast",
        description=f"the GPU protocol: the paper's networks and full 45k/5k/10k split with the fast-CIFAR "
                    f"recipe: {FAST_EPOCHS} epochs, batch {FAST_BATCH}, one-cycle learning rate, Nesterov, "
                    "mixed precision, the CUDA-graph step",
        epochs=FAST_EPOCHS, milestones=(), adv_epochs=FAST_EPOCHS, adv_milestones=(), batch_size=FAST_BATCH,
        lr=_PAPER.lr * FAST_BATCH / _PAPER.batch_size, nesterov=True, weight_decay=5e-4, schedule="one-cycle",
        warmup_fraction=0.2, precision="mixed", simba_samples=200, datasets=("cifar10",), reduced=True,
        scarcity_same_steps=True, scarcity_passes=_PAPER.epochs,
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


def get_preset(name: str) -> Preset:
    if name not in PRESETS:
        raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {name!r}")
    return PRESETS[name]


def _count(value: int | None, full: str) -> str:
    return full if value is None else f"{value:,}"


def training_steps(preset: Preset, images: float) -> int:
    """Optimizer steps of a training at ``preset`` whose epochs draw ``images`` images each:
    its epochs times the minibatches of an epoch (:meth:`~convnorm.training.TrainConfig.batches_per_epoch`)."""
    from ..training.trainer import TrainConfig

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


def schedule_in_words(settings: Preset, adversarial: bool = False, decay: bool = True) -> str:
    """How long a preset trains and how its learning rate moves, in words: ``"8 epochs,
    the learning rate divided by 10 after epochs 5 and 7"``, ``"10 epochs on a one-cycle
    schedule (a linear warm-up over 20 % of the steps, then a linear decay to zero)"``;
    ``adversarial`` for the free adversarial schedule, ``decay=False`` for a constant rate
    (the convergence study; a one-cycle preset keeps only its warm-up). The deviations
    table and the chapters both say it so."""
    from ..training.trainer import TrainConfig

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


def protocol_deviations(name: str) -> list[dict[str, str]]:
    """Every setting in which preset ``name`` differs from the paper's protocol, and the
    settings the paper leaves open, with where the value used comes from and why.

    Each row: ``setting``; ``paper`` (what the paper states, or "not stated");
    ``here`` (what preset ``name`` does); ``source`` of the value used here: ``"paper"``,
    ``"authors' code"`` or ``"this book"`` (a compression or a choice of ours); and
    ``reason``.
    """
    from .context import FREE_REPLAYS, OCNN_LAMBDA, OCNN_LAMBDA_ADVERSARIAL, ONI_LR_DIVISOR, RAMP_FRACTION
    from .experiment import network, training_images

    p, ref = get_preset(name), PRESETS["paper"]
    rows = []

    def row(setting, paper, here, source, reason):
        rows.append({"setting": setting, "paper": paper, "here": here, "source": source, "reason": reason})

    if p.arch is not None:
        row("network", "ResNet18 (VGG16 in the convergence study)", network(p),
            "this book", "a network small enough to train on a laptop's processor")
    if (p.epochs, p.milestones, p.schedule) != (ref.epochs, ref.milestones, ref.schedule):
        row("schedule (CIFAR-10)", schedule_in_words(ref), schedule_in_words(p), "this book",
            "a schedule that fits the minutes a reader's GPU, or a short GPU session, has"
            + ("; the rate stays high for most of a short schedule (the paper: a third), so that the network is "
               "trained before the rate falls" if p.schedule == "step" else
               "; the one-cycle shape is how the fast-CIFAR recipes reach full accuracy in few epochs, and the "
               "length is the shortest expected to bring the BatchNorm ResNet18 to the accuracy floor (shorter "
               "ones fell short on a GPU)"))
    if p.batch_size != ref.batch_size or p.lr != ref.lr:
        row("batch size and learning rate", f"batch not stated (authors' code: {ref.batch_size}), lr {ref.lr:g}",
            f"batch {p.batch_size}, lr {p.lr:g}", "this book",
            "a large batch fills the GPU; the rate is scaled linearly with the batch (the usual rule), "
            "with a warm-up so that the large rate does not diverge in the first steps")
    else:
        row("batch size and learning rate", f"batch not stated (authors' code: {ref.batch_size}), lr {ref.lr:g}",
            f"batch {p.batch_size}, lr {p.lr:g}", "authors' code", "the paper does not state the batch")
    if p.lr != ref.lr:
        row("learning rate of the networks without BatchNorm", f"{ref.lr:g}, as every network (ONI: a tenth)",
            f"{p.lr:g}, as every network (ONI: a tenth)", "this book",
            "one recipe for every arm, its rate tuned on the BN network; whether the networks without BatchNorm "
            "train under it is read from their records (the chapter on training shows their curves), and an arm "
            "that does not would need its rate chosen on validation data, by the same rule for every arm")
    if p.nesterov:
        row("momentum", "SGD, momentum 0.9", "SGD, Nesterov momentum 0.9", "this book",
            "the fast-CIFAR recipes use Nesterov momentum; it changes the update, not the network")
    if p.weight_decay != ref.weight_decay:
        row("weight decay", f"{ref.weight_decay:g}", f"{p.weight_decay:g}", "this book",
            "short schedules need stronger regularization to reach full accuracy (the fast-CIFAR recipes' value); "
            "every method gets the same")
    if p.precision != ref.precision:
        row("arithmetic", "float32 (not stated)", "mixed precision: bfloat16 where the GPU has it, float16 with "
            "loss scaling where it does not; each ConvNorm layer (its convolution, transforms and normalizer) "
            "in float32, and so each baseline's reparametrization (SN's power iteration, ONI's Newton iteration, "
            "OCNN's penalty)", "this book",
            "about twice the speed on tensor cores; the transforms stay exact enough in float32, and every "
            "method's normalization of its weights is computed in the same precision, so that none is favoured")
    row("ONI learning rate", "0.01 (0.1 gives NaN)", f"the base rate / {ONI_LR_DIVISOR} ({p.lr / ONI_LR_DIVISOR:g})",
        "paper", "the paper's footnote")
    row("OCNN penalty", "λ = 0.01 (chosen on validation); 0.0001 in the adversarial study",
        f"λ = {OCNN_LAMBDA:g}; {OCNN_LAMBDA_ADVERSARIAL:g} in the adversarial study, on every convolution",
        "this book", "the paper states λ but not which layers carry the penalty (the authors' code: each "
        "block's first convolution and the shortcuts); every convolution is the method as its authors "
        "(Wang et al.) define it")
    row("baselines with BatchNorm", "not stated", "in the adversarial, label-noise and data-scarcity studies SN, "
        "ONI and OCNN are each followed by BatchNorm, like ConvNorm; in SimBA and conditioning no network has "
        "BatchNorm", "this book", "so that each method differs from the BN network in its normalization alone, as "
        "ConvNorm+BN does (the authors' ConvNorm has its BatchNorm built in)")
    row("ConvNorm's running normalizer", "not stated (authors' code: a cosine ramp over 40,000 training steps)",
        f"the same ramp over {RAMP_FRACTION:.1%} of the training's steps", "this book",
        "40,000 steps are that share of the paper's 42,240; a fixed 40,000 would leave a short training on the "
        "ramp's first stretch, where evaluation uses the last weights' normalizer alone")
    row("free adversarial training", "the method of Shafahi et al. (length not stated)",
        schedule_in_words(p, adversarial=True) + f", each minibatch replayed {FREE_REPLAYS} times; the perturbation "
        "is carried from one minibatch to the next", "this book",
        "carrying the perturbation is the method as Shafahi et al. define it (the authors' code resets it each "
        "minibatch)" + ("" if p.adv_epochs == ref.adv_epochs else "; the length is compressed like the main "
                        "schedule (authors' code: 30 epochs, at 10 and 20)"))
    row("PGD step size and start", "not stated", "2/255, random start within the radius ε_adv", "authors' code",
        "the paper does not state them")
    row("data-scarcity subsets", "randomly sampled", "random subsets that keep every class's share (class-balanced)",
        "this book", "a 10 % subset drawn without regard to class can leave some classes short; balancing removes "
        "that source of variance from the comparison")
    smallest, full = min(p.fractions), training_images(p)
    subset = round(smallest * full)
    epoch_images = scarcity_epoch_images(p, subset, full)
    if epoch_images is not None:
        steps = training_steps(p, epoch_images)
        passes = p.epochs * epoch_images / subset
        rule = (f"each subset passed over as often as the paper passes over it, {p.scarcity_passes}, up to the full "
                f"set's steps" if p.scarcity_passes is not None else "as many steps as the full training set for "
                "every fraction")
        row("data-scarcity training length",
            f"{ref.epochs} epochs for every fraction ({training_steps(ref, smallest * training_images(ref)):,} steps "
            f"and {ref.epochs} passes over the subset at {smallest:.0%} of the data)",
            f"{rule}: at {smallest:.0%} of the data, {steps:,} steps and {passes:,.0f} passes over the subset",
            "this book", f"the paper's rule at this preset's length would give {training_steps(p, smallest * full):,} "
            f"steps at {smallest:.0%} of the data, too few to train the network (the 20-epoch GPU records on a 10 % "
            "subset, made so, stayed far below the full set's accuracy), so that scarcity would be confounded with "
            "under-training" + ("; the paper's passes keep each image seen as often as in the paper, where the full "
                                "set's steps would pass over a small subset several times as often" if
                                p.scarcity_passes is not None else
                                f"; the same steps keep the subsets trained, as the paper's {ref.epochs} epochs do"))
    row("label noise", "symmetric, noise rate r_noise", "symmetric: a flipped label is uniform over all classes, so "
        "about 9/10 of r_noise of the labels change (CIFAR-10), on the training and validation labels", "paper",
        "the paper's definition (its appendix)")
    row("conditioning study", "networks trained with the hyperparameters of Table 1, condition numbers of the "
        "convolutions", "networks trained with this preset's standard (non-adversarial) schedule; the exact "
        "singular values of the operator each trained layer applies in evaluation (for ConvNorm: its running "
        "normalizer and affine kernel included)", "this book",
        "the operator the network applies is what its conditioning is about; the adversarial recipe of "
        "Table 1 is not needed to measure it")
    row("model reported", "the epoch with the best validation accuracy (under label noise: the maximum test "
        "accuracy over the epochs); not stated for the attacks and the condition numbers",
        "the best validation epoch for every accuracy (under label noise, the paper's maximum and, beside it, the "
        "best noisy-validation epoch) and for the SimBA attack; the last epoch for the attacks after adversarial "
        "training and for the condition numbers", "this book",
        "the paper's selection wherever it states one; where it does not, the network the training ends with, "
        "which is the one its schedule was made for (free adversarial training ends at its smallest learning "
        "rate)")
    row("convergence speed", "iterations at batch 128 (ConvNorm's 1,000 against BN's 8,000)",
        f"images seen, iterations times the batch ({p.batch_size:,} here): the paper's iterations are "
        f"{1_000 * ref.batch_size:,} and {8_000 * ref.batch_size:,} images", "this book",
        "an iteration of another batch sees another number of images; images seen compare across batches")
    if (p.epochs, p.schedule) != (ref.epochs, ref.schedule):
        row("label-noise regime", f"{schedule_in_words(ref)}: long enough for the networks to memorize the noisy "
            "labels, and the maximum test accuracy is taken over that whole course",
            f"{schedule_in_words(p)}: whether the networks reach the memorizing regime is read from their training "
            "accuracy on the noisy labels (near the share of correct labels: not memorized; near 100 %: memorized), "
            "which the chapter on robustness shows", "this book",
            "the paper's gaps under label noise may arise as its networks memorize the wrong labels; a schedule "
            "too short to memorize tests the gaps before that regime, so the chapter says which regime its "
            "records are in")
    if p.max_train is not None:
        row("training images", "45,000 (10% of 50,000 held out)", f"{p.max_train:,} (class-balanced)",
            "this book", "a training set a processor can take")
    if p.max_val is not None or p.max_test is not None:
        row("validation / test images", "5,000 / 10,000",
            f"{_count(p.max_val, '5,000')} / {_count(p.max_test, '10,000')}", "this book",
            "evaluation after every epoch costs less")
    if p.noise_rates != ref.noise_rates:
        row("label-noise rates", "0.2, 0.4, 0.6, 0.8", ", ".join(f"{r:g}" for r in p.noise_rates), "this book",
            "the lowest and the highest rate, to save time")
    if p.fractions != ref.fractions:
        row("training fractions (scarcity)", "0.1, 0.3, 0.5, 0.7", ", ".join(f"{f:g}" for f in p.fractions),
            "this book", "fewer fractions, to save time")
    if p.simba_samples != ref.simba_samples or p.simba_iters is not None:
        row("SimBA", "1,000 images, 3,072 iterations",
            f"{p.simba_samples:,} images, {_count(p.simba_iters, '3,072')} iterations", "this book",
            "the attack queries the network thousands of times per image")
    if p.attack_samples is not None:
        row("PGD/FGSM test images", "10,000", f"{p.attack_samples:,}", "this book", "the attacks take time")
    if "cifar100" not in p.datasets:
        row("CIFAR-100", "reported", "not run", "this book",
            "the book's records use CIFAR-10 (the paper preset runs CIFAR-100 when its archive is given)")
    row("ImageNet, GANs", "reported", "not run", "this book", "far beyond the compute of this book")
    row("CIFAR-10 copy", "the official files", "the official images (the official archive, or their lossless copy) "
        "where found, else a lossy JPEG copy (quality 75); a record names the copy it read", "this book",
        "the official archive cannot always be downloaded; the lossless copy holds the same pixels, and accuracies "
        "on the JPEG copy run lower (the appendix measures by how much at the reduced scale)")
    return rows
