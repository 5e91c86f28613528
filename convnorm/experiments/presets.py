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
* ``paper``: the paper's protocol, for a GPU: ResNet18 (and VGG16 where the paper uses
  it), the full 45,000/5,000 train/validation split, 120 epochs (CIFAR-100: 150) with
  the learning rate divided by 10 at epochs 40 and 80 (60 and 120), batch 128, full test
  set, PGD-10/20, SimBA on 1,000 images for 3,072 iterations.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass


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
    "paper": Preset(
        name="paper",
        description="the paper's protocol (GPU): ResNet18/VGG16, 45k/5k split, 120 epochs (CIFAR-100: 150), "
                    "batch 128, full test set, PGD-10/20, SimBA 1,000 images x 3,072 iterations",
        arch=None, width=None, epochs=120, milestones=(40, 80), adv_epochs=30, adv_milestones=(10, 20),
        batch_size=128, max_train=None, max_val=None, max_test=None, max_batches_per_epoch=None,
        attack_samples=None, pgd_steps=(10, 20), simba_samples=1000, simba_iters=None,
        noise_rates=(0.2, 0.4, 0.6, 0.8), fractions=(0.1, 0.3, 0.5, 0.7), datasets=("cifar10", "cifar100"),
        convergence_archs=("vgg16", "resnet18"), robust_norms=_ALL_ROBUST, runtime_steps=50, reduced=False,
    ),
}


def get_preset(name: str) -> Preset:
    if name not in PRESETS:
        raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {name!r}")
    return PRESETS[name]
