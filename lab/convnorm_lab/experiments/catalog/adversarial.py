"""The paper's Table 1: free adversarial training, then accuracy clean and under FGSM and
PGD-k attacks."""
from __future__ import annotations

import torch

from ...attacks import attack_accuracy, fgsm, pgd
from ...data import BatchLoader
from ...models.normalizations import BN, CONVNORM_BN, OCNN_BN, ONI_BN, SN_BN
from ...training import Trainer
from ..context import Analysis, Context, analysed
from ..experiment import Experiment, count, networks_in_words, training_images
from ..presets import PRESETS, Preset
from ..schema import CONFIG, Measure, ResultSchema, method_names

#: the methods, BatchNorm following each (so that each differs from BN in its normalization alone)
METHODS = (SN_BN, BN, ONI_BN, OCNN_BN, CONVNORM_BN)


def conduct(ctx: Context) -> dict:
    """Free adversarial training (m = 4, ε = 8/255) of each method, each then attacked on
    a seeded random subset of the test set (the JPEG copy stores it grouped by class)."""
    splits = ctx.splits()
    test_images, test_labels = splits.test
    chosen = torch.randperm(len(test_labels), generator=torch.Generator().manual_seed(ctx.seed))
    chosen = chosen[: ctx.preset.attack_samples]

    def attack(trainer: Trainer, record: dict) -> None:
        if record["diverged"]:
            return
        model = trainer.model
        loader = BatchLoader(test_images[chosen], test_labels[chosen], 250, device=ctx.device)
        gen = torch.Generator().manual_seed(ctx.seed)
        record["robust"] = {"clean": attack_accuracy(model, loader), "fgsm": attack_accuracy(model, loader, fgsm)}
        for k in ctx.preset.pgd_steps:
            step = lambda m, x, y, k=k: pgd(m, x, y, steps=k, generator=gen)  # noqa: E731
            record["robust"][f"pgd{k}"] = attack_accuracy(model, loader, step)
        record["robust"]["n_test"] = len(chosen)

    analysis = Analysis({"attack_samples": ctx.preset.attack_samples, "pgd_steps": ctx.preset.pgd_steps}, attack)
    return analysed(ctx, (BN, SN_BN, ONI_BN, OCNN_BN, CONVNORM_BN), splits, analysis, adversarial=True)


def describe(preset: Preset) -> str:
    tested = 10_000 if preset.attack_samples is None else preset.attack_samples
    return (f"{networks_in_words(preset)}, {count(training_images(preset), 'training image')}, "
            f"{count(preset.adv_epochs, 'epoch')} of free adversarial training, {count(tested, 'test image')}")


EXPERIMENT = Experiment(
    "adversarial", "free adversarial training, then clean/FGSM/PGD accuracy (bn, sn, oni, ocnn, convnorm)", conduct,
    ResultSchema(
        methods=METHODS, paper_names=method_names(METHODS),
        measures=(Measure("clean", ("robust", "clean"), "clean accuracy", percent=True, paper="clean"),
                  Measure("fgsm", ("robust", "fgsm"), "accuracy under FGSM", percent=True, paper="fgsm"),
                  Measure("pgd{}", ("robust", "pgd{}"), "accuracy under PGD-{}", percent=True, paper="pgd{}",
                          each="pgd_steps")),
        details=CONFIG + (("robust", "n_test"), ("ocnn_lambda",)), paper_table="adversarial",
        layout=("measure", "method")),
    title="Accuracy (%) after free adversarial training, clean and under attack", describe=describe,
    paper_protocol=(f"ResNet18, {count(45_000, 'training image')}, free adversarial training (length not stated; "
                    f"the authors' code: {count(PRESETS['paper'].adv_epochs, 'epoch')}), 10,000 test images"),
    # the differences between methods are fractions of a point: with the paper's spread of such
    # a difference (about 0.7 points), 5 seeds give a 95 % t-interval of about ±1 point (4: ±1.1)
    seeds=5)
