"""Presets: how big each experiment runs.

* ``smoke``: a few hundred real CIFAR-10 images, a 4-channel small net, two
  minibatches per run. Seconds; checks the code path, its numbers mean nothing.
* ``cpu``: real CIFAR-10 on a 2-core CPU within about 45 minutes per experiment
  (sized from training-step times measured with one thread): the small net (width 16) on a 5,000-image
  class-balanced training subset (data scarcity draws 10, 30 and 70% of those), 8
  epochs, evaluation on 2,000 test images, 2 noise rates, label noise and data scarcity
  for the four networks of the paper's ablation tables, SimBA for 1,024 iterations on
  50 images, the run-time study on a width-16 ResNet18. A *reduced* protocol: every
  result file says so.
* ``short-schedule``: the paper's protocol on one GPU with its schedule compressed, so that one
  seed of an experiment's network trains in minutes on an H100/H200: the paper's networks,
  optimizer, augmentation and full 45,000/5,000/10,000 split, 16 epochs with the learning
  rate divided by 10 at epochs 8 and 12 (free adversarial training: 8 epochs of 4 replays,
  divided at 4 and 6), full test set, PGD-10/20, SimBA on 1,000 images for 3,072
  iterations. Its differences from ``paper`` are listed by
  :func:`protocol_deviations`.
* ``paper``: the paper's protocol, for a GPU: ResNet18 (and VGG16 where the paper uses
  it), the full 45,000/5,000 train/validation split, 120 epochs (CIFAR-100: 150) with
  the learning rate divided by 10 at epochs 40 and 80 (60 and 120), batch 128, full test
  set, PGD-10/20, SimBA on 1,000 images for 3,072 iterations.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace


@dataclass(frozen=True)
class Preset:
    """Scale parameters shared by the experiments (see the module docstring).

    ``arch=None`` means the paper's networks; ``max_*`` cap the data (None: all);
    ``epochs``/``milestones`` are for CIFAR-10 (the paper preset uses the paper's
    CIFAR-100 schedule there); ``adv_*`` is the free adversarial training schedule;
    ``robust_norms`` the networks compared under label noise and data scarcity.
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

    def as_dict(self) -> dict:
        return asdict(self)


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
)

PRESETS = {
    "smoke": Preset(
        name="smoke",
        description="seconds: 200 real CIFAR-10 training images, a 4-channel small net, 2 minibatches "
                    "per run; checks the code path only, the numbers mean nothing",
        arch="small", width=4, epochs=2, milestones=(1,), adv_epochs=1, adv_milestones=(),
        batch_size=50, max_train=200, max_val=100, max_test=100, max_batches_per_epoch=2,
        attack_samples=20, pgd_steps=(2,), simba_samples=4, simba_iters=12,
        noise_rates=(0.4,), fractions=(0.3,), datasets=("cifar10",), convergence_archs=("small",),
        robust_norms=_ALL_ROBUST, runtime_steps=2, reduced=True,
    ),
    "cpu": Preset(
        name="cpu",
        description="REDUCED protocol for a 2-core CPU (<= ~45 min per experiment): small net of width 16, "
                    "5,000 training / 1,000 validation / 2,000 test images of real CIFAR-10, 8 epochs",
        arch="small", width=16, epochs=8, milestones=(5, 7), adv_epochs=3, adv_milestones=(2,),
        batch_size=128, max_train=5000, max_val=1000, max_test=2000, max_batches_per_epoch=None,
        attack_samples=500, pgd_steps=(10, 20), simba_samples=50, simba_iters=1024,
        noise_rates=(0.2, 0.8), fractions=(0.1, 0.3, 0.7), datasets=("cifar10",),
        convergence_archs=("small",), robust_norms=("none", "bn", "convnorm", "convnorm+bn"),
        runtime_steps=5, reduced=True,
    ),
    "short-schedule": replace(
        _PAPER, name="short-schedule",
        description="the paper's networks, data and optimizer on one GPU with a compressed schedule: "
                    "ResNet18/VGG16, 45k/5k/10k, 16 epochs (lr /10 at 8, 12), batch 128, PGD-10/20, "
                    "SimBA 1,000 images x 3,072 iterations",
        epochs=16, milestones=(8, 12), adv_epochs=8, adv_milestones=(4, 6), datasets=("cifar10",), reduced=True,
    ),
    "paper": _PAPER,
}


def smoke_form(preset: Preset) -> Preset:
    """``preset`` shrunk to seconds: its networks (at width 4), its experiments' structure
    (one noise rate, one fraction), on 200 training images and 2 minibatches an epoch, so
    a test can run a protocol's whole code path on a CPU. Its numbers mean nothing."""
    return replace(preset, name=f"{preset.name}-smoke", description=f"seconds: the code path of {preset.name} on "
                   "200 images, width 4, 2 minibatches per epoch; the numbers mean nothing",
                   width=4, epochs=2, milestones=(1,), adv_epochs=1, adv_milestones=(), batch_size=50,
                   max_train=200, max_val=100, max_test=100, max_batches_per_epoch=2, attack_samples=20,
                   pgd_steps=(2,), simba_samples=4, simba_iters=12, noise_rates=preset.noise_rates[:1],
                   fractions=preset.fractions[:1], runtime_steps=2, reduced=True)


PRESETS["short-schedule-smoke"] = smoke_form(PRESETS["short-schedule"])


def get_preset(name: str) -> Preset:
    if name not in PRESETS:
        raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {name!r}")
    return PRESETS[name]


def _count(value: int | None, full: str) -> str:
    return full if value is None else f"{value:,}"


def protocol_deviations(name: str) -> list[dict[str, str]]:
    """Every setting in which preset ``name`` differs from the paper's protocol, and the
    settings the paper leaves open that this package takes from the authors' code.

    Each row: ``setting``, ``paper`` (what the paper states, or "not stated"), ``here``
    (what preset ``name`` does) and ``source`` of the value used here: ``"paper"``,
    ``"authors' code"`` or ``"this book"`` (a compression or a choice of ours).
    """
    p, ref = get_preset(name), PRESETS["paper"]
    rows = []

    def row(setting, paper, here, source):
        rows.append({"setting": setting, "paper": paper, "here": here, "source": source})

    if p.arch is not None:
        row("network", "ResNet18 (VGG16 in the convergence study)", f"{p.arch} net of width {p.width}",
            "this book")
    if (p.epochs, p.milestones) != (ref.epochs, ref.milestones):
        row("schedule (CIFAR-10)", "120 epochs, lr / 10 at 40 and 80",
            f"{p.epochs} epochs, lr / 10 at " + " and ".join(map(str, p.milestones)), "this book")
    row("free adversarial training", "not stated",
        f"{p.adv_epochs} epochs of 4 replays, lr / 10 at " + " and ".join(map(str, p.adv_milestones))
        + ("" if p.adv_epochs == ref.adv_epochs else " (authors' code: 30 epochs, at 10 and 20)"),
        "authors' code" if p.adv_epochs == ref.adv_epochs else "this book")
    row("batch size", "not stated", str(p.batch_size), "authors' code")
    row("PGD step size and start", "not stated", "2/255, random start in the ε-ball", "authors' code")
    row("data-scarcity subsets", "not stated", "class-balanced random subsets", "authors' code")
    row("label noise", "symmetric, rate r", "symmetric: a flipped label is uniform over all classes, "
        "so about 9/10 of r of the labels change (CIFAR-10)", "paper")
    if p.max_train is not None:
        row("training images", "45,000 (10% of 50,000 held out)", f"{p.max_train:,} (class-balanced)",
            "this book")
    if p.max_val is not None or p.max_test is not None:
        row("validation / test images", "5,000 / 10,000",
            f"{_count(p.max_val, '5,000')} / {_count(p.max_test, '10,000')}", "this book")
    if p.noise_rates != ref.noise_rates:
        row("label-noise rates", "0.2, 0.4, 0.6, 0.8", ", ".join(f"{r:g}" for r in p.noise_rates), "this book")
    if p.fractions != ref.fractions:
        row("training fractions (scarcity)", "0.1, 0.3, 0.5, 0.7", ", ".join(f"{f:g}" for f in p.fractions),
            "this book")
    if p.simba_samples != ref.simba_samples or p.simba_iters is not None:
        row("SimBA", "1,000 images, 3,072 iterations",
            f"{p.simba_samples:,} images, {_count(p.simba_iters, '3,072')} iterations", "this book")
    if p.attack_samples is not None:
        row("PGD/FGSM test images", "10,000", f"{p.attack_samples:,}", "this book")
    row("CIFAR-100, ImageNet, GANs", "reported", "not run (only a CIFAR-10 copy is at hand)", "this book")
    row("CIFAR-10 copy", "the official files", "a lossy JPEG copy (quality 75) unless the official "
        "archive is found; absolute accuracies are not comparable with the paper's", "this book")
    return rows
